"""model_run.ledger: a run's tokens (in, out, reasoning), seconds and, with a price file, cost

Revision ID: c5e7a9b1d3f2
Revises: d8e2f4a6b1c3
Create Date: 2026-11-28 16:30:00

Each item's own ledger is in its trial's ``extra`` (``analysis.columns.LEDGER_FIELDS``); runs
stored before the column existed have an empty ledger.
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'c5e7a9b1d3f2'
down_revision = 'd8e2f4a6b1c3'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(sa.JSON(none_as_null=True), 'postgresql')


def upgrade():
    with op.batch_alter_table('model_run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('ledger', JSON, nullable=True))


def downgrade():
    with op.batch_alter_table('model_run', schema=None) as batch_op:
        batch_op.drop_column('ledger')
