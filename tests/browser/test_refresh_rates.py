"""The clip presenter at every display rate participants have (60 to 165 Hz), on synthetic
animation-frame clocks in the real browser: the measured refresh, how a clip's frames are laid
on the refreshes (a whole number of refreshes a frame within 10 % of the clip's rate, else a
pulldown at its own rate) and that a clock that never misses a refresh records no late or
dropped frame. What each trial stores of that choice is checked too."""
import pytest

pytestmark = pytest.mark.browser

RATES = (60, 75, 90, 120, 144, 165)
# (fps, Hz) -> how the frames are laid: whole refreshes a frame, or a pulldown.
EXPECTED = {
    (30, 60): ("whole", 2), (30, 75): ("pulldown", 2.5), (30, 90): ("whole", 3),
    (30, 120): ("whole", 4), (30, 144): ("whole", 5), (30, 165): ("whole", 6),
    (24, 60): ("pulldown", 2.5), (24, 75): ("whole", 3), (24, 90): ("whole", 4),
    (24, 120): ("whole", 5), (24, 144): ("whole", 6), (24, 165): ("whole", 7),
    (25, 60): ("pulldown", 2.4), (60, 75): ("pulldown", 1.25), (60, 144): ("pulldown", 2.4),
}
# A page clock at `hz`: requestAnimationFrame calls back once a task later with the next vsync
# time, jittered by up to a tenth of a refresh (callbacks that run late in their frame).
CLOCK = """([hz, jitter]) => {
  let vsync = 1000;
  let n = 0;
  window.requestAnimationFrame = (callback) => setTimeout(() => {
    vsync += 1000 / hz;
    n += 1;
    callback(vsync + (jitter ? ((n * 7919) % 11 - 5) / 50 * (1000 / hz) : 0));
  }, 0);
}"""


@pytest.fixture
def blank(page, site):
    page.goto(f"{site.base_url}/static/css/runner.css")  # any same-origin page
    return page


def presenter(page, body: str, *args):
    return page.evaluate(f"async (args) => {{ const m = await import('/static/js/present.js'); "
                         f"{body} }}", list(args))


@pytest.mark.parametrize("hz", RATES)
@pytest.mark.parametrize("jitter", [False, True], ids=["steady", "jittered"])
def test_every_rate_is_measured_and_paced_without_late_frames(blank, hz, jitter):
    blank.evaluate(CLOCK, [hz, jitter])
    got = presenter(blank, """
        const [hz, fpsList] = args;
        const refreshMs = await m.measureRefresh();
        const out = {refreshMs, clips: {}};
        for (const fps of fpsList) {
          const cadence = m.frameCadence(fps, refreshMs);
          const due = m.frameSchedule(30, fps, refreshMs);
          const pacing = new m.Pacing(due, cadence);
          // Refresh by refresh, as CanvasStage.tick counts them from the clock's times.
          for (let r = 1; !pacing.done && r < 10000; r++) pacing.advance(r);
          out.clips[fps] = {cadence, due, fields: pacing.fields(refreshMs)};
        }
        return out;""", hz, [24, 25, 30, 60])
    # A jittered clock's span is off by up to a fifth of a refresh over 12 steps.
    assert got["refreshMs"] == pytest.approx(1000 / hz, rel=0.02 if jitter else 0.001)
    for fps, clip in got["clips"].items():
        fps = int(fps)
        cadence, fields, due = clip["cadence"], clip["fields"], clip["due"]
        if (fps, hz) in EXPECTED and not jitter:
            kind, per_frame = EXPECTED[(fps, hz)]
            assert (cadence["frame_cadence"], cadence["refreshes_per_frame"]) == \
                (kind, pytest.approx(per_frame, rel=0.01)), (fps, hz)
        holds = [b - a for a, b in zip(due, due[1:])]
        if cadence["frame_cadence"] == "whole":
            assert set(holds) == {cadence["refreshes_per_frame"]}
            assert abs(cadence["clip_speed"] - 1) < 0.1
        else:  # the clip's own rate, each frame held the whole refreshes either side of it
            assert cadence["clip_speed"] == 1
            assert set(holds) <= {int(cadence["refreshes_per_frame"]),
                                  int(cadence["refreshes_per_frame"]) + 1} - {0}
            assert due[-1] == round(30 * hz / fps)
        assert fields["frames_late"] == fields["frames_dropped"] == 0
        assert fields["frames_shown"] == 30
        assert fields["frame_cadence"] == cadence["frame_cadence"]
        assert fields["clip_speed"] == pytest.approx(cadence["clip_speed"])
        assert fields["refreshes_per_frame"] == pytest.approx(cadence["refreshes_per_frame"])
