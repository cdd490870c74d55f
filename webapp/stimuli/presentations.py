"""The video files a session's browser is served: a catch video of its own for every catch
presentation, and one size for every video of the session.

A stored catch video would be the same bytes for every participant, so a script could know a
catch trial by its hash.  Each catch trial of a session is shown a variant of its own instead
(``experiments.catch.render_catch_frames`` with a generator seeded from the server's secret,
the session and the trial): as long as, and of the size and frame rate of, one of the
session's own clips that lasts at least as long as the catch clip (so that the key shows for
as long: a length set's short cuts never do), encoded with the clips' encoder settings.  The variants are made
together on the session's first video request, whichever trial it names, so that no URL
answers slower for being a catch trial, and kept in a folder of the session's own under the
stimulus root while the session is live: active, and seen within ABANDONED_AFTER_MINUTES.
The folder goes when the session ends (:func:`discard`) or stops being live (:func:`sweep`);
a session that comes back after that gets the same bytes again, as the render is seeded.

Every video of a session is then served at one length: its encoded boxes, with any trailing
padding (``experiments.equal_size``) replaced by one ``free`` box up to the session's size,
the largest of its videos plus one box header.  A catch video therefore has the size, the
top-level boxes, the duration and the encoder settings of the clips around it.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import hmac
import os
import shutil
import struct
from datetime import timedelta
from fractions import Fraction
from pathlib import Path

import numpy as np
from flask import current_app
from sqlalchemy import Connection, Row, select

from experiments import adaptive_schedule, catch, media
from experiments.equal_size import MP4_BOX_HEADER
from experiments.trial_types import ATTENTION_CHECK
from experiments.verdict import UNFINISHED
from webapp.models import Session, SourceClip, Stimulus
from webapp.participant.store import now
from webapp.stimuli.files import resolve_under

FOLDER = ".catch-presentations"  # under the stimulus root; never a stimulus set's name


def _video_rows(connection: Connection, session: Row) -> dict[int, Row]:
    """Stimulus id -> (id, path, width, height, fps, frame_count) of every video the
    session's schedule shows (its clip's shape: its files are that, even-cropped)."""
    ids = {t["stimulus_id"] for t in session.schedule if t.get("stimulus_id") is not None}
    # What its adaptive slots may show, resolved ones included: the set stays the same all
    # session, so the served size and a catch trial's template (:func:`_template`) do too.
    ids |= adaptive_schedule.pool_ids(session.schedule)
    rows = connection.execute(
        select(Stimulus.id, Stimulus.path, SourceClip.width, SourceClip.height, SourceClip.fps,
               SourceClip.frame_count).join(SourceClip, Stimulus.source_clip_id == SourceClip.id)
        .where(Stimulus.id.in_(ids), Stimulus.kind == "clip"))
    return {row.id: row for row in rows}


def _keyed(message: str) -> bytes:
    """A digest of ``message`` that nobody without the server's key can remake."""
    key = str(current_app.config["SECRET_KEY"]).encode()
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def _seed(token: str, trial: dict) -> bytes:
    """The presentation's seed and file name.  It names the catch video too: a failed practice
    attempt renumbers the later trials, and another catch trial may then hold this index."""
    return _keyed(f"catch-presentation:{token}:{trial['trial_index']}:{trial['stimulus_id']}")


def _session_folder(token: str) -> Path:
    """Where the session's variants and lock are: named so that the token cannot be read back."""
    name = _keyed(f"catch-session:{token}").hex()
    return Path(current_app.config["STIMULUS_ROOT"], FOLDER, name)


def _catch_path(token: str, trial: dict) -> Path:
    return _session_folder(token) / f"{_seed(token, trial).hex()}.mp4"


def discard(token: str) -> None:
    """Remove the catch variants of a session that will show no more videos."""
    shutil.rmtree(_session_folder(token), ignore_errors=True)


def sweep(connection: Connection) -> int:
    """Remove the variants of every session that is not live (ended, or not seen within
    ABANDONED_AFTER_MINUTES: one that comes back has them rendered again, byte for byte),
    and of sessions no longer stored; the number of entries removed (sessions' folders, and
    the files of the flat layout that came before them)."""
    folder = Path(current_app.config["STIMULUS_ROOT"], FOLDER)
    if not folder.is_dir():
        return 0
    cutoff = now() - timedelta(minutes=current_app.config["ABANDONED_AFTER_MINUTES"])
    live = {_session_folder(token).name for token in connection.scalars(
        select(Session.token).where(Session.status.in_(UNFINISHED), Session.last_seen_at >= cutoff))}
    gone = [entry for entry in folder.iterdir() if entry.name not in live]
    for entry in gone:
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:  # a file of the flat layout that came before the folders
            entry.unlink(missing_ok=True)
    return len(gone)


def _render(trial: dict, template: Row, seed: bytes, path: Path) -> None:
    """Encode the variant of catch ``trial`` in the shape of the clip ``template``."""
    rng = np.random.default_rng(np.frombuffer(seed, np.uint32))
    width, height = template.width & ~1, template.height & ~1  # as media.even_crop encodes
    rate = Fraction(template.fps).limit_denominator(1001)
    frames = catch.render_catch_frames(trial["instructed_key"], width, height, float(rate),
                                       n_frames=template.frame_count, rng=rng)
    media.encode_frames(frames, path, rate, width, height)


def _template(session: Row, trial: dict, rows: dict[int, Row]) -> Row:
    """The clip of ``session`` whose shape and length catch ``trial``'s variant takes, picked
    by the presentation's whole seed among the session's clips long enough to show the key
    (``catch.min_frames``: a length set's short cuts are not); the stored catch clip itself
    where none is."""
    catch_clip = rows[trial["stimulus_id"]]
    catch_ids = {t["stimulus_id"] for t in session.schedule if t["trial_type"] == ATTENTION_CHECK}
    long_enough = sorted(
        (row for row in rows.values() if row.id not in catch_ids
         and row.frame_count >= catch.min_frames(catch_clip.frame_count, catch_clip.fps, row.fps)),
        key=lambda row: (row.width, row.height, row.fps, row.frame_count, row.id))
    if not long_enough:
        return catch_clip
    return long_enough[int.from_bytes(_seed(session.token, trial), "big") % len(long_enough)]


def served_clip(connection: Connection, session: Row, trial: dict) -> tuple[int, float] | None:
    """``(frames, fps)`` of the video served for scheduled ``trial`` of ``session`` (a catch
    trial's variant has its template's); None for a trial without one."""
    rows = _video_rows(connection, session)
    if trial.get("stimulus_id") not in rows:
        return None
    row = _template(session, trial, rows) if trial["trial_type"] == ATTENTION_CHECK \
        else rows[trial["stimulus_id"]]
    return row.frame_count, row.fps


def _make_catch_videos(connection: Connection, session: Row, rows: dict[int, Row]) -> None:
    """Every catch variant of ``session`` that is not on disk yet; one process at a time per
    session (a lock file, left in place while the session is live: removing it would let a
    waiter and a newcomer in together), so concurrent first requests wait rather than encode
    twice.  A session's first request also sweeps away the variants of sessions gone."""
    todo = [t for t in session.schedule if t["trial_type"] == ATTENTION_CHECK
            and not _catch_path(session.token, t).exists()]
    if not todo:
        return
    sweep(connection)
    folder = _session_folder(session.token)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for trial in todo:
            path = _catch_path(session.token, trial)
            if path.exists():  # made while this request waited for the lock
                continue
            _render(trial, _template(session, trial, rows), _seed(session.token, trial), path)


@functools.lru_cache(maxsize=4096)
def content_length(path: str) -> int:
    """Bytes of the MP4 at ``path`` up to its trailing ``free`` boxes; the whole file if it is
    no sequence of boxes (stored files are never rewritten, so the answer is cached)."""
    end, size = 0, os.path.getsize(path)
    with open(path, "rb") as handle:
        while header := handle.read(MP4_BOX_HEADER):
            box, kind = struct.unpack(">I4s", header) if len(header) == MP4_BOX_HEADER else (0, b"")
            # 0 (to the end) and 1 (64-bit) sizes are never written by the encoder here.
            if box < MP4_BOX_HEADER or handle.tell() - MP4_BOX_HEADER + box > size:
                return size
            handle.seek(box - MP4_BOX_HEADER, 1)
            if kind != b"free":
                end = handle.tell()
    return end


def session_videos(connection: Connection, session: Row) -> tuple[dict[int, Path], int]:
    """The file served for each video trial of ``session`` (trial index -> path) and the one
    size all are served at.  Makes the session's catch variants first if need be."""
    rows = _video_rows(connection, session)
    _make_catch_videos(connection, session, rows)
    root = current_app.config["STIMULUS_ROOT"]
    files = {}
    for trial in session.schedule:
        row = rows.get(trial.get("stimulus_id"))
        if row is not None:
            files[trial["trial_index"]] = _catch_path(session.token, trial) \
                if trial["trial_type"] == ATTENTION_CHECK else resolve_under(root, row.path)
    # The largest video the session may show (an adaptive slot's every level, resolved or
    # not): fixed by the schedule, so a URL fetched again is never another size.
    pool = [resolve_under(root, rows[i].path) for i in adaptive_schedule.pool_ids(session.schedule)
            if i in rows]
    size = max((content_length(str(p)) for p in [*files.values(), *pool]), default=0) + \
        MP4_BOX_HEADER
    return files, size


class PaddedVideo:
    """A read-only file of ``path``'s boxes up to ``content_length`` followed by one ``free``
    box, ``size`` bytes in all: what Werkzeug's file wrapper and Range support read."""

    def __init__(self, path: Path, size: int):
        self.handle = open(path, "rb")
        self.end = content_length(str(path))
        self.size, self.position = size, 0
        self.padding = struct.pack(">I", size - self.end) + b"free"

    def read(self, n: int = -1) -> bytes:
        stop = self.size if n is None or n < 0 else min(self.size, self.position + n)
        data = b""
        if self.position < self.end:
            self.handle.seek(self.position)
            data = self.handle.read(min(stop, self.end) - self.position)
        start = max(self.position, self.end) - self.end  # where in the padding box
        if stop - self.end > start:
            header = self.padding[start:stop - self.end]
            data += header + bytes(stop - self.end - start - len(header))
        self.position = stop
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.position, 2: self.size}[whence]
        self.position = max(0, min(self.size, base + offset))
        return self.position

    def tell(self) -> int:
        return self.position

    def close(self) -> None:
        self.handle.close()
