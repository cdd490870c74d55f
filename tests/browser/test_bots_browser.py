"""Bots and people in the real runner (headless Chromium): the simulated participant, with
its human-like timing, is flagged by no plausibility rule; a browser script that clicks
through without waiting for the clips ends outside APPROVE (issue 25)."""
import time

import pytest
from sqlalchemy import select

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
from webapp.researcher.exports import APPROVE, prolific_review
from webapp.researcher.roster import roster_frame

pytestmark = pytest.mark.browser
PLAUSIBILITY_CODES = set(plausibility.TRIAL_REASONS) | set(plausibility.PARTICIPANT_REASONS)
SIMULATED_SESSIONS = 3


def test_simulated_attentive_participants_are_flagged_by_no_plausibility_rule(browser, site):
    for n in range(SIMULATED_SESSIONS):
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        token = enter(page, site, "aot", f"sim-plausible-{n}", simulate={"accuracy": 1})
        wait_done(page)
        context.close()
        assert stored(site.app, token)["status"] in ("completed", "failed_attention")
        assert flags(site.app, token) == [], f"session {n} flagged"


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
        decision = prolific_review(roster_frame(site.slugs["aot"])).get("clicker-1")
    assert decision is not None and decision[0] != APPROVE and decision[1]
