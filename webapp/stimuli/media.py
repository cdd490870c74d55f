"""Stimulus files by session, trial and presented slot, with Range support.

A response depends only on the file's bytes: no ETag or Last-Modified (Werkzeug's defaults
hash the modification time and the file's path, and the files are written and named in time
order and by direction), no file name, and the same lookups for every trial, so nothing but
what the participant is meant to see can tell one answer from another (SECURITY.md).  A
video is the session's own file of its trial, at the session's one video size
(webapp.stimuli.presentations): a catch trial's bytes and size are no label either.
"""
import os

from flask import Blueprint, abort, current_app, request
from sqlalchemy import Row
from werkzeug.exceptions import RequestedRangeNotSatisfiable
from werkzeug.wsgi import wrap_file

from experiments import adaptive_schedule
from experiments.verdict import ENDED
from webapp.database import write_transaction
from webapp.extensions import db
from webapp.participant import adaptive, sessions, store
from webapp.stimuli import presentations
from webapp.stimuli.files import UnsafePath, frame_path
from webapp.stimuli.presentations import PaddedVideo

bp = Blueprint("media", __name__, url_prefix="/media/<token>/<int:trial_index>")

MAX_AGE_S = 3600


def _scheduled(connection, token: str, trial_index: int) -> tuple[Row, dict, object]:
    """The session, the scheduled trial and its stimulus row, or 404; notes the first time a
    position's media is served (the plausibility rules compare it with the trial's
    arrival)."""
    session = sessions.session_by_token(connection, token)
    if session is None:
        abort(404)
    trial = session.schedule[trial_index] if trial_index < len(session.schedule) else None
    if trial is None or trial["trial_index"] != trial_index or adaptive_schedule.skipped(trial):
        abort(404)  # a skipped slot (its sweep stopped early) is never served
    adaptive.check_turn(connection, session, trial_index)
    if adaptive_schedule.pending(trial):  # its level is chosen now, from the stored answers
        session = adaptive.with_level(connection, session, trial_index)
        trial = session.schedule[trial_index]
    stimulus = store.stimulus_file(connection, trial["stimulus_id"])
    if stimulus is None:
        abort(404)
    with write_transaction(connection):
        store.record_media_served(connection, session.id, trial_index)
    return session, trial, stimulus


def _send(path, mimetype: str, size: int | None = None):
    """``path`` as it is, or with ``size``, as a video padded to that size."""
    try:
        handle = open(path, "rb") if size is None else PaddedVideo(path, size)
    except (OSError, ValueError):
        abort(404)
    size = handle.size if isinstance(handle, PaddedVideo) else os.fstat(handle.fileno()).st_size
    # Werkzeug types the file as IO[bytes]; it only reads, seeks and closes it.
    body = wrap_file(request.environ, handle)  # type: ignore[arg-type]
    response = current_app.response_class(body, mimetype=mimetype, direct_passthrough=True)
    response.content_length = size
    response.headers["Cache-Control"] = f"private, max-age={MAX_AGE_S}"
    response.headers["Cross-Origin-Resource-Policy"] = "same-origin"
    try:
        return response.make_conditional(request.environ, accept_ranges=True, complete_length=size)
    except RequestedRangeNotSatisfiable:
        handle.close()
        raise


@bp.get("")
def clip(token, trial_index):
    with db.engine.connect() as connection:
        session, _, _ = _scheduled(connection, token, trial_index)
        if session.status in ENDED:  # it shows no more videos: none is made again
            presentations.discard(token)
            abort(404)
        try:
            files, size = presentations.session_videos(connection, session)
        except (UnsafePath, OSError, ValueError):
            abort(404)
    if trial_index not in files:
        abort(404)
    return _send(files[trial_index], "video/mp4", size)


@bp.get("/<int:slot>")
def frame(token, trial_index, slot):
    with db.engine.connect() as connection:
        _, trial, stimulus = _scheduled(connection, token, trial_index)
    frames = trial.get("frames") or []
    if stimulus.kind != "frame_set" or slot >= len(frames):
        abort(404)
    try:
        path = frame_path(current_app.config["STIMULUS_ROOT"], stimulus.path, stimulus.meta or {},
                          len(stimulus.frame_indices or []), frames[slot])
    except (UnsafePath, IndexError):
        abort(404)
    return _send(path, "image/png")
