"""Stimulus files on disk and the URLs participants fetch them by; nothing resolves outside the
stimulus root.

A participant's media URL names their session and a trial (and, for frame sets, a presented
slot): positions the schedule already shows, never a stimulus id, a file name or a frame's
place in time, and different for every participant.
"""
from __future__ import annotations

from pathlib import Path

from flask import url_for

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


def media_url_maker(token: str):
    """``media_url(trial_index, slot)`` for the session with ``token`` (slot None: the clip)."""
    def media_url(trial_index: int, slot: int | None) -> str:
        if slot is None:
            return url_for("media.clip", token=token, trial_index=trial_index)
        return url_for("media.frame", token=token, trial_index=trial_index, slot=slot)

    return media_url


def frame_path(root: str | Path, stimulus_path: str, meta: dict, n_frames: int, index: int) -> Path:
    names = meta.get("files") or frame_file_names(n_frames)
    return resolve_under(root, f"{stimulus_path.rstrip('/')}/{names[index]}")
