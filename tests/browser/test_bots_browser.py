"""Bots and people in the real runner (headless Chromium): the simulated participant, with
its human-like timing, is flagged by no plausibility rule; a browser script that clicks
through without waiting for the clips ends outside APPROVE (issue 25)."""
import os
import time

import pytest
from sqlalchemy import select

from bench.harness.bots import record_outcome
from experiments import plausibility
from tests.browser.participant import (
    WAITING,
    answer,
    enter,
    practice_key,
    screen_state,
    stored,
    wait_change,
    wait_done,
)
from webapp.extensions import db
from webapp.models import Session
from webapp.researcher.prolific import APPROVE, prolific_review
from webapp.researcher.roster import roster_frame

pytestmark = pytest.mark.browser
PLAUSIBILITY_CODES = set(plausibility.TRIAL_REASONS) | set(plausibility.PARTICIPANT_REASONS)
# bench/bots.py runs more, several at once (the defaults keep the suite short).
SIMULATED_SESSIONS = int(os.environ.get("CHRONOSCOPE_SIMULATED_SESSIONS", "3"))
AT_ONCE = int(os.environ.get("CHRONOSCOPE_SIMULATED_AT_ONCE", "1"))


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


def click_through(page, site, token, limit_s: float = 120) -> None:
    """Answers every screen; on a trial, presses a key at once and again, never waiting for
    the clip's onset (practice from the answer the schedule publishes)."""
    deadline = time.monotonic() + limit_s
    state = screen_state(page)
    while state["screen"] != "done":
        if time.monotonic() > deadline:
            raise AssertionError(f"the script is stuck at {state}")
        if state["screen"] in ("fixation", "clip"):
            page.keyboard.press(practice_key(page))
            state = screen_state(page)
            continue
        if state["screen"] not in WAITING:
            answer(page, state, None, site, token)
        state = wait_change(page, state)


def test_a_browser_script_that_clicks_through_is_not_approved(page, site):
    token = enter(page, site, "aot", "clicker-1", prolific=True)
    click_through(page, site, token)
    data = stored(site.app, token)
    main = [t for t in data["trials"] if t["block"] != "practice"]
    assert main and all(t["rt_ms"] is None or t["rt_ms"] < 200 for t in main)
    with site.app.app_context():
        roster = roster_frame(site.slugs["aot"])
    decision = prolific_review(roster).get("clicker-1")
    row = roster[roster["subject_id"] == "clicker-1"].iloc[-1]
    record_outcome("headless browser clicking through", "clicker-1", row["status"], decision,
                   row["exclusion_reasons"])
    assert decision is not None and decision[0] != APPROVE and decision[1]
