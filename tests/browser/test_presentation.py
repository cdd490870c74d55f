"""The canvas clip presenter (static/js/present.js, decode.js, mp4.js) in headless Chromium:
frames decoded in order by both routes, drawn on their due refreshes from frame 0 on, and
every stored clip trial carrying its frame pacing, with the decoded frames freed.

Clips that spell their frame index (bench/pacing_reference.py) let the test read back which
frame a bitmap or the canvas holds. Refreshes are counted here from the page's own animation-frame
time (document.timeline.currentTime) at each draw, not from the presenter's bookkeeping,
which the test then checks against it. Whether the drawn frames reach the screen on those
refreshes is what bench/frame_pacing.py measures against a trace.
"""
from pathlib import Path

import pytest
from sqlalchemy import select

from bench.pacing_reference import index_frames, read_index, schedule
from bench.rt_accuracy import serve
from experiments.media import encode_browser_mp4
from tests.browser.participant import stored
from tests.browser.test_refresh_rates import CLOCK
from webapp.extensions import db
from webapp.models import Session, SourceClip, Stimulus, Trial

pytestmark = pytest.mark.browser

CLIPS = {"30fps": (30, 24), "60fps": (60, 30)}  # name: (fps, frames)
# Logs every drawImage on a visible canvas: the animation frame it ran in and the levels of
# the 4 x 4 pattern cells it left on the canvas.
LOG_DRAWS = """(() => {
  const draw = CanvasRenderingContext2D.prototype.drawImage;
  window.drawLog = [];
  CanvasRenderingContext2D.prototype.drawImage = function (...args) {
    draw.apply(this, args);
    const { width, height } = this.canvas;
    if (!(this.canvas instanceof HTMLCanvasElement)) return;
    const levels = [];
    for (let cell = 0; cell < 16; cell += 1) {
      const x = Math.floor(((cell % 4) + 0.5) * width / 4);
      const y = Math.floor((Math.floor(cell / 4) + 0.5) * height / 4);
      const [r, g, b] = this.getImageData(x, y, 1, 1).data;
      levels.push((r + g + b) / 3);
    }
    window.drawLog.push({ frameTime: document.timeline.currentTime, levels });
  };
})();"""
@pytest.fixture(scope="module")
def pacing_site(tmp_path_factory):
    clips = tmp_path_factory.mktemp("pacing_clips")
    for name, (fps, n) in CLIPS.items():
        encode_browser_mp4(index_frames(n), clips / f"{name}.mp4", fps=fps)
    return serve({"/clips/": Path(clips)}, isolated=True)


def _open(page, base):
    page.goto(f"{base}/bench/rt_page/pacing.html")
    page.wait_for_function("() => window.pageReady === true")


@pytest.mark.parametrize("webcodecs", [True, False], ids=["webcodecs", "seek"])
def test_decoded_frames_are_the_files_frames_in_order(page, pacing_site, webcodecs):
    # The encoder's B-frames and edit list put decode order and file times apart from
    # presentation order: frame k must still come out at index k, by either route.
    _open(page, pacing_site)
    for name, (fps, n) in CLIPS.items():
        result = page.evaluate("([u, w]) => frameLevels(u, w)", [f"/clips/{name}.mp4", webcodecs])
        assert result["source"] == ("webcodecs" if webcodecs else "seek")
        assert result["fps"] == pytest.approx(fps)
        assert (result["width"], result["height"]) == (320, 240)
        assert [read_index(levels) for levels in result["levels"]] == list(range(n))
    assert not page.js_errors


def test_seeking_takes_each_frame_once_the_engine_shows_it(page, pacing_site):
    # After "seeked" Chromium may still hand out the previous frame when its renderer is busy
    # (the last frame came out as its predecessor in loaded full-suite runs). A throttled
    # renderer makes that likely: the route that took the frame at "seeked" got 1-2 of 16
    # decodes wrong here; waiting for the frame's own presentation gets none wrong.
    _open(page, pacing_site)
    page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": 6})
    wrong = []
    for attempt in range(8):
        for name, (_, n) in CLIPS.items():
            result = page.evaluate("([u]) => frameLevels(u, false)", [f"/clips/{name}.mp4"])
            order = [read_index(levels) for levels in result["levels"]]
            if order != list(range(n)):
                wrong.append((attempt, name, order))
    assert wrong == []
    assert not page.js_errors


def _draw_refreshes(log, first_frame_time, refresh_ms):
    """Refresh (from frame 0's) on which each frame index was first drawn, from the log."""
    drawn = {}
    for entry in log:
        if entry["frameTime"] < first_frame_time:
            continue  # frame 0 drawn ahead, before the onset
        index = read_index(entry["levels"])
        drawn.setdefault(index, round((entry["frameTime"] - first_frame_time) / refresh_ms))
    return drawn


@pytest.mark.parametrize("clip", CLIPS)
def test_frames_are_drawn_on_their_due_refreshes(page, pacing_site, clip):
    fps, n = CLIPS[clip]
    page.add_init_script(LOG_DRAWS)
    _open(page, pacing_site)
    holds = []
    for trial in range(3):
        page.evaluate("() => { window.drawLog = []; }")
        result = page.evaluate("([u, l]) => presentCanvas(u, l)",
                               [f"/clips/{clip}.mp4", f"t{trial}"])
        refresh = result["refresh_ms"]
        assert refresh == pytest.approx(1000 / 60, abs=0.5)  # headless Chromium's 60 Hz
        due = schedule(n, fps, refresh)
        drawn = _draw_refreshes(page.evaluate("() => window.drawLog"),
                                result["onset_detail"]["first_frame_raf_ms"], refresh)
        # What the test saw drawn is what the presenter recorded.
        late = sum(r > due[k] for k, r in drawn.items())
        assert result["frames_total"] == n
        assert result["frames_shown"] == len(drawn) + 1  # + frame 0, drawn before the onset
        assert result["frames_dropped"] == n - 1 - len(drawn)
        assert result["frames_late"] == late
        hold = min(drawn.values()) - due[1]
        assert result["frame0_hold_refreshes"] == hold
        holds.append(hold)
        assert set(drawn) <= set(range(1, n)) and n - 1 in drawn
        assert result["onset_method"] == "canvas-element-timing"
    # Frame 0 is not held: frame 1 comes on its due refresh. A main thread stalled by a
    # loaded machine may delay it in any one trial (the presenter then records it), never in
    # all of them, as a presenter that held frame 0 by design did.
    assert min(holds) == 0 and all(hold >= 0 for hold in holds), holds
    assert not page.js_errors


def test_the_clips_length_is_its_length_on_this_display(page, pacing_site):
    # At 165 Hz a 30-fps frame is held 6 refreshes (0.92 of the clip's rate): the 24 frames
    # end 873 ms after the onset, not at their nominal 800 ms, and the answer window after
    # the clip (trials/aot.js) counts from there.
    _open(page, pacing_site)
    page.evaluate(CLOCK, [165, False])
    got = page.evaluate("""async (url) => {
        const { openClip } = await import("/static/js/present.js");
        const stage = await openClip(url, { maxSize: { width: 320, height: 240 },
                                            presenter: "canvas" });
        const fields = stage.finish();
        stage.close();
        return { duration: stage.durationMs, ...fields };
    }""", "/clips/30fps.mp4")
    assert (got["frame_cadence"], got["refreshes_per_frame"]) == ("whole", 6)
    assert got["duration"] == pytest.approx(24 * 6 * 1000 / 165)
    assert got["duration"] == pytest.approx(24 * 1000 / 30 / got["clip_speed"])
    assert not page.js_errors


def test_a_clip_too_large_to_hold_decoded_plays_in_a_video_element(page, pacing_site):
    _open(page, pacing_site)
    result = page.evaluate("""async (url) => {
        const { openClip } = await import("/static/js/present.js");
        const stage = await openClip(url, { maxSize: { width: 320, height: 240 }, maxBytes: 1 });
        document.getElementById("stage").replaceChildren(stage.element);
        await stage.ready();
        const onset = await stage.start();
        const fields = await stage.finish();
        stage.close();
        return { element: stage.element.tagName, ...onset, ...fields };
    }""", "/clips/30fps.mp4")
    assert result["element"] == "VIDEO" and result["onset_method"] == "element-timing"
    assert result["onset_time_ms"] > 0 and result["total_frames"] is not None
    for field in ("frames_total", "frames_shown", "frames_late", "frames_dropped",
                  "frame0_hold_refreshes", "refresh_ms"):
        assert result[field] is None
    assert not page.js_errors


def _frame_counts(app, token) -> dict[int, int]:
    """Trial index -> frame count of the clip it showed, from the catalog."""
    with app.app_context():
        rows = db.session.execute(
            select(Trial.trial_index, SourceClip.frame_count)
            .join(Session, Session.id == Trial.session_id)
            .join(Stimulus, Stimulus.id == Trial.stimulus_id)
            .join(SourceClip, SourceClip.id == Stimulus.source_clip_id)
            .where(Session.token == token)).all()
    return dict(rows)


def test_clip_trials_store_their_frame_pacing(site, simulated_aot):
    # The session is the one simulated_aot ran (tests/browser/conftest.py), which counted
    # the ImageBitmaps its page made.
    assert simulated_aot.code
    trials = stored(site.app, simulated_aot.token)["trials"]
    frame_counts = _frame_counts(site.app, simulated_aot.token)
    assert trials and set(frame_counts) == {t["trial_index"] for t in trials}
    # A catch trial shows a variant made in the shape of one of the session's clips
    # (webapp/stimuli/presentations.py), not its catalog file.
    clip_counts = {frame_counts[t["trial_index"]] for t in trials if t["trial_type"] != "catch"}
    for trial in trials:
        extra = trial["extra"]
        if trial["trial_type"] == "catch":
            assert extra.get("frames_total") in clip_counts, extra
        else:
            assert extra.get("frames_total") == frame_counts[trial["trial_index"]], extra
        assert trial["onset_method"].startswith("canvas-"), trial
        assert extra["presenter"] == "worker", extra  # Chromium has OffscreenCanvas and worker rAF
        for field in ("frames_shown", "frames_late", "frames_dropped", "frame0_hold_refreshes"):
            assert isinstance(extra[field], int) and extra[field] >= 0, (field, extra)
        assert extra["frames_shown"] + extra["frames_dropped"] <= extra["frames_total"]
        assert 5 < extra["refresh_ms"] < 50
    assert min(t["extra"]["frame0_hold_refreshes"] for t in trials) == 0  # not held by design
    # Every decoded frame was freed when its trial ended.
    assert simulated_aot.bitmaps >= sum(t["extra"]["frames_total"] for t in trials)
    assert simulated_aot.bitmaps_freed
    assert not simulated_aot.js_errors


# A clip shown by `presenter` while the main thread is held for BLOCK_MS from right after the
# reveal: which frames were drawn during the hold (page clock), and the trial's fields.
BLOCKED_TRIAL = """async ([url, presenter, blockMs]) => {
  const { openClip } = await import("/static/js/present.js");
  const stage = await openClip(url, { maxSize: { width: 320, height: 240 }, presenter });
  const draws = [];
  if (stage.context) {
    const draw = stage.context.drawImage.bind(stage.context);
    stage.context.drawImage = (...args) => { draw(...args); draws.push([performance.now()]); };
  }
  document.getElementById("stage").replaceChildren(stage.element);
  await stage.ready();
  let held = null;
  const onset = await stage.start({ onFirstFrame: () => setTimeout(() => {
    const start = performance.now();
    while (performance.now() < start + blockMs);
    held = [start, performance.now()];
  }, 0) });
  await new Promise((resolve) => setTimeout(resolve, stage.durationMs + 200));
  const fields = await stage.finish();
  stage.close();
  const times = stage.draws ? stage.draws.map(([time]) => time) : draws.map(([time]) => time);
  return { ...onset, ...fields, held, during: times.filter((t) => t > held[0] && t < held[1]) };
}"""
BLOCK_MS = 300


def test_the_worker_presenter_draws_while_the_main_thread_is_held(page, pacing_site):
    _open(page, pacing_site)
    result = page.evaluate(BLOCKED_TRIAL, ["/clips/60fps.mp4", "worker", BLOCK_MS])
    assert result["presenter"] == "worker"
    assert result["onset_method"] == "canvas-element-timing"
    # 300 ms at 60 fps is 18 frames: the worker goes on drawing while the main thread is
    # held, past any frame queued before the hold began (how many a loaded machine lets it
    # draw is bench/frame_pacing.py's to measure).
    held_from = result["held"][0]
    assert any(t > held_from + 3 * 1000 / 60 for t in result["during"]), result
    assert result["frames_total"] == CLIPS["60fps"][1]
    assert result["refresh_ms"] == pytest.approx(1000 / 60, abs=0.5)
    # The main-thread canvas draws nothing while its thread is held: the same hold is real.
    canvas = page.evaluate(BLOCKED_TRIAL, ["/clips/60fps.mp4", "canvas", BLOCK_MS])
    assert canvas["presenter"] == "canvas" and canvas["during"] == []
    assert not page.js_errors


def test_without_offscreen_canvas_the_main_thread_canvas_presents(page, pacing_site):
    # WebKit before Safari 16.4 has no OffscreenCanvas: the default presenter falls back.
    page.add_init_script("delete HTMLCanvasElement.prototype.transferControlToOffscreen;")
    _open(page, pacing_site)
    result = page.evaluate(BLOCKED_TRIAL, ["/clips/30fps.mp4", "worker", 0])
    assert result["presenter"] == "canvas"
    assert result["frames_total"] == CLIPS["30fps"][1] and result["frames_shown"] > 1
    assert not page.js_errors


# The worker presenter's "warm" never reaches the page (a worker that stopped answering, or
# a tab hidden while it warmed up: no animation frames there).
WORKER_NEVER_WARM = """(() => {
  const Real = window.Worker;
  window.workersMade = 0;
  window.Worker = class extends Real {
    constructor(...args) { super(...args); window.workersMade += 1; }
    addEventListener(type, listener, ...rest) {
      const kept = (event) => { if (event.data?.type !== "warm") listener(event); };
      super.addEventListener(type, type === "message" ? kept : listener, ...rest);
    }
  };
})();"""


def test_a_worker_that_never_warms_up_hands_the_clip_to_the_main_thread(page, pacing_site):
    # The frames went to the worker: the main-thread canvas decodes the clip again and shows
    # it, and later trials do not wait for a worker again (they each waited 10 s).
    page.add_init_script(WORKER_NEVER_WARM)
    _open(page, pacing_site)
    first = page.evaluate("presentCanvas('/clips/30fps.mp4', 'never-warm', true, 'worker')")
    assert first["presenter"] == "canvas"
    assert first["frames_total"] == CLIPS["30fps"][1] and first["frames_shown"] > 1
    made = page.evaluate("window.workersMade")
    second = page.evaluate("presentCanvas('/clips/30fps.mp4', 'next', true, 'worker')")
    assert second["presenter"] == "canvas"
    assert page.evaluate("window.workersMade") == made >= 1  # no worker tried (and waited for) again
    assert second["prepare_ms"] < 9000  # nor the 10 s waited for another reason
    assert not page.js_errors


# The first `window.lateFrames` animation-frame callbacks after a trial's start mark begin
# 12 ms into their frame (0.7 of a 60-Hz refresh): a main thread busy as the reveal's frame
# begins. `window.lateTimes`: those frames' times.
LATE_FRAMES = """(() => {
  const request = window.requestAnimationFrame.bind(window);
  window.lateFrames = 0;
  window.lateTimes = [];
  window.requestAnimationFrame = (callback) => request((time) => {
    if (window.lateFrames > 0 && performance.getEntriesByType("mark").length > 0) {
      window.lateFrames -= 1;
      window.lateTimes.push(time);
      const end = performance.now() + 12;
      while (performance.now() < end);
    }
    callback(time);
  });
})();"""
REVEAL = """async ([u, presenter, late]) => {
  window.lateFrames = late;
  window.lateTimes = [];
  const result = await presentCanvas(u, "t", true, presenter);
  return { ...result, late_times: window.lateTimes };
}"""


@pytest.mark.parametrize("presenter", ["worker", "canvas"])
def test_frame_0_waits_for_an_animation_frame_that_starts_on_time(page, pacing_site, presenter):
    # A reveal whose frame began late committed late: frame 0 reached the screen a refresh
    # after the time the presenter counts from, and was shown a refresh short or not at all
    # (bench/frame_pacing.py). The two late frames are passed over (and any a loaded machine
    # makes late too), the reveal is in a later one.
    page.add_init_script(LATE_FRAMES)
    _open(page, pacing_site)
    result = page.evaluate(REVEAL, ["/clips/60fps.mp4", presenter, 2])
    assert result["presenter"] == presenter
    detail = result["onset_detail"]
    assert len(result["late_times"]) == 2
    assert detail["first_frame_raf_ms"] > max(result["late_times"])
    assert 2 <= detail["reveal_deferred_frames"] <= 6
    assert result["onset_time_ms"] > detail["first_frame_raf_ms"]
    # A main thread late in every frame still gets its clip, six frames (100 ms) on.
    result = page.evaluate(REVEAL, ["/clips/60fps.mp4", presenter, 1000])
    assert result["onset_detail"]["reveal_deferred_frames"] == 6
    assert result["frames_total"] == CLIPS["60fps"][1] and result["frames_shown"] > 1
    assert not page.js_errors


# The bench page's <video> trial (bench/frame_pacing.py's baseline) played at a sixteenth of
# its rate: the 0.5-s clip takes 8 s, as a slow engine's playback might.
SLOW_PLAYBACK = """(() => {
  const play = HTMLMediaElement.prototype.play;
  HTMLMediaElement.prototype.play = function () {
    this.playbackRate = 0.0625;
    return play.call(this);
  };
})();"""
# Playback that stops for good a moment after it starts.
STOPPED_PLAYBACK = """(() => {
  const play = HTMLMediaElement.prototype.play;
  HTMLMediaElement.prototype.play = function () {
    setTimeout(() => this.pause(), 100);
    return play.call(this);
  };
})();"""


def test_the_bench_video_trial_waits_for_slow_playback_to_end(page, pacing_site):
    page.add_init_script(SLOW_PLAYBACK)
    _open(page, pacing_site)
    result = page.evaluate("presentVideo('/clips/60fps.mp4', 'slow')")
    assert result["video_frames"][-1][1] > 0.4  # it played to the clip's last frames
    assert not page.js_errors


def test_the_bench_video_trial_reports_a_stalled_video_with_its_state(page, pacing_site):
    page.add_init_script(STOPPED_PLAYBACK)
    _open(page, pacing_site)
    with pytest.raises(Exception, match=r"the video stalled: currentTime .*paused true"):
        page.evaluate("presentVideo('/clips/60fps.mp4', 'stopped')")
