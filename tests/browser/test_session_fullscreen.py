"""A trial that times out after the page left fullscreen is a technical event: the runner
offers it again once the participant is back in fullscreen, and it never fails the session.

Chromium lets a page enter fullscreen only from a user gesture, so the participant's real
clicks on the fullscreen buttons enter it; the test leaves it with document.exitFullscreen(),
as a browser that takes the answer key for itself (WebKitGTK on F) does.
"""
import pytest

from tests.browser.participant import (WAITING, answer, assert_every_trial_once, enter,
                                       instructed_key, run_by_hand, screen_state, stored,
                                       wait_change)

pytestmark = pytest.mark.browser

IS_FULLSCREEN = "() => Boolean(document.fullscreenElement)"
CLIP_OF = "body[data-screen=clip][data-onset][data-trial-index='{index}']"


def first_main_catch(site, token) -> int:
    schedule = stored(site.app, token)["schedule"]
    return min(t["trial_index"] for t in schedule
               if t["trial_type"] == "catch" and t["block"] != "practice")


def run_until_clip(page, site, token, index: int, limit: int = 200) -> None:
    """Answers every screen by hand until trial ``index``'s clip is on screen."""
    state = screen_state(page)
    for _ in range(limit):
        if state["screen"] == "clip" and state["onset"] is not None \
                and int(state["trial"]) == index:
            return
        if state["screen"] not in WAITING:
            answer(page, state, site=site, token=token)
        state = wait_change(page, state)
    raise AssertionError(f"trial {index} never showed, stuck at {state}")


def leave_fullscreen_and_wait_out(page) -> str:
    """Leaves fullscreen during the clip, presses nothing; returns the screen after the trial."""
    assert page.evaluate(IS_FULLSCREEN), "the block did not start in fullscreen"
    page.evaluate("() => document.exitFullscreen()")
    page.wait_for_function("() => document.body.dataset.screen !== 'clip'", timeout=30_000)
    return screen_state(page)["screen"]


def catch_row(site, token, index):
    data = stored(site.app, token)
    return data, next(t for t in data["trials"] if t["trial_index"] == index)


def test_a_catch_trial_missed_out_of_fullscreen_is_offered_again(page, site):
    token = enter(page, site, "aot", "fullscreen-catch-1")
    catch = first_main_catch(site, token)
    run_until_clip(page, site, token, catch)
    after = leave_fullscreen_and_wait_out(page)
    assert after == "fullscreen-lost", f"the timed-out trial was not offered again ({after})"
    page.click("#fullscreen-return")  # the click is the gesture that re-enters fullscreen
    page.wait_for_selector(CLIP_OF.format(index=catch))
    assert page.evaluate(IS_FULLSCREEN)
    page.keyboard.press(instructed_key(site.app, token, catch))
    run_by_hand(page, site=site, token=token)

    data, row = catch_row(site, token, catch)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    assert row["response"] is not None and row["correct"], "the answer to the re-offer was lost"
    assert row["extra"]["timed_out"] is False and row["extra"]["technical"] is False
    assert row["extra"]["technical_events"] == [
        {"kind": "fullscreen_exited_timeout", "presentation": 1}]
    assert not page.js_errors


def test_after_two_re_offers_the_trial_is_stored_technical_and_never_fails_the_session(
        page, site):
    token = enter(page, site, "aot", "fullscreen-catch-2")
    catch = first_main_catch(site, token)
    run_until_clip(page, site, token, catch)
    for _ in range(2):
        assert leave_fullscreen_and_wait_out(page) == "fullscreen-lost"
        page.click("#fullscreen-return")
        page.wait_for_selector(CLIP_OF.format(index=catch))
    after = leave_fullscreen_and_wait_out(page)
    assert after != "fullscreen-lost", "offered again past the cap"
    run_by_hand(page, site=site, token=token)

    data, row = catch_row(site, token, catch)
    assert data["status"] == "completed", "a technical catch trial failed the session"
    assert_every_trial_once(data)
    assert row["response"] is None and row["extra"]["technical"] is True
    assert [e["presentation"] for e in row["extra"]["technical_events"]] == [1, 2, 3]
    assert not page.js_errors
