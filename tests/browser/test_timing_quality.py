"""The timing-quality score (experiments/timing_quality.py) on whole sessions in headless
Chromium: a quiet one keeps clear of the rule, and a page whose main thread is held and
whose CPU is throttled scores lower, from nothing but what its trials store.

The worker presenter (static/js/present_worker.js) counts its own frames and measures the
refresh on its own animation frames, so a held main thread no longer lowers its score except
by taking the CPU from it: janked 30 ms every 100 ms and throttled 4x, worker sessions
scored 0.931-1.000 in two runs, quiet ones 0.965-1.000 (docs/measurements.md). The
disturbed session here therefore runs on the main-thread canvas, the presenter of engines
without OffscreenCanvas, held 120 ms of every 150 (seven refreshes at a time, which no
account of the page can miss) and throttled.

The sessions run once for the module, in the conditions of bench/timing_quality.py that the
tests check, plus any that bench asks for (it runs this file once a round and collects each
session's summary).
"""
from contextlib import contextmanager

import pytest

from bench.timing_quality import CONDITIONS, conditions_asked, record_session
from experiments.exclusions import ExclusionRules, participant_reasons
from experiments.timing_quality import REASON, session_score
from tests.browser.participant import enter, stored, wait_done
from tests.conftest import VIEWPORT

pytestmark = pytest.mark.browser

# A quiet session on this 2-core machine shared with other work scored 0.99 (load 11); the
# threshold docs/researcher-guide.md suggests is below that.
THRESHOLD = 0.9
# How much lower the disturbed session scores, at the least: far above run-to-run noise.
MARGIN = 0.2
# The conditions the tests below read.
CHECKED = ("quiet", "canvas/held+throttled")
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


def session_trials(browser, site, condition: str, participant: str):
    """A simulated arrow-of-time session in its own page, in one of bench/timing_quality.py's
    conditions; its stored trials."""
    setup = CONDITIONS[condition]
    with fresh_page(browser) as (page, errors):
        for script in setup.init_scripts():
            page.add_init_script(script)
        if setup.throttle:
            page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate",
                                                    {"rate": setup.throttle})
        token = enter(page, site, "aot", participant, simulate=WATCH_WHOLE_CLIPS)
        assert wait_done(page, timeout_s=180)
        assert not errors
    trials = stored(site.app, token)["trials"]
    record_session(condition, trials)
    return trials


@pytest.fixture(scope="module")
def sessions(browser, site):
    """{condition: stored trials}, one session each, in the order bench asks for."""
    asked = conditions_asked()
    order = asked + [name for name in CHECKED if name not in asked]
    return {name: session_trials(browser, site, name, f"tq-{i}") for i, name in enumerate(order)}


def test_a_quiet_session_keeps_clear_of_the_rule(sessions):
    quiet = sessions["quiet"]
    assert session_score(quiet) >= THRESHOLD, session_score(quiet)
    # The frame counts the browser reports agree with the clips the server served (a catch
    # trial's variant included): no trial of a quiet session is technical for them.
    assert [t["extra"]["technical_reasons"] for t in quiet
            if t["extra"].get("technical_reasons")] == []
    assert REASON not in participant_reasons(quiet, ExclusionRules(min_timing_quality=THRESHOLD))
    assert {t["extra"]["presenter"] for t in quiet} == {"worker"}


def test_a_held_and_throttled_main_thread_canvas_scores_lower_and_breaks_the_rule(sessions):
    disturbed = sessions["canvas/held+throttled"]
    scores = {"quiet": session_score(sessions["quiet"]), "disturbed": session_score(disturbed)}
    assert scores["disturbed"] < scores["quiet"] - MARGIN, scores
    assert REASON in participant_reasons(disturbed,
                                         ExclusionRules(min_timing_quality=THRESHOLD))
    assert {t["extra"]["presenter"] for t in disturbed} == {"canvas"}
