"""study: one word for a study, in the schema as in the code (the table ``experiment`` and
its ``experiment_id`` columns become ``study`` and ``study_id``)

Revision ID: 9b3f5e2d8c14
Revises: 7e1a0c5b9d21
Create Date: 2026-11-24 08:40:00

Plain renames: every row, key and reference is kept (SQLite >= 3.26 and PostgreSQL both
carry foreign keys and indexes over to the new names).  PostgreSQL named its constraints and
the id sequence after the old names; they are renamed too, so that a migrated database and
one created from the models are the same.
"""
from alembic import op

# revision identifiers, used by Alembic.
revision = '9b3f5e2d8c14'
down_revision = '7e1a0c5b9d21'
branch_labels = None
depends_on = None

REFERRING = ('subject', 'cell_count', 'study_member')
# PostgreSQL's names for what the renames leave behind (its default naming: table_column_kind).
POSTGRES_NAMES = (
    ('CONSTRAINT', 'study', 'experiment_pkey', 'study_pkey'),
    ('CONSTRAINT', 'study', 'experiment_slug_key', 'study_slug_key'),
    ('CONSTRAINT', 'subject', 'subject_experiment_id_fkey', 'subject_study_id_fkey'),
    ('CONSTRAINT', 'subject', 'subject_experiment_id_kind_external_id_key',
     'subject_study_id_kind_external_id_key'),
    ('CONSTRAINT', 'cell_count', 'cell_count_experiment_id_fkey', 'cell_count_study_id_fkey'),
    ('CONSTRAINT', 'study_member', 'study_member_experiment_id_fkey',
     'study_member_study_id_fkey'),
    ('SEQUENCE', None, 'experiment_id_seq', 'study_id_seq'),
)


def _rename_postgres_names(new_to_old: bool) -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    for kind, table, old, new in POSTGRES_NAMES:
        before, after = (new, old) if new_to_old else (old, new)
        if kind == 'SEQUENCE':
            op.execute(f'ALTER SEQUENCE IF EXISTS {before} RENAME TO {after}')
        else:
            op.execute(f'ALTER TABLE {table} RENAME CONSTRAINT {before} TO {after}')


def upgrade():
    op.rename_table('experiment', 'study')
    for table in REFERRING:
        op.execute(f'ALTER TABLE {table} RENAME COLUMN experiment_id TO study_id')
    op.drop_index('ix_subject_experiment_id', table_name='subject')
    op.create_index('ix_subject_study_id', 'subject', ['study_id'], unique=False)
    _rename_postgres_names(new_to_old=False)


def downgrade():
    _rename_postgres_names(new_to_old=True)
    op.drop_index('ix_subject_study_id', table_name='subject')
    for table in REFERRING:
        op.execute(f'ALTER TABLE {table} RENAME COLUMN study_id TO experiment_id')
    op.create_index('ix_subject_experiment_id', 'subject', ['experiment_id'], unique=False)
    op.rename_table('study', 'experiment')
