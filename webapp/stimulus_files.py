"""Stimulus files on disk and their opaque URLs: nothing resolves outside the stimulus root."""
from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from flask import current_app, url_for

from experiments.media import frame_file_names


class UnsafePath(ValueError):
    """A stored path that would leave the stimulus root."""


def resolve_under(root: str | Path, relative: str) -> Path:
    """``root / relative`` resolved, refused if it escapes ``root`` (``..``, absolute, links)."""
    root = Path(root).resolve()
    if not relative or Path(relative).is_absolute() or "\x00" in relative:
        raise UnsafePath(f"refusing path {relative!r}")
    path = (root / relative).resolve()
    if not path.is_relative_to(root):
        raise UnsafePath(f"refusing path {relative!r}: outside the stimulus root")
    return path


def frame_key(public_id: str, index: int) -> str:
    """An opaque key for frame ``index`` (temporal position) of a frame set.

    Keyed with the app secret so a URL never tells which frame comes first.
    """
    secret = current_app.config["SECRET_KEY"].encode()
    return hmac.new(secret, f"frame:{public_id}:{index}".encode(), hashlib.sha256).hexdigest()[:24]


def frame_index(public_id: str, key: str, n_frames: int) -> int | None:
    for index in range(n_frames):
        if hmac.compare_digest(frame_key(public_id, index), key):
            return index
    return None


def clip_url(public_id: str) -> str:
    return url_for("media.clip", public_id=public_id)


def frame_urls(public_id: str, indices: list[int]) -> list[str]:
    return [url_for("media.frame", public_id=public_id, key=frame_key(public_id, i)) for i in indices]


def frame_path(root: str | Path, stimulus_path: str, meta: dict, n_frames: int, index: int) -> Path:
    names = meta.get("files") or frame_file_names(n_frames)
    return resolve_under(root, f"{stimulus_path.rstrip('/')}/{names[index]}")
