"""A session's timing quality: one score from what its clip trials store, and its rule.

The score is the share of the session's clip frames that the page saw shown on time, with
every frame of a disturbed trial counted as not on time.  For each trial that presented a
clip (a video trial: its ``extra`` holds ``onset_time_ms``):

* **Frames on time**: from the canvas presenter's pacing (static/js/present.js), the frames
  drawn on their due refresh, ``frames_shown - frames_late``, out of the frames that fell
  due, ``frames_shown + frames_dropped`` (a trial answered before the clip ended has frames
  that never fell due).  A frame 0 held beyond its due refresh makes frame 1 late, so the
  hold is counted there.  From a ``<video>`` element, which cannot say which refresh showed
  which frame: ``total_frames - dropped_frames`` out of ``total_frames``, as the browser's
  playback quality reports them.
* **What the browser cannot shrink or swell**: the server stores with each trial the clip it
  served (``clip_frames``, ``clip_fps``; :mod:`webapp.participant.progress`).  No trial's
  due frames exceed the clip's; and they are at least the frames that fell due by the answer
  (the whole clip for a trial without one) at :data:`MIN_CLIP_SPEED` of the clip's rate, so
  a clip that froze (a mis-measured refresh: frame 0 shown, nothing late) is not on time.  A
  trial the browser could not count (a ``<video>`` whose browser reports no frames, as
  Firefox and Safari may) is left out, unless it was disturbed: a disturbed trial never
  leaves the score, and one with no counts (the server left out counts that contradicted
  the clip: it is technical) or none due counts the clip's frames, none on time.  Older
  trials, stored without the clip, are left out without counts, as before.
* **Disturbed** (none of its frames on time): the page lost focus or was hidden
  (``focus_lost``), left fullscreen (``fullscreen_exited`` or any technical event), the trial
  is technical (a measurement out of its bounds, counts that contradicted the clip), the
  clip stalled, no onset was measured, the onset fell back to a less precise method than
  the session's best (Element Timing, then its 4 ms-rounded form, then the next animation
  frame: a fallback means the marker's paint was not reported within a second), or the
  trial's measured refresh interval is missing or 0 beside canvas counts (the canvas
  presenter always measures it) or more than :data:`REFRESH_TOLERANCE` off the session's
  median (the display changed, or the main-thread canvas's thread was too busy to measure
  it; the worker presenter measures it on its own animation frames).  The median, not the
  device check's one main-thread measurement before consent: that one reads 30 Hz on an
  energy-saving page that gets every other frame, and would make every good trial the
  disturbed one.

The score is None for a session without such trials (a frame-ordering session), and the
rule then never applies.  A quiet headless Chromium session scores 1.0 or close to it.  The
worker presenter's counts are its own, so a busy main thread lowers the score only by taking
the CPU from the worker (janked 30 ms every 100 ms and throttled 4x: 0.93-1.00, quiet
0.97-1.00), where on the main-thread canvas it scores far less (0.63) (docs/measurements.md).
The rule: :func:`breaks_rule`, reason ``timing_quality``, with the study's
``min_timing_quality`` (0 switches it off).  :data:`VERSION` names this definition; it changes with the score.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

from experiments.record_numbers import count

VERSION = "tq2"
REASON = "timing_quality"
REFRESH_TOLERANCE = 0.10
# The slowest a clip plays: a "whole" cadence runs it at 0.88 to 1.08 of its rate
# (static/js/pacing.js CADENCE_TOLERANCE and CADENCE_MARGIN), a pulldown at its rate.
MIN_CLIP_SPEED = 0.88
# Onset methods from the most precise (static/js/onset.js ONSET_METHODS, "canvas-" removed).
ONSET_PRECISION = ("element-timing", "element-timing-coarse", "raf-next")


def _extra(record: Mapping) -> Mapping:
    extra = record.get("extra")
    return extra if isinstance(extra, Mapping) else {}


def _precision(method) -> int:
    """Rank of an onset method (0 is the most precise); an unknown one ranks last."""
    name = method.removeprefix("canvas-") if isinstance(method, str) else None
    return ONSET_PRECISION.index(name) if name in ONSET_PRECISION else len(ONSET_PRECISION)


def presented(records: Iterable[Mapping]) -> list[Mapping]:
    """The trials that presented a clip (the only ones with frame pacing to score)."""
    return [r for r in records if "onset_time_ms" in _extra(r)]


def _counted(record: Mapping) -> tuple[float, float] | None:
    """``(on time, due)`` as the browser counted them, or None."""
    extra = _extra(record)
    shown, late = count(extra.get("frames_shown")), count(extra.get("frames_late"))
    dropped = count(extra.get("frames_dropped"))
    if shown is not None and late is not None and dropped is not None:
        return max(0.0, shown - late), shown + dropped
    total = count(extra.get("total_frames", record.get("total_frames")))
    lost = count(record.get("dropped_frames"))
    if total is not None and lost is not None:
        return max(0.0, total - lost), total
    return None


def frames_on_time(record: Mapping) -> tuple[float, float] | None:
    """``(on time, due)`` frame counts of one clip trial, undisturbed, held to the clip
    served (see the module's notes); None when the browser did not count them, or nothing
    fell due."""
    extra = _extra(record)
    served, fps = count(extra.get("clip_frames")), count(extra.get("clip_fps"))
    counted = _counted(record)
    if counted is None or counted[1] <= 0:
        return None
    if not served:
        return counted
    rt = count(record.get("rt_ms"))
    elapsed = served if rt is None or not fps else int(MIN_CLIP_SPEED * rt * fps / 1000)
    due = max(min(counted[1], served), min(elapsed, served))
    return min(counted[0], due), due


def disturbance(record: Mapping, best_precision: int, median_refresh_ms: float | None
                ) -> str | None:
    """What disturbed one clip trial's presentation (see the module's notes), or None."""
    extra = _extra(record)
    events = extra.get("technical_events")
    if extra.get("focus_lost"):
        return "focus_lost"
    if extra.get("fullscreen_exited") or \
            (isinstance(events, Sequence) and not isinstance(events, str) and events):
        return "fullscreen_exited"
    if extra.get("technical"):
        return "technical"
    if (count(extra.get("stalls")) or 0) > 0:
        return "stalled"
    if count(extra.get("onset_time_ms")) is None:
        return "no_onset"
    if _precision(record.get("onset_method")) > best_precision:
        return "onset_fallback"
    refresh = count(extra.get("refresh_ms"))
    if count(extra.get("frames_shown")) is not None and not refresh:
        return "refresh_off"  # the canvas presenter always measures it
    if refresh and median_refresh_ms and abs(refresh / median_refresh_ms - 1) > REFRESH_TOLERANCE:
        return "refresh_off"
    return None


def accounts(records: Iterable[Mapping]) -> list[tuple[Mapping, tuple[float, float] | None,
                                                       str | None]]:
    """Each clip trial with its :func:`frames_on_time` and its :func:`disturbance`; a
    disturbed trial the browser did not count counts its served clip, none on time."""
    clips = presented(records)
    if not clips:
        return []
    best = min(_precision(r.get("onset_method")) for r in clips)
    refreshes = [v for r in clips if (v := count(_extra(r).get("refresh_ms")))]
    median = statistics.median(refreshes) if refreshes else None
    return [(r, _uncounted_if_disturbed(r, frames_on_time(r), cause), cause)
            for r in clips for cause in [disturbance(r, best, median)]]


def _uncounted_if_disturbed(record: Mapping, frames, cause):
    served = count(_extra(record).get("clip_frames"))
    return (0.0, served) if frames is None and cause and served else frames


def session_score(records: Iterable[Mapping]) -> float | None:
    """The timing-quality score of one session's stored trials, from 0 to 1 (None without a
    clip trial whose frames could be counted).

    Examples
    --------
    >>> trial = {"onset_method": "canvas-element-timing", "extra": {"onset_time_ms": 900.0,
    ...     "frames_shown": 10, "frames_late": 1, "frames_dropped": 2, "refresh_ms": 16.7}}
    >>> round(session_score([trial, {**trial, "extra": {**trial["extra"],
    ...     "focus_lost": True}}]), 3)
    0.375
    """
    counted = [(frames, cause) for _, frames, cause in accounts(records) if frames is not None]
    if not counted:
        return None
    on_time = sum(0.0 if cause else frames[0] for frames, cause in counted)
    return on_time / sum(frames[1] for frames, _ in counted)


def breaks_rule(records: Iterable[Mapping], min_score: float) -> bool:
    """Whether a session scores below the study's ``min_timing_quality`` (0: never)."""
    if min_score <= 0:
        return False
    score = session_score(records)
    return score is not None and score < min_score
