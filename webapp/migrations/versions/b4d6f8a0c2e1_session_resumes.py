"""resume bookkeeping: each time a page took a session up again

Revision ID: b4d6f8a0c2e1
Revises: c5e7a9b1d3f2
Create Date: 2026-11-28 16:40:00

``session.resumes`` is empty (null) for sessions stored before it existed.
"""
import sqlalchemy as sa
from alembic import op

import webapp.models._types

# revision identifiers, used by Alembic.
revision = 'b4d6f8a0c2e1'
down_revision = 'c5e7a9b1d3f2'
branch_labels = None
depends_on = None


# Plain ALTER TABLE both ways (DROP COLUMN: SQLite 3.35+): a batch rebuild of the session
# table would drop a table that stored trials still reference.
def upgrade():
    op.add_column('session', sa.Column('resumes', webapp.models._types.JSONType, nullable=True))


def downgrade():
    op.drop_column('session', 'resumes')
