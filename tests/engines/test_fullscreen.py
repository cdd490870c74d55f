"""Fullscreen left during a trial, in Firefox ESR and WebKitGTK: a trial that times out after
the page left fullscreen is a technical event, offered again once the participant is back in
fullscreen, stored with its technical events, and never counted against the participant; an
exit counts wherever in the trial it happens, the fixation cross included.

The participant's real clicks on the fullscreen buttons enter fullscreen (both engines allow
it only from a user gesture); the tests leave it with document.exitFullscreen(), as WebKitGTK
itself does on Escape, f and F, keeping the key from the page.
"""
import pytest

from tests.browser.participant import WAITING, assert_every_trial_once, instructed_key, stored
from tests.browser.studies import QUICK_ORDERING_MS, open_quick_ordering
from tests.engines.participant import (
    answer,
    enter,
    order_with_keyboard,
    press_after_onset,
    run_by_hand,
    screen_state,
    wait_change,
)

# Selenium 4.51's own WebKitGTK driver class still passes remote_server_addr.
pytestmark = [pytest.mark.engines,
              pytest.mark.filterwarnings("ignore:setting remote_server_addr:DeprecationWarning")]

# Keys an engine keeps from the page in fullscreen (issue 15: WebKitGTK on Escape, f and F).
SWALLOWED = {"webkit": ("f",)}
IN_TRIAL = ("trial-start", "fixation", "clip", "frame_order")
# Leaves fullscreen once trial {index} shows {screen} (a clip: once its onset is known);
# "late" if the trial got past that screen first.
LEAVE_ON = """const d = document.body.dataset;
if (Number(d.trialIndex ?? -1) !== {index}) return "late";
const at = d.screen === "{screen}" && ("{screen}" !== "clip" || d.onset !== undefined);
if (!at) return {order}.indexOf(d.screen) > {order}.indexOf("{screen}") ? "late" : null;
if (!document.fullscreenElement) return "not in fullscreen";
document.exitFullscreen();
return "left";"""
AFTER_TRIAL = """const d = document.body.dataset;
if (Number(d.trialIndex) !== {index}) return `trial ${{d.trialIndex}}`;
return {in_trial}.includes(d.screen) ? null : d.screen;"""


def first_main(site, token, trial_type: str) -> int:
    schedule = stored(site.app, token)["schedule"]
    return min(t["trial_index"] for t in schedule
               if t["trial_type"] == trial_type and t["block"] != "practice")


def block_opener(tab, site, token) -> int:
    """The first trial of a main block: the block's Start click enters fullscreen, so it
    starts in fullscreen in every engine.  (WebKitGTK leaves fullscreen on F and swallows the
    key, so after an F answer the rest of a block runs out of fullscreen there.)  A catch
    trial where a block opens with one whose key the engine passes on to the page."""
    schedule = stored(site.app, token)["schedule"]
    blocks = {}
    for t in sorted(schedule, key=lambda t: t["trial_index"]):
        if t["block"] != "practice":
            blocks.setdefault(t["block"], t)
    openers = list(blocks.values())
    catches = [t for t in openers if t["trial_type"] == "catch"
               and t.get("instructed_key") not in SWALLOWED.get(tab.name, ())]
    return (catches or openers)[0]["trial_index"]


def answer_key(site, token, index: int) -> str:
    """A catch trial's instructed key; for a clip, "j" (any answer is one)."""
    return instructed_key(site.app, token, index) or "j"


def run_until_trial(tab, site, token, index: int, limit: int = 200) -> None:
    """Answers every screen by hand until trial ``index`` starts."""
    state = screen_state(tab)
    for _ in range(limit):
        if state["trial"] is not None and int(state["trial"]) == index:
            return
        if state["screen"] not in WAITING:
            answer(tab, state, site=site, token=token)
        state = wait_change(tab, state)
    raise AssertionError(f"{tab.name}: trial {index} never showed, stuck at {state}")


def leave_fullscreen_and_wait_out(tab, index: int, screen: str, timeout_s: float = 30) -> str:
    """Leaves fullscreen on trial ``index``'s ``screen``, presses nothing; returns the screen
    shown after the trial."""
    order = '["trial-start", "fixation", "clip"]' if screen != "frame_order" else \
        '["trial-start", "frame_order"]'
    left = tab.wait_for(LEAVE_ON.format(index=index, screen=screen, order=order), every_ms=5)
    assert left == "left", f"{tab.name}: could not leave fullscreen on {screen}: {left}"
    return tab.wait_for(AFTER_TRIAL.format(index=index, in_trial=list(IN_TRIAL)), timeout_s)


def back_to_fullscreen(tab, index: int) -> None:
    tab.click("#fullscreen-return")  # the click is the gesture that re-enters fullscreen
    tab.wait_for(f"""const d = document.body.dataset;
        return Number(d.trialIndex) === {index} && d.screen !== "fullscreen-lost";""")
    assert tab.evaluate("return Boolean(document.fullscreenElement);"), \
        f"{tab.name}: the return button did not re-enter fullscreen"


def row_of(data, index):
    return next(t for t in data["trials"] if t["trial_index"] == index)


def test_a_trial_missed_out_of_fullscreen_is_offered_again(tab, site):
    token = enter(tab, site, "aot", f"{tab.name}-fullscreen-catch")
    index = block_opener(tab, site, token)
    run_until_trial(tab, site, token, index)
    after = leave_fullscreen_and_wait_out(tab, index, "clip")
    assert after == "fullscreen-lost", f"{tab.name}: the timed-out trial was not offered again"
    back_to_fullscreen(tab, index)
    tab.wait_for("return document.body.dataset.onset !== undefined;")
    press_after_onset(tab, answer_key(site, token, index))
    run_by_hand(tab, site=site, token=token)

    data = stored(site.app, token)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    row = row_of(data, index)
    assert row["response"] is not None, "the answer to the re-offer was lost"
    assert row["correct"] or row["trial_type"] != "catch"
    assert row["extra"]["timed_out"] is False and row["extra"]["technical"] is False
    assert row["extra"]["technical_events"] == [
        {"kind": "fullscreen_exited_timeout", "presentation": 1}]
    assert tab.errors() == []


def test_exits_during_the_fixation_count_and_never_fail_the_session(tab, site):
    # Before the fix the monitor started with the clip, so an exit during the fixation cross
    # (where WebKitGTK takes an early F press) made a plain miss of the catch trial.
    token = enter(tab, site, "aot", f"{tab.name}-fullscreen-fixation")
    index = block_opener(tab, site, token)
    run_until_trial(tab, site, token, index)
    for screen in ("fixation", "fixation"):
        after = leave_fullscreen_and_wait_out(tab, index, screen)
        assert after == "fullscreen-lost", \
            f"{tab.name}: an exit during the {screen} was not a technical event ({after})"
        back_to_fullscreen(tab, index)
    after = leave_fullscreen_and_wait_out(tab, index, "clip")
    assert after != "fullscreen-lost", "offered again past the cap"
    run_by_hand(tab, site=site, token=token)

    data = stored(site.app, token)
    assert data["status"] == "completed", "a technical trial failed the session"
    assert_every_trial_once(data)
    row = row_of(data, index)
    assert row["response"] is None and row["extra"]["technical"] is True
    assert [e["presentation"] for e in row["extra"]["technical_events"]] == [1, 2, 3]
    assert tab.errors() == []


def test_a_frame_ordering_trial_timed_out_out_of_fullscreen_is_offered_again(tab, site):
    kind = open_quick_ordering(site)
    token = enter(tab, site, kind, f"{tab.name}-fullscreen-ordering")
    index = first_main(site, token, "frame_order")
    run_until_trial(tab, site, token, index)
    after = leave_fullscreen_and_wait_out(tab, index, "frame_order",
                                          timeout_s=QUICK_ORDERING_MS / 1000 + 20)
    assert after == "fullscreen-lost", f"{tab.name}: the timed-out trial was not offered again"
    back_to_fullscreen(tab, index)
    tab.wait_for('return document.body.dataset.screen === "frame_order";')
    order_with_keyboard(tab)
    tab.click("#order-done")
    run_by_hand(tab, site=site, token=token)

    data = stored(site.app, token)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    extra = row_of(data, index)["extra"]
    assert extra["timed_out"] is False and extra["technical"] is False and extra["moves"]
    assert extra["technical_events"] == [{"kind": "fullscreen_exited_timeout", "presentation": 1}]
    assert tab.errors() == []


IS_FULLSCREEN = "return Boolean(document.fullscreenElement);"
ESCAPE = "\ue00c"  # WebDriver's Escape key


def until_feedback_in_fullscreen(tab, site, token, tries: int = 10) -> int:
    """Answers by hand until the feedback of a practice trial that another one follows shows
    in fullscreen; returns the trial's index.  (WebKitGTK leaves fullscreen on a real F, so
    an F trial may end outside.)"""
    last = max(t["trial_index"] for t in stored(site.app, token)["schedule"]
               if t["block"] == "practice")
    for _ in range(tries):
        run_by_hand(tab, until="feedback", site=site, token=token)
        state = screen_state(tab)
        if int(state["trial"]) < last and tab.evaluate(IS_FULLSCREEN):
            return int(state["trial"])
        wait_change(tab, state)
    raise AssertionError(f"{tab.name}: no feedback shown in fullscreen")


def test_an_exit_between_trials_asks_back_before_the_next_trial(tab, site):
    # The monitor counted an exit only if its trial started in fullscreen: after an exit during
    # a practice trial's feedback the next trials ran out of fullscreen, a timeout there a
    # plain miss.  The runner now asks the participant back before the next trial starts.
    if tab.name == "webkit":
        # WebKitGTK leaves fullscreen on every F answer, so whether a practice feedback shows
        # in fullscreen depends on the key mapping drawn: the test cannot set up its exit
        # reliably there (failed once in two clean-clone runs); Firefox and Chromium cover it.
        pytest.xfail("WebKitGTK: the exit cannot be placed reliably (F leaves fullscreen)")
    token = enter(tab, site, "aot", f"{tab.name}-fullscreen-between")
    before = until_feedback_in_fullscreen(tab, site, token)
    # A real Escape where the driver's key reaches the browser's own fullscreen handling
    # (WebKitGTK); puppeteer's Escape in Firefox reaches only the page, which then leaves.
    tab.press(ESCAPE if tab.name == "webkit" else "Escape")
    if tab.name == "webkit":
        assert tab.wait_for("return !document.fullscreenElement;", 2), "Escape kept fullscreen"
    elif tab.evaluate(IS_FULLSCREEN):
        tab.evaluate("document.exitFullscreen(); return true;")
    state = tab.wait_for("""const d = document.body.dataset;
        return d.screen !== "feedback" ? {screen: d.screen, trial: d.trialIndex} : null;""")
    assert state["screen"] == "fullscreen", f"{tab.name}: the next trial started outside ({state})"
    assert int(state["trial"]) == before, "a trial started before the participant was back"
    tab.click("#fullscreen-go")  # the click is the gesture that re-enters fullscreen
    tab.wait_for('return document.body.dataset.screen !== "fullscreen";')
    assert tab.evaluate(IS_FULLSCREEN), f"{tab.name}: the button did not re-enter fullscreen"
    run_by_hand(tab, site=site, token=token, limit_s=300)

    data = stored(site.app, token)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    after = row_of(data, before + 1)
    assert after["extra"]["technical_events"] or after["extra"]["fullscreen_exited"] is False
    assert tab.errors() == []
