"""rate limit counter: shared rate-limit counts when no Redis is configured

Revision ID: 3c9e7a2b5d10
Revises: d3f8a2b6c419
Create Date: 2026-11-28 10:00:00

A new table only; its rows live for two windows of a limit at most.
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '3c9e7a2b5d10'
down_revision = 'd3f8a2b6c419'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('rate_limit_counter',
    sa.Column('key', sa.String(length=120), nullable=False),
    sa.Column('hits', sa.Integer(), nullable=False),
    sa.Column('expires_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    with op.batch_alter_table('rate_limit_counter', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rate_limit_counter_expires_at'), ['expires_at'],
                              unique=False)


def downgrade():
    with op.batch_alter_table('rate_limit_counter', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rate_limit_counter_expires_at'))
    op.drop_table('rate_limit_counter')
