"""A trial during which the page left fullscreen is a technical event, whether it timed out
or was answered: the runner offers it again once the participant is back in fullscreen, and
it never fails the session.  An exit counts wherever in the trial it happens (the fixation
cross included), and in both trial types.  tests/engines/test_fullscreen.py runs the same in
Firefox ESR and WebKitGTK.

Chromium lets a page enter fullscreen only from a user gesture, so the participant's real
clicks on the fullscreen buttons enter it; the test leaves it with document.exitFullscreen(),
as a browser that takes the answer key for itself (WebKitGTK on F) does.
"""
import pytest

from tests.browser.participant import (
    WAITING,
    answer,
    assert_every_trial_once,
    enter,
    instructed_key,
    order_with_keyboard,
    run_by_hand,
    screen_state,
    stored,
    wait_change,
)
from tests.factories import QUICK_ORDERING_MS, open_quick_ordering

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


def exit_twice_then_reload(page, site, token, index: int) -> None:
    """The reviewer's sequence: leave fullscreen on the trial, come back, leave again, and
    reload on the "fullscreen lost" screen; then run until the trial shows once more."""
    run_until_clip(page, site, token, index)
    assert leave_fullscreen_and_wait_out(page) == "fullscreen-lost"
    page.click("#fullscreen-return")
    page.wait_for_selector(CLIP_OF.format(index=index))
    assert leave_fullscreen_and_wait_out(page) == "fullscreen-lost"
    page.reload()
    run_until_clip(page, site, token, index)


def test_a_reload_keeps_the_re_offers_already_made(page, site):
    # Review 15b D1: the events were kept only in memory, so after a reload the trial was
    # stored with technical_events [] and offered three more times (unbounded looks).
    token = enter(page, site, "aot", "fullscreen-reload-1")
    catch = first_main_catch(site, token)
    exit_twice_then_reload(page, site, token, catch)
    page.keyboard.press(instructed_key(site.app, token, catch))
    run_by_hand(page, site=site, token=token)

    data, row = catch_row(site, token, catch)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    assert row["extra"]["restarted"] is True and row["extra"]["technical"] is False
    assert row["extra"]["technical_events"] == [
        {"kind": "fullscreen_exited_timeout", "presentation": 1},
        {"kind": "fullscreen_exited_timeout", "presentation": 2}]
    assert not page.js_errors


def test_after_a_reload_the_third_exit_makes_the_trial_technical(page, site):
    token = enter(page, site, "aot", "fullscreen-reload-2")
    catch = first_main_catch(site, token)
    exit_twice_then_reload(page, site, token, catch)
    assert leave_fullscreen_and_wait_out(page) != "fullscreen-lost", "offered again past the cap"
    run_by_hand(page, site=site, token=token)

    data, row = catch_row(site, token, catch)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    assert row["extra"]["technical"] is True
    assert [e["presentation"] for e in row["extra"]["technical_events"]] == [1, 2, 3]
    assert not page.js_errors


def leave_fullscreen_and_answer(page, key: str) -> str:
    """Leaves fullscreen during the clip, then presses ``key`` (WebKitGTK's second F, or a
    key right after Escape); returns the screen after the trial."""
    assert page.evaluate(IS_FULLSCREEN), "the trial did not start in fullscreen"
    page.evaluate("() => document.exitFullscreen()")
    page.wait_for_function("() => !document.fullscreenElement")
    page.keyboard.press(key)
    page.wait_for_function("() => document.body.dataset.screen !== 'clip'", timeout=30_000)
    return screen_state(page)["screen"]


def other_key(page, key: str) -> str:
    return next(k for k in page.evaluate("() => window.chronoscope.session.response_keys")
                if k != key)


def test_a_clip_answered_after_leaving_fullscreen_is_offered_again(page, site):
    # Issue 15: WebKitGTK swallowed the first F and left fullscreen, and the second F was
    # stored as a normal answer, its RT some 300 ms too long, with no technical event.
    token = enter(page, site, "aot", "fullscreen-answer-1")
    catch = first_main_catch(site, token)
    key = instructed_key(site.app, token, catch)
    run_until_clip(page, site, token, catch)
    after = leave_fullscreen_and_answer(page, key)
    assert after == "fullscreen-lost", f"the answer out of fullscreen was stored ({after})"
    page.click("#fullscreen-return")
    page.wait_for_selector(CLIP_OF.format(index=catch))
    assert page.evaluate(IS_FULLSCREEN)
    page.keyboard.press(key)
    run_by_hand(page, site=site, token=token)

    data, row = catch_row(site, token, catch)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    assert row["correct"], "the answer to the re-offer was lost"
    extra = row["extra"]
    assert extra["fullscreen_exited"] is False and extra["technical"] is False
    assert extra["technical_events"] == [{"kind": "fullscreen_exited_answer", "presentation": 1}]
    assert not page.js_errors


def test_answered_out_of_fullscreen_every_time_the_trial_is_technical(page, site):
    # Answered out of fullscreen on every presentation, and wrongly: the answer is stored for
    # the record but flagged technical, so the missed attention check fails nothing.
    token = enter(page, site, "aot", "fullscreen-answer-2")
    catch = first_main_catch(site, token)
    run_until_clip(page, site, token, catch)
    wrong = other_key(page, instructed_key(site.app, token, catch))
    for _ in range(2):
        assert leave_fullscreen_and_answer(page, wrong) == "fullscreen-lost"
        page.click("#fullscreen-return")
        page.wait_for_selector(CLIP_OF.format(index=catch))
    assert leave_fullscreen_and_answer(page, wrong) != "fullscreen-lost", "offered past the cap"
    run_by_hand(page, site=site, token=token)

    data, row = catch_row(site, token, catch)
    assert data["status"] == "completed", "a technical catch answer failed the session"
    assert_every_trial_once(data)
    assert row["response"] is not None and not row["correct"]
    assert row["extra"]["technical"] is True and row["extra"]["fullscreen_exited"] is True
    assert [e["kind"] for e in row["extra"]["technical_events"]] == \
        ["fullscreen_exited_answer"] * 3
    assert not page.js_errors


# Leaves fullscreen from inside the page as soon as trial `index` shows `screen`.
LEAVE_ON = """([index, screen]) => {
    const d = document.body.dataset;
    if (Number(d.trialIndex) !== index || d.screen !== screen) return false;
    if (document.fullscreenElement) document.exitFullscreen();
    return true;
}"""


def first_main(site, token, trial_type) -> int:
    schedule = stored(site.app, token)["schedule"]
    return min(t["trial_index"] for t in schedule
               if t["trial_type"] == trial_type and t["block"] != "practice")


def run_until_trial(page, site, token, index: int, limit: int = 200) -> None:
    """Answers every screen by hand until trial ``index`` starts."""
    state = screen_state(page)
    for _ in range(limit):
        if state["trial"] is not None and int(state["trial"]) == index:
            return
        if state["screen"] not in WAITING:
            answer(page, state, site=site, token=token)
        state = wait_change(page, state)
    raise AssertionError(f"trial {index} never showed, stuck at {state}")


def leave_on(page, index: int, screen: str, timeout_s: float = 30) -> str:
    """Leaves fullscreen once trial ``index`` shows ``screen``; presses nothing; returns the
    screen after the trial."""
    assert page.evaluate(IS_FULLSCREEN), "the block did not start in fullscreen"
    page.wait_for_function(LEAVE_ON, arg=[index, screen], polling=5)
    page.wait_for_function(
        """([index, screen]) => Number(document.body.dataset.trialIndex) !== index
            || !["trial-start", "fixation", "clip", "frame_order"].includes(document.body.dataset.screen)""",
        arg=[index, screen], timeout=timeout_s * 1000)
    return screen_state(page)["screen"]


def test_an_exit_during_the_fixation_cross_counts(page, site):
    # The monitor used to start with the clip: leaving fullscreen during the fixation (where
    # WebKitGTK takes an early F press) made the timeout a plain miss of the catch trial.
    token = enter(page, site, "aot", "fullscreen-fixation")
    catch = first_main(site, token, "catch")
    run_until_trial(page, site, token, catch)
    after = leave_on(page, catch, "fixation")
    assert after == "fullscreen-lost", f"an exit during the fixation was not counted ({after})"
    page.click("#fullscreen-return")
    page.wait_for_selector(CLIP_OF.format(index=catch))
    page.keyboard.press(instructed_key(site.app, token, catch))
    run_by_hand(page, site=site, token=token)

    data, row = catch_row(site, token, catch)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    assert row["correct"] and row["extra"]["technical"] is False
    assert row["extra"]["technical_events"] == [
        {"kind": "fullscreen_exited_timeout", "presentation": 1}]
    assert not page.js_errors


def test_a_frame_ordering_trial_timed_out_out_of_fullscreen_is_offered_again(page, site):
    token = enter(page, site, open_quick_ordering(site), "fullscreen-ordering")
    index = first_main(site, token, "frame_order")
    run_until_trial(page, site, token, index)
    after = leave_on(page, index, "frame_order", timeout_s=QUICK_ORDERING_MS / 1000 + 20)
    assert after == "fullscreen-lost", f"the timed-out trial was not offered again ({after})"
    page.click("#fullscreen-return")
    page.wait_for_selector(f"body[data-screen=frame_order][data-trial-index='{index}']")
    assert page.evaluate(IS_FULLSCREEN)
    order_with_keyboard(page)
    page.click("#order-done")
    run_by_hand(page, site=site, token=token)

    data, row = catch_row(site, token, index)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    extra = row["extra"]
    assert extra["timed_out"] is False and extra["technical"] is False and extra["moves"]
    assert extra["technical_events"] == [{"kind": "fullscreen_exited_timeout", "presentation": 1}]
    assert not page.js_errors


def test_an_exit_between_trials_asks_back_before_the_next_trial(page, site):
    # The monitor counted an exit only if its trial started in fullscreen: after an exit during
    # a practice trial's feedback the next trials ran out of fullscreen, a timeout there a
    # plain miss.  The runner now asks the participant back before the next trial starts.
    token = enter(page, site, "aot", "fullscreen-between")
    run_by_hand(page, until="feedback", site=site, token=token)
    before = int(screen_state(page)["trial"])
    assert page.evaluate(IS_FULLSCREEN), "the practice block did not start in fullscreen"
    # A real Escape does not leave fullscreen in headless Chromium (the browser, not the page,
    # handles it, and headless has no such handler): the page leaves it itself.
    page.keyboard.press("Escape")
    if page.evaluate(IS_FULLSCREEN):
        page.evaluate("() => document.exitFullscreen()")
    page.wait_for_function("() => document.body.dataset.screen !== 'feedback'")
    state = screen_state(page)
    assert state["screen"] == "fullscreen", f"the next trial started out of fullscreen ({state})"
    assert int(state["trial"]) == before, "a trial started before the participant was back"
    page.click("#fullscreen-go")  # the click is the gesture that re-enters fullscreen
    page.wait_for_function("() => document.body.dataset.screen !== 'fullscreen'")
    assert page.evaluate(IS_FULLSCREEN)
    run_by_hand(page, site=site, token=token)

    data = stored(site.app, token)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    after = next(t for t in data["trials"] if t["trial_index"] > before)
    assert after["extra"]["fullscreen_exited"] is False and not after["extra"]["technical_events"]
    assert not page.js_errors
