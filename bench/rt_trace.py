"""Reference onsets from a Chromium trace: when did the compositor first present the video?

Chromium composites a <video> through its own surface (a viz FrameSinkId whose client id has
the high bit set, created per video element); the page's layers come in the renderer's root
surface. The display compositor draws whatever surfaces are active when it draws. The video
is therefore first on screen in the later of two presented compositor frames:

1. the first presented ``Display::DrawAndSwap`` that starts after the video surface got its
   first frame (``Surface::ActivateFrame`` of a video sink after the trial started);
2. the frame that carries the page's reveal. The reveal mark (the DOM change that makes the
   video visible: our reveal, or jsPsych's insertion of the <video> element, marked in its
   ``on_load``) is followed by the renderer's commit of that main frame. Chromium's frame
   reporter (the ``PipelineReporter`` async events, one id per frame in flight) follows that
   commit through activation (which waits for new tiles to be rasterised, so it can lag the
   commit by frames under load) and submission to the end of its
   ``SubmitCompositorFrameToPresentationCompositorFrame`` stage. (Taking "the first root
   surface frame after the commit" instead is wrong whenever raster is slow: that frame
   still shows the old layer tree.)

The reference time is the presentation of that frame, i.e. its ``Display::FrameDisplayed``
event: the moment viz counts the swapped frame as presented, the instant Chromium's
presentation feedback reports. The draw's start and its swap end are kept too, to show how
much this choice matters (the draw starts ~1 ms earlier here). A draw with no damage skips
the swap and is never the reference.

Trace timestamps are CLOCK_MONOTONIC microseconds; ``performance.mark`` entries appear in the
trace with the same instant as their ``startTime``, which gives the page-clock offset.
"""
from __future__ import annotations

import json
import re
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

VIDEO_SINK_MIN_CLIENT = 2 ** 31  # renderer-allocated sinks (videos, canvases) have the high bit
TRACE_CATEGORIES = [
    "viz",
    "blink.user_timing",
    "disabled-by-default-devtools.timeline.frame",
    "disabled-by-default-display.framedisplayed",
    "media",  # VideoFrameSubmitter::SubmitFrame: which clip frame the reference frame showed
]
_SINK = re.compile(r"FrameSinkId\((\d+), (\d+)\)")
_MEDIA_TS = re.compile(r"timestamp:(\d+)")
SAME_INSTANT_MS = 0.05  # the reporter and viz log one presentation timestamp each
PRESENTED = "SubmitCompositorFrameToPresentationCompositorFrame"
REPORTER_STAGES = {"Commit", PRESENTED, "PipelineReporter"}


def _reporter_id(event: dict) -> str | None:
    ident = event.get("id2") or event.get("id")
    return json.dumps(ident, sort_keys=True) if ident else None


def load_events(raw: bytes) -> list[dict]:
    data = json.loads(raw)
    events = data["traceEvents"] if isinstance(data, dict) else data
    return sorted((e for e in events if "ts" in e), key=lambda e: e["ts"])


def mark_times(events: list[dict]) -> dict[str, float]:
    """Trace time (ms) of every user-timing mark, by name."""
    return {e["name"]: e["ts"] / 1000.0 for e in events
            if e.get("cat") == "blink.user_timing" and e.get("ph") in ("I", "R", "n")}


def clock_offset_ms(events: list[dict], marks: list[dict]) -> tuple[float, float]:
    """Offset so that ``trace_ms = page_ms + offset``, and the spread (max-min) of the estimates.

    ``marks`` are ``{"name", "start"}`` from the page (``performance.mark(name).startTime``).
    """
    in_trace = mark_times(events)
    deltas = [in_trace[m["name"]] - m["start"] for m in marks if m["name"] in in_trace]
    if not deltas:
        raise ValueError("none of the page's clock marks is in the trace")
    return float(np.median(deltas)), float(np.ptp(deltas))


def _sink(event: dict) -> tuple[int, int] | None:
    match = _SINK.search(str(event.get("args", {}).get("SurfaceId", "")))
    return (int(match.group(1)), int(match.group(2))) if match else None


@dataclass
class FrameIndex:
    """The events the reference needs, sorted by time (ms), for quick look-ups per trial."""

    activations: list[tuple[float, float, tuple[int, int]]]  # (start, end, sink)
    reporter_commits: list[tuple[float, str]]  # (start, reporter id) of main-frame commits
    reporter_stages: dict[str, list[tuple[float, str, str]]]  # id -> [(ts, name, phase)]
    draws: list[tuple[float, float]]  # (start, end)
    displayed: list[float]
    submits: list[tuple[float, int]]  # (start, media timestamp in us)
    root_sink: tuple[int, int]

    @classmethod
    def from_events(cls, events: list[dict]) -> "FrameIndex":
        # The page's renderer is the process that wrote the user-timing marks; the browser
        # process has a compositor too, whose commits must not count.
        renderer = next((e["pid"] for e in events if e.get("cat") == "blink.user_timing"), None)
        activations, commits, draws, displayed, submits = [], [], [], [], []
        stages: dict[str, list[tuple[float, str, str]]] = {}
        for e in events:
            name, ts = e.get("name"), e["ts"] / 1000.0
            if name == "Surface::ActivateFrame" and (sink := _sink(e)):
                activations.append((ts, ts + e.get("dur", 0) / 1000.0, sink))
            elif name in REPORTER_STAGES and e.get("pid") == renderer and _reporter_id(e):
                stages.setdefault(_reporter_id(e), []).append((ts, name, e["ph"]))
                if name == "Commit" and e["ph"] == "b":
                    commits.append((ts, _reporter_id(e)))
            elif name == "Display::DrawAndSwap":
                draws.append((ts, ts + e.get("dur", 0) / 1000.0))
            elif name == "Display::FrameDisplayed":
                displayed.append(ts)
            elif name == "VideoFrameSubmitter::SubmitFrame":
                match = _MEDIA_TS.search(str(e.get("args", {}).get("frame", "")))
                if match:
                    submits.append((ts, int(match.group(1))))
        roots = [a[2] for a in activations if a[2][1] < VIDEO_SINK_MIN_CLIENT]
        if not roots or not draws or not displayed:
            raise ValueError("the trace holds no compositor frames (wrong categories?)")
        root = max(set(roots), key=roots.count)
        return cls(activations, commits, stages, draws, displayed, submits, root)

    def _first_activation(self, after: float, video: bool) -> float | None:
        for start, end, sink in self.activations:
            if start < after:
                continue
            is_video = sink[1] >= VIDEO_SINK_MIN_CLIENT
            if (video and is_video) or (not video and sink == self.root_sink):
                return end
        return None

    def reveal_presented(self, reveal_ms: float) -> float | None:
        """Presentation time of the compositor frame carrying the first commit after the mark.

        Reporter ids are recycled, so the stage must end before that reporter does; a frame
        that was dropped has no presentation stage and gives None.
        """
        i = bisect_left(self.reporter_commits, (reveal_ms, ""))
        if i == len(self.reporter_commits):
            return None
        start, ident = self.reporter_commits[i]
        later = [(ts, name, ph) for ts, name, ph in self.reporter_stages[ident] if ts >= start]
        end = next((ts for ts, name, ph in later if name == "PipelineReporter" and ph == "e"),
                   None)
        return next((ts for ts, name, ph in later if name == PRESENTED and ph == "e"
                     and (end is None or ts <= end)), None)

    def reference(self, trial_start_ms: float, reveal_ms: float) -> dict | None:
        """Trace times (ms) of the first frame with the video, or None if it is not traced."""
        video_ready = self._first_activation(trial_start_ms, video=True)
        revealed = self.reveal_presented(reveal_ms)
        if video_ready is None or revealed is None:
            return None
        with_video = self._first_presented_draw(video_ready)
        if with_video is None:
            return None
        # The video shows in the later of the two frames; find that frame's draw.
        displayed = max(with_video[2], revealed)
        draw = next((d for d in self._presented_draws_from(video_ready)
                     if abs(d[2] - displayed) < SAME_INSTANT_MS), None)
        if draw is None:
            return None
        return {"draw_start": draw[0], "swap_end": draw[1], "displayed": displayed,
                "video_ready": video_ready, "reveal_presented": revealed,
                "media_time_us": self._shown_media_time(draw[0])}

    def _presented_draws_from(self, ready: float):
        """Draws starting after ``ready`` that were presented, as (start, end, displayed); a
        draw with no damage skips the swap and has no FrameDisplayed before the next draw."""
        j = bisect_left(self.draws, (ready, ready))
        for index in range(j, len(self.draws)):
            draw_start, draw_end = self.draws[index]
            next_start = self.draws[index + 1][0] if index + 1 < len(self.draws) else float("inf")
            k = bisect_left(self.displayed, draw_start)
            if k < len(self.displayed) and self.displayed[k] < next_start:
                yield draw_start, draw_end, self.displayed[k]

    def _first_presented_draw(self, ready: float) -> tuple[float, float, float] | None:
        return next(self._presented_draws_from(ready), None)

    def _shown_media_time(self, draw_start: float) -> int | None:
        """Media timestamp of the clip frame in the video surface when the display drew."""
        last_video = max((start for start, end, sink in self.activations
                          if sink[1] >= VIDEO_SINK_MIN_CLIENT and end <= draw_start), default=None)
        if last_video is None:
            return None
        earlier = [media for start, media in self.submits if start <= last_video]
        return earlier[-1] if earlier else None
