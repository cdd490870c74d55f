"""frame-order direction: frame-ordering rows have no playback direction

Revision ID: f1a2b3c4d5e6
Revises: e5b8a1c3d702
Create Date: 2026-11-24 09:10:00

Before this release people's frame-ordering rows stored direction "forward" and models'
stored none, while the codebook said the cell is empty.  Both are empty now; this brings
the rows stored before into line (the frames' true order is in correct_response, so nothing
is lost).  The downgrade gives people's rows their old "forward" back.
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'f1a2b3c4d5e6'
down_revision = 'e5b8a1c3d702'
branch_labels = None
depends_on = None

trial = sa.table('trial', sa.column('trial_type'), sa.column('direction'),
                 sa.column('session_id'))
session = sa.table('session', sa.column('id'), sa.column('subject_id'))
subject = sa.table('subject', sa.column('id'), sa.column('kind'))


def upgrade():
    op.execute(trial.update().where(trial.c.trial_type == 'frame_order')
               .values(direction=None))


def downgrade():
    human_sessions = (sa.select(session.c.id).join(subject, subject.c.id == session.c.subject_id)
                      .where(subject.c.kind == 'human'))
    op.execute(trial.update().where(trial.c.trial_type == 'frame_order',
                                    trial.c.session_id.in_(human_sessions))
               .values(direction='forward'))
