"""The timing-quality score (experiments/timing_quality.py) on whole sessions in headless
Chromium: a quiet one keeps clear of the rule, and a page whose main thread is janked and
whose CPU is throttled scores lower, from nothing but what its trials store.

Jank alone (30 ms every 100 ms) once scored the same as the quiet session of its run: the
page's own account sees few of the refreshes it misses in headless Chromium
(docs/measurements.md). Even janked and throttled 4x at once it scored above a quiet
session on a loaded machine (0.979 against 0.944 in a merged test run), so the disturbed
session here holds the main thread 120 ms of every 150: seven refreshes at a time, which
no account of the page can miss. The issue's 30-ms jank is measured in bench/.

A held main thread no longer delays the frames the worker presenter draws
(static/js/present_worker.js), so the disturbed session here runs on the main-thread canvas,
the presenter of engines without OffscreenCanvas, as such an engine's janked session would."""
from contextlib import contextmanager

import pytest

from experiments.exclusions import ExclusionRules, participant_reasons
from experiments.timing_quality import REASON, session_score
from tests.browser.participant import enter, stored, wait_done
from tests.conftest import VIEWPORT

pytestmark = pytest.mark.browser

# A quiet session on this 2-core machine shared with other work scored 0.99 (load 11); the
# threshold docs/researcher-guide.md suggests is below that.
THRESHOLD = 0.9
# A page script that holds the main thread 120 ms out of every 150.
JANK = """setInterval(() => {
  const until = performance.now() + 120;
  while (performance.now() < until) { /* busy: the main thread is held */ }
}, 150);"""
# How much lower the disturbed session scores, at the least: far above run-to-run noise.
MARGIN = 0.2
# The page of an engine without OffscreenCanvas: static/js/present.js falls back to the canvas.
NO_OFFSCREEN = "delete HTMLCanvasElement.prototype.transferControlToOffscreen;"
# Answers after each clip has played out, so every frame of it falls due.
WATCH_WHOLE_CLIPS = {"minRtMs": 700, "maxRtMs": 750}


@contextmanager
def fresh_page(browser):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page, errors
    finally:
        context.close()


def session_trials(browser, site, name, jank=False, throttle=None):
    """A simulated arrow-of-time session in its own page; its stored trials."""
    with fresh_page(browser) as (page, errors):
        if jank:
            page.add_init_script(NO_OFFSCREEN)
            page.add_init_script(JANK)
        if throttle:
            page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate",
                                                    {"rate": throttle})
        token = enter(page, site, "aot", name, simulate=WATCH_WHOLE_CLIPS)
        assert wait_done(page, timeout_s=180)
        assert not errors
    return stored(site.app, token)["trials"]


def test_jank_and_throttling_lower_the_score_and_a_quiet_session_keeps_clear(browser, site):
    quiet = session_trials(browser, site, "tq-quiet")
    disturbed = session_trials(browser, site, "tq-disturbed", jank=True, throttle=4)
    scores = {"quiet": session_score(quiet), "disturbed": session_score(disturbed)}
    assert scores["quiet"] >= THRESHOLD, scores
    # The frame counts the browser reports agree with the clips the server served (a catch
    # trial's variant included): no trial of a quiet session is technical for them.
    assert [t["extra"]["technical_reasons"] for t in quiet
            if t["extra"].get("technical_reasons")] == []
    assert REASON not in participant_reasons(quiet, ExclusionRules(min_timing_quality=THRESHOLD))
    assert scores["disturbed"] < scores["quiet"] - MARGIN, scores
    assert REASON in participant_reasons(disturbed,
                                         ExclusionRules(min_timing_quality=THRESHOLD))
    assert {t["extra"]["presenter"] for t in disturbed} == {"canvas"}
