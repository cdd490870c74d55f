"""model run: a model run's provenance in its own table, beside the session of its trials

Revision ID: a4c7d2e9f310
Revises: 9b3f5e2d8c14
Create Date: 2026-11-25 09:00:00

Model sessions used to keep their run's manifest in ``session.device_info`` and the item
keys asked of them in ``session.schedule``, fields meant for people.  Both move into
``model_run`` (one row per model session) and are emptied on the session: the typed columns
are read from the manifest, and ``manifest`` keeps the whole of it (status, host, cache,
row count, every config field), so the downgrade puts back exactly what was there.
"""
import sqlalchemy as sa
from alembic import op

import webapp.models._types

# revision identifiers, used by Alembic.
revision = 'a4c7d2e9f310'
down_revision = '9b3f5e2d8c14'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(sa.JSON(none_as_null=True), 'postgresql')
SUBJECT = sa.table('subject', sa.column('id'), sa.column('kind'), sa.column('external_id'))
SESSION = sa.table('session', sa.column('id'), sa.column('subject_id'),
                   sa.column('started_at', webapp.models._types.UTCDateTime()),
                   sa.column('last_seen_at', webapp.models._types.UTCDateTime()),
                   sa.column('device_info', JSON), sa.column('schedule', JSON))


def upgrade():
    model_run = op.create_table('model_run',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('session_id', sa.Integer(), nullable=False),
    sa.Column('run_key', sa.String(length=64), nullable=False),
    sa.Column('model', sa.String(length=400), nullable=False),
    sa.Column('revision', sa.String(length=200), nullable=True),
    sa.Column('backend', JSON, nullable=False),
    sa.Column('weights_sha256', sa.Text(), nullable=True),
    sa.Column('params', JSON, nullable=False),
    sa.Column('sampling', JSON, nullable=False),
    sa.Column('task', JSON, nullable=False),
    sa.Column('scoring', sa.String(length=20), nullable=True),
    sa.Column('timing', JSON, nullable=False),
    sa.Column('counts', JSON, nullable=False),
    sa.Column('failures', JSON, nullable=False),
    sa.Column('item_keys', JSON, nullable=False),
    sa.Column('run_id', sa.String(length=40), nullable=True),
    sa.Column('git_commit', sa.String(length=40), nullable=True),
    sa.Column('manifest', JSON, nullable=False),
    sa.Column('created_at', webapp.models._types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', webapp.models._types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['session.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('session_id')
    )
    with op.batch_alter_table('model_run', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_model_run_run_key'), ['run_key'], unique=False)

    bind = op.get_bind()
    sessions = bind.execute(
        sa.select(SESSION, SUBJECT.c.external_id).join(SUBJECT, SUBJECT.c.id == SESSION.c.subject_id)
        .where(SUBJECT.c.kind == 'model')).all()
    if sessions:
        op.bulk_insert(model_run, [_model_run(row) for row in sessions])
        bind.execute(SESSION.update().where(SESSION.c.id.in_([row.id for row in sessions]))
                     .values(device_info={}, schedule=[]))


def _model_run(session) -> dict:
    """A model_run row from the manifest a model session kept in ``device_info``."""
    info = dict(session.device_info or {})
    config, backend = info.get('config') or {}, info.get('backend') or {}
    spec = config.get('spec') or {}
    weights = backend.get('weights_sha256')
    revision = backend.get('revision') or (str(weights)[:12] if weights else None)
    timing = {**(info.get('timing') or {}),
              **{k: info[k] for k in ('started_at', 'finished_at') if k in info}}
    return {'session_id': session.id,
            # A session stored before runs had keys is a run no new one can continue.
            'run_key': info.get('run_key') or f'unkeyed-session-{session.id}',
            'model': config.get('model') or backend.get('model') or session.external_id,
            'revision': revision, 'backend': backend, 'weights_sha256': weights,
            'params': config.get('params') or {},
            'sampling': {k: spec.get(k) for k in ('fps', 'n_frames', 'metadata_fps')},
            'task': spec, 'scoring': config.get('scoring'), 'timing': timing,
            'counts': info.get('counts') or {}, 'failures': info.get('failures') or [],
            'item_keys': list(session.schedule or []), 'run_id': info.get('run_id'),
            'git_commit': info.get('git_commit'), 'manifest': info,
            'created_at': session.started_at,
            'updated_at': session.last_seen_at}


def downgrade():
    model_run = sa.table('model_run', *(sa.column(name) for name in (
        'session_id', 'run_key', 'model', 'revision', 'weights_sha256', 'scoring', 'run_id',
        'git_commit')), *(sa.column(name, JSON) for name in (
            'backend', 'params', 'task', 'timing', 'counts', 'failures', 'item_keys',
            'manifest')))
    bind = op.get_bind()
    for run in bind.execute(sa.select(model_run)).all():
        # The manifest as the run wrote it; a run whose manifest was never kept gets what
        # its typed columns hold.
        info = run.manifest or {
            'run_key': run.run_key, 'run_id': run.run_id, 'git_commit': run.git_commit,
            'backend': run.backend, 'counts': run.counts, 'failures': run.failures,
            'timing': run.timing,
            'config': {'model': run.model, 'spec': run.task, 'params': run.params,
                       'scoring': run.scoring}}
        bind.execute(SESSION.update().where(SESSION.c.id == run.session_id)
                     .values(device_info=info, schedule=run.item_keys))
    with op.batch_alter_table('model_run', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_model_run_run_key'))
    op.drop_table('model_run')
