"""resume keys: a participant's entry link resumes only in the browser holding their key;
researchers' single-use resume links, kept as the audit trail

Revision ID: d3f8a2b6c419
Revises: b7d4e1f0a925
Create Date: 2026-11-28 09:40:00

Subjects entered before this revision have no key: their entry link no longer opens their
session by id alone; a researcher's resume link gives their browser one.
"""
import sqlalchemy as sa
from alembic import op

import webapp.models._types

# revision identifiers, used by Alembic.
revision = 'd3f8a2b6c419'
down_revision = 'b7d4e1f0a925'
branch_labels = None
depends_on = None


def upgrade():
    # Plain ALTER TABLE ... ADD COLUMN: a batch rebuild would drop a table that stored rows
    # still reference.
    op.add_column('subject', sa.Column('resume_key_hash', sa.String(length=64), nullable=True))
    op.create_table('resume_link',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('study_id', sa.Integer(), nullable=False),
    sa.Column('subject_id', sa.Integer(), nullable=False),
    sa.Column('code_hash', sa.String(length=64), nullable=False),
    sa.Column('issued_by', sa.String(length=80), nullable=False),
    sa.Column('created_at', webapp.models._types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', webapp.models._types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('used_at', webapp.models._types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['study_id'], ['study.id'], ),
    sa.ForeignKeyConstraint(['subject_id'], ['subject.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('code_hash')
    )
    with op.batch_alter_table('resume_link', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_resume_link_study_id'), ['study_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_resume_link_subject_id'), ['subject_id'], unique=False)


def downgrade():
    with op.batch_alter_table('resume_link', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_resume_link_subject_id'))
        batch_op.drop_index(batch_op.f('ix_resume_link_study_id'))
    op.drop_table('resume_link')
    op.drop_column('subject', 'resume_key_hash')  # plain DROP COLUMN (SQLite 3.35+), as above
