"""cell counts: participants per between-subject cell, kept by entry and consent

Revision ID: 5d0e6c1f2a47
Revises: c2b310d0f898
Create Date: 2026-11-22 22:40:00

"""
from collections import Counter

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '5d0e6c1f2a47'
down_revision = 'c2b310d0f898'
branch_labels = None
depends_on = None


def upgrade():
    cell_count = op.create_table('cell_count',
    sa.Column('experiment_id', sa.Integer(), nullable=False),
    sa.Column('cell', sa.String(length=80), nullable=False),
    sa.Column('participants', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['experiment_id'], ['experiment.id'], ),
    sa.PrimaryKeyConstraint('experiment_id', 'cell')
    )
    # Count the sessions already stored, as entry and consent count them from now on.
    subject = sa.table('subject', sa.column('id'), sa.column('experiment_id'), sa.column('kind'))
    session = sa.table('session', sa.column('subject_id'), sa.column('session_number'),
                       sa.column('status'), sa.column('condition', sa.JSON()))
    rows = op.get_bind().execute(
        sa.select(subject.c.experiment_id, session.c.condition)
        .join(subject, subject.c.id == session.c.subject_id)
        .where(subject.c.kind == 'human', session.c.session_number == 1,
               session.c.status != 'no_consent'))
    counts = Counter((experiment_id, str((condition or {}).get('cell')))
                     for experiment_id, condition in rows)
    if counts:
        op.bulk_insert(cell_count, [{'experiment_id': experiment_id, 'cell': cell,
                                     'participants': n}
                                    for (experiment_id, cell), n in counts.items()])


def downgrade():
    op.drop_table('cell_count')
