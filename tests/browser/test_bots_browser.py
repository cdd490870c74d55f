"""Bots and people in the real runner (headless Chromium): the simulated participant, with
its human-like timing, is flagged by no plausibility rule; a browser script that clicks
through without waiting for the clips ends outside APPROVE (issue 25)."""
import os
import time

import pytest
from sqlalchemy import select

from bench.harness.bots import record_outcome
from experiments import plausibility
from experiments.verdict import APPROVE
from tests.browser.participant import (
    WAITING,
    answer,
    enter,
    screen_state,
    stored,
    wait_change,
    wait_done,
)
from webapp.extensions import db
from webapp.models import Session
from webapp.researcher.prolific import prolific_review
from webapp.researcher.roster import roster_frame

pytestmark = pytest.mark.browser
PLAUSIBILITY_CODES = set(plausibility.TRIAL_REASONS) | set(plausibility.PARTICIPANT_REASONS)
# bench/bots.py runs more, several at once (the defaults keep the suite short: two at a
# time, as bench runs four, rather than 37 s one after another; three at once leave a loaded
# 2-core machine less margin on the server-clock checks).
SIMULATED_SESSIONS = int(os.environ.get("CHRONOSCOPE_SIMULATED_SESSIONS", "3"))
AT_ONCE = int(os.environ.get("CHRONOSCOPE_SIMULATED_AT_ONCE", "2"))


def test_simulated_attentive_participants_are_flagged_by_no_plausibility_rule(browser, site):
    """The built-in simulated participant (static/js/simulate.js: a key 300-700 ms after
    each onset, through the runner's own timing) runs whole sessions, ``AT_ONCE`` at a time."""
    waiting, running, flagged = list(range(SIMULATED_SESSIONS)), [], {}
    while waiting or running:
        while waiting and len(running) < AT_ONCE:
            n = waiting.pop(0)
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            page = context.new_page()
            running.append((n, context, page, enter(page, site, "aot", f"sim-plausible-{n}",
                                                    simulate={"accuracy": 1})))
        n, context, page, token = running.pop(0)
        wait_done(page)
        context.close()
        assert stored(site.app, token)["status"] in ("completed", "failed_attention")
        flagged[n] = flags(site.app, token)
        record_outcome("simulated attentive (real runner, Chromium)", f"sim-plausible-{n}",
                       stored(site.app, token)["status"], None, flagged[n])
    assert all(codes == [] for codes in flagged.values()), flagged


def flags(app, token: str) -> list:
    """The plausibility codes among a session's own reasons and its trials' reasons."""
    with app.app_context():
        session = db.session.scalars(select(Session).where(Session.token == token)).one()
        lists = [session.exclusion_reasons, *(t.exclusion_reasons for t in session.trials)]
    return [code for reasons in lists for code in reasons if code in PLAUSIBILITY_CODES]


# A script in the page (what a browser extension or an automation tool runs): on every trial
# it presses a response key the moment the screen changes and every 10 ms after, never
# waiting to see the clip, practice included (the page gets no practice answer).  Each press
# is a keydown and its keyup, as a real key's is: with keydowns alone the runner waited its
# longest for the key to come up (KEY_HOLD_MAX_MS, 5 s) on every trial before storing it.
CLICKER = """(() => {
  const press = () => {
    const screen = document.body && document.body.dataset.screen;
    const session = window.chronoscope && window.chronoscope.session;
    if (!session || (screen !== "fixation" && screen !== "clip")) return;
    const i = Number(document.body.dataset.trialIndex);
    const key = session.response_keys[i % 2];
    for (const type of ["keydown", "keyup"]) {
      document.dispatchEvent(new KeyboardEvent(type, { key, code: `Key${key.toUpperCase()}`,
        bubbles: true, cancelable: true }));
    }
  };
  setInterval(press, 10);
  new MutationObserver(press).observe(document.documentElement, { attributes: true,
    subtree: true, attributeFilter: ["data-onset", "data-screen"] });
})();"""


def click_through(page, site, token, limit_s: float = 120) -> None:
    """Answers the screens between trials as a person would; the page's script does the rest."""
    deadline = time.monotonic() + limit_s
    state = screen_state(page)
    while state["screen"] != "done":
        if time.monotonic() > deadline:
            raise AssertionError(f"the script is stuck at {state}")
        if state["screen"] not in WAITING and state["screen"] != "clip":
            answer(page, state, None, site, token)
        state = wait_change(page, state)


def test_a_browser_script_that_clicks_through_is_not_approved(page, site):
    page.add_init_script(CLICKER)
    token = enter(page, site, "aot", "clicker-1", prolific=True)
    click_through(page, site, token)
    with site.app.app_context():
        roster = roster_frame(site.slugs["aot"])
    decision = prolific_review(roster).get("clicker-1")
    row = roster[roster["subject_id"] == "clicker-1"].iloc[-1]
    record_outcome("headless browser clicking through", "clicker-1", row["status"], decision,
                   row["exclusion_reasons"])
    # its practice guesses may fail the gate: either way it ends with a reason, not paid
    assert row["status"] in ("completed", "failed_attention", "failed_practice")
    assert decision is not None and decision[0] != APPROVE and decision[1]
