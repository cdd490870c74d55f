"""Arrow-of-time sessions in headless Chromium: every trial stored exactly once, and what a
participant's keys and choices do.  The session answered by hand with real key presses is
written once for all three engines in tests/engines/test_sessions.py."""
import pytest

from tests.browser.participant import (
    answer_key,
    assert_every_trial_once,
    enter,
    run_by_hand,
    stored,
    wait_done,
)
from tests.factories import site_study, tiny_designs
from tests.waiting import hold
from webapp.participant import sessions

pytestmark = pytest.mark.browser


def test_simulated_session_stores_every_trial_once(site, simulated_aot):
    # The session is the one simulated_aot ran (tests/browser/conftest.py).
    data = stored(site.app, simulated_aot.token)
    # The robot answers catch trials at random, so it may fail them.
    assert simulated_aot.code and data["status"] in ("completed", "failed_attention")
    assert_every_trial_once(data)
    assert {t["trial_type"] for t in data["trials"]} >= {"aot"}
    assert not simulated_aot.js_errors


def test_auto_repeat_and_early_presses_are_not_responses(page, site):
    """A key held down since before the clip sends only auto-repeat events while the clip
    plays: none of them is an answer, so the trial times out."""
    token = enter(page, site, "aot", "repeat-aot-1")
    run_by_hand(page, until="block-intro", site=site, token=token)
    page.keyboard.down("f")  # pressed before the first trial: not a response
    page.click("#continue")
    page.wait_for_selector("body[data-screen=clip][data-onset]")
    page.keyboard.down("f")  # the key is still down: Playwright sends repeat=true
    page.wait_for_selector("body[data-screen=feedback]")
    assert "Too slow" in page.text_content(".feedback")
    page.keyboard.up("f")
    run_by_hand(page, site=site, token=token)
    data = stored(site.app, token)
    assert_every_trial_once(data)
    first = data["trials"][0]
    assert first["response"] is None and first["rt_ms"] is None


def test_keys_pressed_during_the_fixation_are_recorded_and_never_answer(page, site):
    """Issue 15: keys before the clip's onset were not recorded at all (the keys were
    collected only from the moment playback was requested).  Pressed during the fixation, the
    wrong key is stored as ignored input, t_ms before the onset, and the answer is the key
    pressed once the clip is on screen."""
    # A fixation long enough for the presses to land in it by state, not by how fast the
    # driver's round trips are on a loaded machine (the tiny design's is 300 ms).
    kind = site_study(site, "aot_long_fixation",
                      tiny_designs()["aot"].with_changes(fixation_ms=1500, max_clips=2))
    token = enter(page, site, kind, "fixation-keys-1")
    run_by_hand(page, until="block-intro", site=site, token=token)
    # Looked up before the fixation: the browser is never told the answer, and the server's
    # side takes longer than a fixation to ask.  A fresh session starts with trial 0.
    index = 0
    right = answer_key(site.app, token, index)
    wrong = next(k for k in page.evaluate("window.chronoscope.session.response_keys")
                 if k != right)
    page.click("#continue")
    page.wait_for_selector("body[data-screen=fixation]")
    assert int(page.evaluate("document.body.dataset.trialIndex")) == index
    page.keyboard.press(wrong)
    page.keyboard.press(wrong)
    assert page.evaluate("document.body.dataset.screen") == "fixation", \
        "the clip started before the presses: the test did not press during the fixation"
    page.wait_for_selector("body[data-screen=clip][data-onset]")
    # The participant answers 100 ms into the clip, so the clip must still be on screen then:
    # an early press that answered would have ended it (an absence, which no state shows).
    hold(100, page)
    assert page.evaluate("document.body.dataset.screen") == "clip"
    page.keyboard.press(right)
    run_by_hand(page, site=site, token=token)

    data = stored(site.app, token)
    assert_every_trial_once(data)
    row = next(t for t in data["trials"] if t["trial_index"] == index)
    assert row["correct"] and row["rt_ms"] > 100 and row["extra"]["key"] == right
    ignored = row["extra"]["ignored_inputs"]
    assert [i["kind"] for i in ignored] == ["key", "key"]
    assert all(i["t_ms"] < 0 for i in ignored)
    assert ignored[0]["t_ms"] <= ignored[1]["t_ms"]
    others = [t for t in data["trials"] if t["trial_index"] != index]
    assert all(t["extra"]["ignored_inputs"] == [] for t in others)
    assert not page.js_errors


def test_declining_consent_ends_with_its_own_code(page, site):
    token = enter(page, site, "aot", "no-consent-1")
    run_by_hand(page, until="consent")  # past the device check
    page.click("#consent-no")
    code = wait_done(page)
    assert stored(site.app, token)["status"] == "no_consent"
    assert page.evaluate("document.body.dataset.status") == "no_consent"
    with site.app.app_context():
        codes = sessions.completion_codes(site.slugs["aot"])
    assert code == codes["no_consent"] != codes["completed"]


def test_failed_practice_twice_ends_the_session(page, site):
    """The server appends a second practice block after a failed first attempt; failing that
    too ends the session with the failed-practice code, and no main trial runs."""
    token = enter(page, site, "aot", "bad-practice-1", simulate={"accuracy": 0})
    assert wait_done(page)
    data = stored(site.app, token)
    assert data["status"] == "failed_practice"
    assert {t["block"] for t in data["trials"]} == {"practice"}
    assert len(data["trials"]) == 4  # two attempts of two practice trials, each stored once
    assert set(data["per_index"].values()) == {1}
    assert not page.js_errors


def test_a_click_by_click_preview_waits_for_the_researcher(page, site):
    # A researcher's manual preview is a simulated session (never stored as data) that a person
    # answers: the robot must not click through it.
    enter(page, site, "aot", "preview-manual-1", simulate=True)
    page.goto(page.url + ("&" if "?" in page.url else "?") + "manual=1")
    page.wait_for_selector("body[data-screen=keyboard-check]")  # the first screen that asks
    # The robot answers within 30 ms of a screen: it must not have answered in 30 times that
    # (an absence, which no state shows).
    hold(1000, page)
    assert page.evaluate("() => document.body.dataset.screen") == "keyboard-check"
    assert not page.js_errors
