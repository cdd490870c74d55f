"""study versions: frozen configurations, the version each session ran, preview sessions

Revision ID: b7d4e1f0a925
Revises: f1a2b3c4d5e6
Create Date: 2026-11-28 10:00:00

A study's configuration is frozen in ``study_version`` when it opens, and every change after
that is a new version; ``session.study_version`` says which one a session ran.  Studies that
are already past draft get their current configuration as version 1, and their sessions are
labelled 1 (the only configuration they can have run since this release keeps versions).
``session.preview`` marks a researcher's preview from the dashboard.
"""
import sqlalchemy as sa
from alembic import op

import webapp.models._types

# revision identifiers, used by Alembic.
revision = 'b7d4e1f0a925'
down_revision = 'f1a2b3c4d5e6'
branch_labels = None
depends_on = None

study = sa.table('study', sa.column('id'), sa.column('status'), sa.column('design_snapshot'),
                 sa.column('stimulus_set'), sa.column('max_participants'),
                 sa.column('created_at'))
session = sa.table('session', sa.column('study_version'))


def upgrade():
    # Plain ALTER TABLE ... ADD COLUMN: a batch rebuild would drop tables that stored rows
    # still reference.
    op.add_column('study', sa.Column('config_version', sa.Integer(), server_default='1',
                                     nullable=False))
    op.create_table('study_version',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('study_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('design_snapshot', webapp.models._types.JSONType, nullable=False),
    sa.Column('stimulus_set', sa.String(length=80), nullable=False),
    sa.Column('max_participants', sa.Integer(), nullable=True),
    sa.Column('created_by', sa.String(length=80), nullable=True),
    sa.Column('created_at', webapp.models._types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['study_id'], ['study.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('study_id', 'version')
    )
    with op.batch_alter_table('study_version', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_study_version_study_id'), ['study_id'], unique=False)
    op.add_column('session', sa.Column('study_version', sa.Integer(), nullable=True))
    op.add_column('session', sa.Column('preview', sa.Boolean(), server_default=sa.false(),
                                       nullable=False))
    versions = sa.table('study_version', sa.column('study_id'), sa.column('version'),
                        sa.column('design_snapshot'), sa.column('stimulus_set'),
                        sa.column('max_participants'), sa.column('created_at'))
    op.execute(versions.insert().from_select(
        ['study_id', 'version', 'design_snapshot', 'stimulus_set', 'max_participants',
         'created_at'],
        sa.select(study.c.id, sa.literal(1), study.c.design_snapshot, study.c.stimulus_set,
                  study.c.max_participants, study.c.created_at)
        .where(study.c.status != 'draft')))
    op.execute(session.update().values(study_version=1))


def downgrade():
    # Plain ALTER TABLE ... DROP COLUMN (SQLite 3.35+): a batch rebuild of these tables would
    # drop tables that stored rows still reference.
    for table, column in (('session', 'preview'), ('session', 'study_version'),
                          ('study', 'config_version')):
        op.drop_column(table, column)
    op.drop_index(op.f('ix_study_version_study_id'), table_name='study_version')
    op.drop_table('study_version')
