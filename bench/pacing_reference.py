"""What a clip presenter really showed, for bench/frame_pacing.py: test clips that spell their
frame index, the screen read back from a Chromium trace, and the page's own record.

Each test clip draws its frame index as a 4 x 4 grid of black and white cells (7 bits, their
complements, two always-white cells), so a screenshot or a canvas reads back as "clip frame k"
or "no clip frame".

Two records of what was shown, both as (vsync ms, presented ms, clip frame or None) per change:

* :meth:`Shown.from_trace` (Chromium): the screen. The ``disabled-by-default-devtools.screenshot``
  category holds a JPEG of every frame the display compositor presents, one ``Screenshot`` per
  ``Display::FrameDisplayed`` (within ~1 ms of it). Its ``expected_display_time`` is the
  deadline of the begin-frame the frame was drawn in: headless Chromium draws as soon as every
  surface is ready or at that deadline, so presentation times wander within a refresh while
  the begin-frame says which refresh the frame belongs to. The presentation time is the onset
  reference (what Element Timing reports, as in bench/rt_trace.py).
* :meth:`Shown.from_page` (every engine): the page's own account, with no independent
  reference: the animation-frame time of each canvas draw, or each requestVideoFrameCallback's
  expectedDisplayTime and mediaTime for the <video> element.

:func:`score` turns either into the figures of one trial against the schedule the canvas
presenter follows (static/js/present.js ``frameSchedule``).
"""
from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CLIPS = {"30fps": (30, 90), "60fps": (60, 120)}  # name: (fps, frames), 320 x 240 like the set
GRID, BITS, CELL_W, CELL_H = 4, 7, 80, 60
NOMINAL_REFRESH_MS = 1000 / 60  # headless Chromium's begin-frames; measured from the trace
SAME_FRAME_MS = 8.0  # a screenshot belongs to the presentation nearest it, within half a refresh


def index_frames(n: int) -> np.ndarray:
    """``(n, 240, 320, 3)`` frames whose cells spell their index."""
    frames = np.zeros((n, GRID * CELL_H, GRID * CELL_W, 3), np.uint8)
    for k in range(n):
        bits = [(k >> b) & 1 for b in range(BITS)]
        cells = bits + [1] + [1 - b for b in bits] + [1]
        for cell, on in enumerate(cells):
            row, col = divmod(cell, GRID)
            frames[k, row * CELL_H:(row + 1) * CELL_H, col * CELL_W:(col + 1) * CELL_W] = 255 * on
    return frames


def read_index(levels) -> int | None:
    """The frame index spelled by 16 cell levels (0-255, row-major), or None if none is."""
    on = [level > 128 for level in levels]
    if not (on[BITS] and on[-1]) or any(on[b] == on[BITS + 1 + b] for b in range(BITS)):
        return None
    return sum(on[b] << b for b in range(BITS))


def schedule(n: int, fps: float, refresh_ms: float) -> list[int]:
    """Due refresh of each frame and of the clip's end: static/js/present.js frameSchedule."""
    per_frame = 1000 / fps / refresh_ms
    whole = max(1, round(per_frame))
    step = whole if abs(per_frame / whole - 1) < 0.1 else per_frame
    return [round(k * step) for k in range(n + 1)]


def make_clips(folder: Path) -> dict[str, Path]:
    from experiments.media import encode_browser_mp4

    paths = {}
    for name, (fps, n) in CLIPS.items():
        paths[name] = folder / f"{name}.mp4"
        encode_browser_mp4(index_frames(n), paths[name], fps=fps)
    return paths


def _grey(snapshot: str) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(base64.b64decode(snapshot))).convert("L"), dtype=float)


def cell_levels(image: np.ndarray, stage: dict) -> list[float]:
    """Mean level of the middle of each pattern cell in a (scaled-down) screenshot."""
    scale = image.shape[1] / stage["viewport"]
    radius = max(1, int(scale * min(stage["width"], stage["height"]) / GRID / 6))
    levels = []
    for cell in range(GRID * GRID):
        row, col = divmod(cell, GRID)
        x = int((stage["left"] + (col + 0.5) * stage["width"] / GRID) * scale)
        y = int((stage["top"] + (row + 0.5) * stage["height"] / GRID) * scale)
        levels.append(float(image[y - radius:y + radius + 1, x - radius:x + radius + 1].mean()))
    return levels


@dataclass
class Shown:
    """Clip frames shown, as (vsync ms, presented ms, clip frame or None), and the refresh."""

    shown: list[tuple[float, float, int | None]]
    refresh_ms: float

    @classmethod
    def from_trace(cls, events: list[dict], stage: dict) -> "Shown":
        displayed = np.array([e["ts"] / 1000 for e in events
                              if e["name"] == "Display::FrameDisplayed"])
        shown = []
        for e in events:
            if e["name"] != "Screenshot" or not len(displayed):
                continue
            ts, args = e["ts"] / 1000, e["args"]
            presented = float(displayed[np.argmin(np.abs(displayed - ts))])
            if abs(presented - ts) <= SAME_FRAME_MS:
                shown.append((args["expected_display_time"] / 1000, presented,
                              read_index(cell_levels(_grey(args["snapshot"]), stage))))
        # Vsyncs lie on one grid: each step between shown frames is a whole number of refreshes.
        gaps = np.diff(sorted({vsync for vsync, _, _ in shown}))
        steps = [gap / round(gap / NOMINAL_REFRESH_MS) for gap in gaps
                 if gap > 0.5 * NOMINAL_REFRESH_MS]
        return cls(sorted(shown), float(np.median(steps)))

    @classmethod
    def from_page(cls, trial: dict, fps: float) -> "Shown":
        """The page's record: ``draws`` [[animation-frame ms, frame]] of the canvas presenter,
        or ``video_frames`` [[expectedDisplayTime, mediaTime]] of the <video> element."""
        if "draws" in trial:
            shown = [(t, t, k) for t, k in trial["draws"]]
        else:
            shown = [(t, t, round(media * fps)) for t, media in trial["video_frames"]]
        return cls(sorted(shown), trial["page_refresh_ms"])


def score(trial: dict, shown: Shown, start: float, end: float, offset: float | None) -> dict | None:
    """One trial's figures, or None when no clip frame showed between start and end.

    Frames before the last are on time when shown for exactly their intended number of
    refreshes; the last one (it stays up until the trial clears it) when it starts on its due
    refresh; a frame never shown is not on time. frame0_hold: refreshes frame 0 stayed beyond
    its intended duration. onset_error_ms: the stored onset minus frame 0's presentation
    (``offset`` maps page time to the reference's clock; None: no independent reference).
    """
    fps, n = CLIPS[trial["clip"]]
    due = schedule(n, fps, shown.refresh_ms)
    runs: list[list] = []  # [clip frame, vsync, presented, next change's vsync]
    for vsync, presented, index in shown.shown:
        if not start <= presented <= end or (not runs and index is None):
            continue
        if runs and runs[-1][0] == index:
            continue
        if runs:
            runs[-1][3] = vsync
        runs.append([index, vsync, presented, None])
    if not runs:
        return None
    first = {}
    for index, vsync, presented, until in runs:
        if index is not None and index < n and index not in first:
            first[index] = (vsync, presented, until)
    refreshes = lambda ms: round(ms / shown.refresh_ms)  # noqa: E731
    # Frame 0's refresh is the origin; were frame 0 never shown, the first frame's due one.
    origin = runs[0][1] - due[runs[0][0]] * shown.refresh_ms
    on_time = 0
    for k, (vsync, _, until) in first.items():
        if k == n - 1:
            on_time += refreshes(vsync - origin) == due[k]
        elif until is not None:
            on_time += refreshes(until - vsync) == due[k + 1] - due[k]
    zero = first.get(0)
    return {"on_time": on_time, "frames": n, "dropped": n - len(first),
            "frame0_hold": None if zero is None or zero[2] is None else
            refreshes(zero[2] - zero[0]) - (due[1] - due[0]),
            "onset_error_ms": None if zero is None or offset is None else
            trial["onset_time_ms"] + offset - zero[1]}
