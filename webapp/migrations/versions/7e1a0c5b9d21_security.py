"""security: study members with roles, admins, sign-in epochs, close modes, places, simulated
sessions and the browser tab that holds a session

Revision ID: 7e1a0c5b9d21
Revises: 5d0e6c1f2a47
Create Date: 2026-11-24 03:20:00

Every study gets an owner from now on.  Before, every researcher could see and change every
study; so that nobody loses a study they worked on, each existing researcher becomes an owner
of each existing study (``manage.py study unshare`` narrows that).  Studies closed before
close modes existed let their participants finish, so they read ``finish``.
"""
from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '7e1a0c5b9d21'
down_revision = '5d0e6c1f2a47'
branch_labels = None
depends_on = None


def upgrade():
    study_member = op.create_table('study_member',
    sa.Column('experiment_id', sa.Integer(), nullable=False),
    sa.Column('researcher_id', sa.Integer(), nullable=False),
    sa.Column('role', sa.String(length=10), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['experiment_id'], ['experiment.id'], ),
    sa.ForeignKeyConstraint(['researcher_id'], ['researcher.id'], ),
    sa.PrimaryKeyConstraint('experiment_id', 'researcher_id')
    )
    with op.batch_alter_table('study_member', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_study_member_researcher_id'), ['researcher_id'],
                              unique=False)
    with op.batch_alter_table('researcher', schema=None) as batch_op:
        batch_op.add_column(sa.Column('is_admin', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))
        batch_op.add_column(sa.Column('auth_epoch', sa.Integer(), server_default='0',
                                      nullable=False))
    with op.batch_alter_table('experiment', schema=None) as batch_op:
        batch_op.add_column(sa.Column('close_mode', sa.String(length=10), nullable=True))
        batch_op.add_column(sa.Column('max_participants', sa.Integer(), nullable=True))
    with op.batch_alter_table('session', schema=None) as batch_op:
        batch_op.add_column(sa.Column('simulated', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))
        batch_op.add_column(sa.Column('active_client', sa.String(length=64), nullable=True))

    experiment = sa.table('experiment', sa.column('id'), sa.column('status'),
                          sa.column('close_mode'))
    researcher = sa.table('researcher', sa.column('id'))
    bind = op.get_bind()
    bind.execute(experiment.update().where(experiment.c.status == 'closed')
                 .values(close_mode='finish'))
    pairs = bind.execute(sa.select(experiment.c.id, researcher.c.id)
                         .join_from(experiment, researcher, sa.true())).all()
    stamp = datetime.now(timezone.utc)
    if pairs:
        op.bulk_insert(study_member, [{'experiment_id': e, 'researcher_id': r, 'role': 'owner',
                                       'created_at': stamp} for e, r in pairs])


def downgrade():
    # Plain ALTER TABLE ... DROP COLUMN (SQLite 3.35+): a batch rebuild of these tables would
    # drop tables that stored rows still reference.
    for table, column in (('session', 'active_client'), ('session', 'simulated'),
                          ('experiment', 'max_participants'), ('experiment', 'close_mode'),
                          ('researcher', 'auth_epoch'), ('researcher', 'is_admin')):
        op.drop_column(table, column)
    op.drop_index(op.f('ix_study_member_researcher_id'), table_name='study_member')
    op.drop_table('study_member')
