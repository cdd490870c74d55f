"""Plumbing of the onsets of both clip presenters in headless Chromium (the runner's canvas
presenter, static/js/present.js, and the <video> element with static/js/onset.js), and the
trace reference rule of bench/rt_trace.py on synthetic traces.

The key is dispatched through CDP with an explicit timestamp = onset + scripted delay, after
that moment has passed: a page that took performance.now() in its key handler, or anchored
RT anywhere but on onset_time_ms, would be off by the dispatch lag (>= 8 ms here). Whether the
onset itself matches the screen is what bench/rt_accuracy.py and bench/frame_pacing.py measure
against a trace.
"""
import http.server
import threading
from pathlib import Path

import numpy as np
import pytest

from bench.rt_trace import FrameIndex, clock_offset_ms
from experiments.media import encode_browser_mp4

ROOT = Path(__file__).resolve().parents[2]
DELAYS_MS = (150.0, 260.0, 410.0, 330.0)
DISPATCH_LAG_S = 0.008  # the key is sent this long after the time it is stamped with
TOLERANCE_MS = 2.0
# Page function per presenter; the onset method it gives in a cross-origin isolated page; and
# the rAF timestamp of the animation frame that made the clip visible.
PRESENTERS = {
    "canvas": ("runCanvasTrial", "canvas-element-timing", "first_frame_raf_ms"),
    "video": ("runTrial", "element-timing", "reveal_frame_time_ms"),
}


class _Handler(http.server.SimpleHTTPRequestHandler):
    clips: Path = ROOT

    def translate_path(self, path):
        path = path.split("?", 1)[0]
        if path.startswith("/clips/"):
            return str(self.clips / path[len("/clips/"):])
        return str(ROOT / path.lstrip("/"))

    def end_headers(self):
        # Cross-origin isolation: 5-us clocks and unrounded Element Timing, as the runner gets.
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def bench_site(tmp_path_factory):
    clips = tmp_path_factory.mktemp("clips")
    frames = np.zeros((20, 96, 128, 3), np.uint8)
    frames[..., 0] = 200
    frames[..., 1] = np.arange(20, dtype=np.uint8)[:, None, None] * 12
    encode_browser_mp4(frames, clips / "clip.mp4", fps=30)
    (clips / "broken.mp4").write_bytes(b"not a video at all" * 64)
    handler = type("Handler", (_Handler,), {"clips": clips})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join(timeout=5)


def _open(page, base):
    page.goto(f"{base}/bench/rt_page/index.html")
    page.wait_for_function("() => window.pageReady === true")
    return page.context.new_cdp_session(page)


def _press_at(cdp, page, page_time_ms):
    """Dispatch keydown "f" stamped with ``page_time_ms`` (page clock), DISPATCH_LAG_S after
    that moment."""
    time_origin = page.evaluate("performance.timeOrigin")
    page.wait_for_function("(t) => performance.now() >= t", arg=page_time_ms + DISPATCH_LAG_S * 1000,
                           polling=1)
    stamp = (time_origin + page_time_ms) / 1000.0  # CDP wants seconds since the epoch
    key = {"key": "f", "code": "KeyF", "windowsVirtualKeyCode": 70}
    cdp.send("Input.dispatchKeyEvent", {"type": "keyDown", "text": "f", "timestamp": stamp, **key})
    cdp.send("Input.dispatchKeyEvent", {"type": "keyUp", "timestamp": stamp + 0.05, **key})


def _trial(page, cdp, delay_ms, label, function="runTrial"):
    page.evaluate(f"(l) => {{ window.lastOnset = undefined; "
                  f"window.trial = {function}('/clips/clip.mp4', l); }}", label)
    page.wait_for_function("() => window.lastOnset !== undefined")
    onset = page.evaluate("window.lastOnset.onset_time_ms")
    _press_at(cdp, page, onset + delay_ms)
    return page.evaluate("window.trial")


@pytest.mark.browser
@pytest.mark.parametrize("presenter", PRESENTERS)
def test_rt_is_key_timestamp_minus_onset(page, bench_site, presenter):
    function, method, shown_in = PRESENTERS[presenter]
    cdp = _open(page, bench_site)
    for i, delay in enumerate(DELAYS_MS):
        result = _trial(page, cdp, delay, f"t{i}", function)
        assert result["onset_method"] == method
        assert abs(result["rt_ms"] - delay) < TOLERANCE_MS, result
        assert result["rt_ms"] == pytest.approx(result["key_time_ms"] - result["onset_time_ms"])
        # The first compositor frame with the clip cannot precede the frame that revealed it.
        assert result["onset_time_ms"] >= result["onset_detail"][shown_in]
        assert result["onset_time_ms"] - result["onset_detail"][shown_in] < 200
    assert not page.js_errors


@pytest.mark.browser
def test_onset_callbacks_are_recorded(page, bench_site):
    cdp = _open(page, bench_site)
    result = _trial(page, cdp, 200.0, "callbacks")
    callbacks = result["onset_callbacks"]
    assert 1 <= len(callbacks) <= 4
    for callback in callbacks:
        assert set(callback) == {"presentedFrames", "mediaTime", "presentationTime",
                                 "expectedDisplayTime"}
        assert callback["mediaTime"] >= 0 and callback["presentedFrames"] >= 1
    media_times = [c["mediaTime"] for c in callbacks]
    assert media_times == sorted(media_times)


@pytest.mark.browser
@pytest.mark.parametrize("presenter", PRESENTERS)
def test_broken_clip_is_a_clear_error(page, bench_site, presenter):
    _open(page, bench_site)
    message = page.evaluate(f"{PRESENTERS[presenter][0]}('/clips/broken.mp4', 'broken')"
                            ".then(() => 'resolved', (error) => error.message)")
    assert message == "the clip could not be decoded"


def _event(name, ts_ms, dur_ms=0.0, ph="X", cat="viz", ident=None, **args):
    event = {"name": name, "ts": ts_ms * 1000, "dur": dur_ms * 1000, "ph": ph, "args": args,
             "cat": cat, "pid": 7}
    if ident:
        event["id2"] = {"local": ident}
    return event


def _surface(ts_ms, client):
    return _event("Surface::ActivateFrame", ts_ms, 0.1,
                  SurfaceId=f"SurfaceId(FrameSinkId(7, {client}), LocalSurfaceId(1, 1, AB...))")


def _frame(ts_ms, presented=True):
    events = [_event("Display::DrawAndSwap", ts_ms, 2.0)]
    return events + ([_event("Display::FrameDisplayed", ts_ms + 3.0, ph="I")] if presented else [])


def _reporter(ident, commit_ms, presented_ms=None, end_ms=None):
    """Frame-reporter stages of one main frame: its commit, then presentation (or a drop)."""
    stages = "cc,benchmark,disabled-by-default-devtools.timeline.frame"
    events = [_event("Commit", commit_ms, ph="b", cat=stages, ident=ident)]
    if presented_ms is not None:
        events.append(_event("SubmitCompositorFrameToPresentationCompositorFrame", presented_ms,
                             ph="e", cat=stages, ident=ident))
    events.append(_event("PipelineReporter", end_ms or presented_ms, ph="e", cat=stages,
                         ident=ident))
    return events


def _index(events):
    return FrameIndex.from_events(sorted(events, key=lambda e: e["ts"]))


def test_reference_follows_the_reveal_commit_to_its_presentation():
    # Synthetic trace. The video surface (client >= 2**31) has frame 0 from 105 ms. The page
    # reveals it at 120 ms; that main frame is committed at 125 under reporter 0x5, but its
    # tiles are slow, so the frames presented at 119 (0x5 recycled, before the commit) and
    # 130.5 (another reporter) still show the old tree; it is presented at 151 (draw at 148).
    # The draw at 131 is not presented (no damage).
    video, root = 2 ** 31 + 2, 6
    events = [_surface(t, root) for t in (95, 112, 127)] + [_surface(105, video)]
    events += [_event("reveal", 120, ph="I", cat="blink.user_timing")]
    events += _reporter("0x5", 100, presented_ms=119)
    events += _reporter("0x6", 110, presented_ms=130.5)
    events += _reporter("0x5", 125, presented_ms=151)
    events += _frame(100) + _frame(116) + _frame(127.5) + _frame(131, presented=False)
    events += _frame(148)
    ref = _index(events).reference(trial_start_ms=101, reveal_ms=120)
    assert ref["draw_start"] == pytest.approx(148) and ref["displayed"] == pytest.approx(151)
    # A video whose surface gets its first frame only at 149 shows at the next presented draw.
    late = [e for e in events if e.get("args", {}).get("SurfaceId", "").find(str(video)) < 0]
    late += [_surface(149, video)] + _frame(165)
    assert _index(late).reference(trial_start_ms=101, reveal_ms=120)["displayed"] == \
        pytest.approx(168)


def test_reference_is_none_when_the_reveal_frame_was_dropped():
    video, root = 2 ** 31 + 2, 6
    events = [_surface(95, root), _surface(105, video)] + _frame(100) + _frame(148)
    events += [_event("reveal", 120, ph="I", cat="blink.user_timing")]
    events += _reporter("0x5", 125, end_ms=140) + _reporter("0x5", 141, presented_ms=151)
    assert _index(events).reference(trial_start_ms=101, reveal_ms=120) is None


def test_clock_offset_from_marks():
    events = [_event(f"m{i}", 1000.0 + 7 * i + 0.002 * (-1) ** i, ph="I", cat="blink.user_timing")
              for i in range(4)]
    marks = [{"name": f"m{i}", "start": 10.0 + 7 * i} for i in range(4)]
    offset, spread = clock_offset_ms(events, marks)
    assert offset == pytest.approx(990.0, abs=0.003) and spread == pytest.approx(0.004)
    with pytest.raises(ValueError, match="clock marks"):
        clock_offset_ms(events, [{"name": "absent", "start": 0.0}])
