"""Frame sets for ordering tasks: which frames to sample, and writing them as PNG files.

Pure sampling rules and file writing only; :func:`experiments.media.write_frame_set` decodes.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np


def sample_frame_indices(frame_count: int, n: int) -> list[int]:
    """Indices of ``n`` frames spread uniformly over a clip of ``frame_count`` frames.

    Notes
    -----
    The clip is cut into ``n`` equal segments and the frame under each segment's centre is
    taken: ``index_i = floor((i + 0.5) * frame_count / n)``.  Indices are strictly increasing
    (segments are at least one frame long) and never sit on the often static first/last frame
    unless the segments are a frame long.  Example: 90 frames, n=4 -> [11, 33, 56, 78].
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if frame_count < n:
        raise ValueError(f"cannot sample {n} distinct frames from {frame_count}")
    return [int((2 * i + 1) * frame_count // (2 * n)) for i in range(n)]


# The part of a clip a frame set may cover (fractions of its length), for designs that vary
# the temporal span of frame-ordering trials: the middle third, the middle two thirds, all.
SPAN_WINDOWS = {"short": (1 / 3, 2 / 3), "medium": (1 / 6, 5 / 6), "long": (0.0, 1.0)}


def span_frame_indices(frame_count: int, n: int, span: str) -> list[int]:
    """:func:`sample_frame_indices` applied to the ``span`` window of the clip only."""
    if span not in SPAN_WINDOWS:
        raise ValueError(f"unknown span {span!r}; expected one of {', '.join(SPAN_WINDOWS)}")
    lo, hi = SPAN_WINDOWS[span]
    start, stop = int(lo * frame_count), int(np.ceil(hi * frame_count - 1e-9))
    return [start + i for i in sample_frame_indices(stop - start, n)]


def frame_file_names(n: int) -> list[str]:
    width = max(2, len(str(n - 1)))
    return [f"frame_{i:0{width}d}.png" for i in range(n)]


def write_pngs(frames: np.ndarray, dst_dir) -> list[Path]:
    """Write ``frames`` as ``frame_00.png ...`` in order (deterministic bytes)."""
    from PIL import Image  # Pillow is only needed for frame sets

    dst_dir = Path(dst_dir)
    dst_dir.mkdir(parents=True, exist_ok=True)
    paths = [dst_dir / name for name in frame_file_names(len(frames))]
    for frame, path in zip(frames, paths):
        # Level 3: about half the time of the default 6 for a few % larger files.
        Image.fromarray(np.ascontiguousarray(frame)).save(path, format="PNG", compress_level=3)
    return paths


def sha256_files(paths: Iterable) -> str:
    """One hash over several files' bytes, in the given order (a frame set's identity)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()
