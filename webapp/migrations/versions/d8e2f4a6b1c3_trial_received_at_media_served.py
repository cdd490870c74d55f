"""plausibility: each trial's server receive time, and when each position's media was served

Revision ID: d8e2f4a6b1c3
Revises: 3c9e7a2b5d10
Create Date: 2026-11-28 10:00:00

``trial.received_at`` is empty for trials stored before it existed (the plausibility rules
then skip the rules that need it); ``media_served`` starts empty.
"""
import sqlalchemy as sa
from alembic import op

import webapp.models._types

# revision identifiers, used by Alembic.
revision = 'd8e2f4a6b1c3'
down_revision = '3c9e7a2b5d10'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('trial', schema=None) as batch_op:
        batch_op.add_column(sa.Column('received_at', webapp.models._types.UTCDateTime(timezone=True),
                                      nullable=True))
    op.create_table('media_served',
    sa.Column('session_id', sa.Integer(), nullable=False),
    sa.Column('trial_index', sa.Integer(), nullable=False),
    sa.Column('served_at', webapp.models._types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['session.id'], ),
    sa.PrimaryKeyConstraint('session_id', 'trial_index')
    )


def downgrade():
    op.drop_table('media_served')
    with op.batch_alter_table('trial', schema=None) as batch_op:
        batch_op.drop_column('received_at')
