"""manual exclusion: a researcher's exclude/reinstate rules, appended and never changed

Revision ID: e5b8a1c3d702
Revises: a4c7d2e9f310
Create Date: 2026-11-26 09:00:00

A new table only: trial and session rows are left as they are (the latest rule of a
participant is applied when the study is read).
"""
import sqlalchemy as sa
from alembic import op

import webapp.models._types

# revision identifiers, used by Alembic.
revision = 'e5b8a1c3d702'
down_revision = 'a4c7d2e9f310'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('manual_exclusion',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('study_id', sa.Integer(), nullable=False),
    sa.Column('subject_id', sa.Integer(), nullable=False),
    sa.Column('sequence', sa.Integer(), nullable=False),
    sa.Column('action', sa.String(length=10), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('researcher', sa.String(length=80), nullable=False),
    sa.Column('created_at', webapp.models._types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['study_id'], ['study.id'], ),
    sa.ForeignKeyConstraint(['subject_id'], ['subject.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('study_id', 'sequence')
    )
    with op.batch_alter_table('manual_exclusion', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_manual_exclusion_study_id'), ['study_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_manual_exclusion_subject_id'), ['subject_id'], unique=False)


def downgrade():
    with op.batch_alter_table('manual_exclusion', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_manual_exclusion_subject_id'))
        batch_op.drop_index(batch_op.f('ix_manual_exclusion_study_id'))
    op.drop_table('manual_exclusion')
