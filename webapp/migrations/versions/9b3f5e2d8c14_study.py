"""study: one word for a study, in the schema as in the code (the table ``experiment`` and
its ``experiment_id`` columns become ``study`` and ``study_id``)

Revision ID: 9b3f5e2d8c14
Revises: 7e1a0c5b9d21
Create Date: 2026-11-24 08:40:00

Plain renames: every row, key and reference is kept (SQLite >= 3.26 and PostgreSQL both
carry foreign keys and indexes over to the new names).
"""
from alembic import op


# revision identifiers, used by Alembic.
revision = '9b3f5e2d8c14'
down_revision = '7e1a0c5b9d21'
branch_labels = None
depends_on = None

REFERRING = ('subject', 'cell_count', 'study_member')


def upgrade():
    op.rename_table('experiment', 'study')
    for table in REFERRING:
        op.execute(f'ALTER TABLE {table} RENAME COLUMN experiment_id TO study_id')
    op.drop_index('ix_subject_experiment_id', table_name='subject')
    op.create_index('ix_subject_study_id', 'subject', ['study_id'], unique=False)


def downgrade():
    op.drop_index('ix_subject_study_id', table_name='subject')
    for table in REFERRING:
        op.execute(f'ALTER TABLE {table} RENAME COLUMN study_id TO experiment_id')
    op.create_index('ix_subject_experiment_id', 'subject', ['experiment_id'], unique=False)
    op.rename_table('study', 'experiment')
