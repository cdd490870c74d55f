"""Stimulus files by opaque id: clips with Range support, frames of frame sets.

Only public ids stored in the database resolve, and the stored path is resolved under
STIMULUS_ROOT and refused if it would leave it, even if a bad row held "..".
"""
from flask import Blueprint, abort, current_app, send_file
from sqlalchemy import select

from webapp.extensions import db
from webapp.models import Stimulus
from webapp.stimulus_files import UnsafePath, frame_index, frame_path, resolve_under

bp = Blueprint("media", __name__, url_prefix="/media")

MAX_AGE_S = 3600


def _stimulus(public_id: str, kind: str) -> Stimulus:
    if len(public_id) > 40:
        abort(404)
    stimulus = db.session.scalar(select(Stimulus).where(Stimulus.public_id == public_id))
    if stimulus is None or stimulus.kind != kind:
        abort(404)
    return stimulus


def _send(path, mimetype: str | None = None):
    if not path.is_file():
        abort(404)
    response = send_file(path, mimetype=mimetype, conditional=True, etag=True, max_age=MAX_AGE_S)
    response.headers["Cache-Control"] = f"private, max-age={MAX_AGE_S}"
    response.headers["Cross-Origin-Resource-Policy"] = "same-origin"
    return response


@bp.get("/<public_id>")
def clip(public_id):
    stimulus = _stimulus(public_id, "clip")
    try:
        path = resolve_under(current_app.config["STIMULUS_ROOT"], stimulus.path)
    except UnsafePath:
        abort(404)
    return _send(path, "video/mp4")


@bp.get("/<public_id>/<key>")
def frame(public_id, key):
    stimulus = _stimulus(public_id, "frame_set")
    n_frames = len(stimulus.frame_indices or [])
    index = frame_index(public_id, key, n_frames) if len(key) <= 64 else None
    if index is None:
        abort(404)
    try:
        path = frame_path(current_app.config["STIMULUS_ROOT"], stimulus.path,
                          stimulus.meta or {}, n_frames, index)
    except (UnsafePath, IndexError):
        abort(404)
    return _send(path, "image/png")
