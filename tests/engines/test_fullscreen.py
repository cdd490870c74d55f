"""Fullscreen left during a trial, in Chromium, Firefox ESR and WebKitGTK: a trial during which
the page left fullscreen, timed out or answered, is a technical event, offered again once the
participant is back in fullscreen, stored with its technical events (a reload keeps them), and
never counted against the participant; an exit counts wherever in the trial it happens, the
fixation cross included, and in both trial types.  In WebKitGTK the reviewer's own case is
replayed with real keys: the first F leaves fullscreen and is kept from the page, the second F
reaches it.

The participant's real clicks on the fullscreen buttons enter fullscreen (every engine allows
it only from a user gesture); the tests leave it with document.exitFullscreen(), as WebKitGTK
itself does on Escape, f and F, keeping the key from the page.  An exit between trials makes
the runner ask the participant back before the next trial; in WebKitGTK that test leaves with
a real Escape, on a study whose keys (d, k) never leave fullscreen themselves (a real Escape
does not leave fullscreen in headless Chromium, nor does puppeteer's in Firefox: there the page
leaves it itself).
"""
import pytest

from tests.browser.participant import answer_key as correct_key
from tests.browser.participant import assert_every_trial_once, instructed_key, stored
from tests.engines.conftest import EVERY_ENGINE
from tests.engines.participant import (
    PRESS_AFTER_ONSET_MS,
    SWALLOWED,
    enter,
    main_clips_answerable,
    order_with_keyboard,
    other_key,
    practice_key,
    press_after_onset,
    run_by_hand,
    run_until,
    screen_state,
)
from tests.factories import QUICK_ORDERING_MS, SAFE_KEYS, open_quick_ordering, open_short_aot

# Selenium 4.51's own WebKitGTK driver class still passes remote_server_addr.
pytestmark = [pytest.mark.engines,
              pytest.mark.filterwarnings("ignore:setting remote_server_addr:DeprecationWarning")]

EVERY = pytest.mark.parametrize("tab", EVERY_ENGINE, indirect=True)
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
    """A catch trial's instructed key; for a clip, the correct one (any answer is one)."""
    return instructed_key(site.app, token, index) or correct_key(site.app, token, index)


def run_until_trial(tab, site, token, index: int) -> None:
    """Answers every screen by hand until trial ``index`` is on screen (after a reload the
    runner first asks for fullscreen again, on a screen of the same trial index)."""
    run_until(tab, lambda s: s["trial"] is not None and int(s["trial"]) == index
              and s["screen"] in IN_TRIAL, site=site, token=token)


def leave_fullscreen_and_wait_out(tab, index: int, screen: str, timeout_s: float = 30) -> str:
    """Leaves fullscreen on trial ``index``'s ``screen``, presses nothing; returns the screen
    shown after the trial."""
    order = '["trial-start", "fixation", "clip"]' if screen != "frame_order" else \
        '["trial-start", "frame_order"]'
    left = tab.wait_for(LEAVE_ON.format(index=index, screen=screen, order=order), every_ms=5)
    assert left == "left", f"{tab.name}: could not leave fullscreen on {screen}: {left}"
    return tab.wait_for(AFTER_TRIAL.format(index=index, in_trial=list(IN_TRIAL)), timeout_s)


def leave_and_answer(tab, index: int, key: str) -> str:
    """Leaves fullscreen on trial ``index``'s clip, then presses ``key`` (WebKitGTK's second
    F, or a key right after Escape); returns the screen shown after the trial."""
    order = '["trial-start", "fixation", "clip"]'
    left = tab.wait_for(LEAVE_ON.format(index=index, screen="clip", order=order), every_ms=5)
    assert left == "left", f"{tab.name}: could not leave fullscreen on the clip: {left}"
    tab.wait_for("return !document.fullscreenElement;", 5)
    press_after_onset(tab, key)
    return wait_out(tab, index)


def finish(tab, site, token, limit_s: float = 120) -> None:
    """Answers the rest of the session by hand (run_by_hand), a main-block clip whose correct
    key the engine keeps from the page in fullscreen with the other response key: the cycle
    that key replays is checked on its own trial here and on whole sessions, where every
    trial keeps its key, in test_sessions.py (participant.main_clips_answerable)."""
    run_by_hand(tab, site=site, token=token, limit_s=limit_s,
                key_for=main_clips_answerable(tab, site, token))


def back_to_fullscreen(tab, index: int) -> None:
    tab.click("#fullscreen-return")  # the click is the gesture that re-enters fullscreen
    tab.wait_for(f"""const d = document.body.dataset;
        return Number(d.trialIndex) === {index} && d.screen !== "fullscreen-lost";""")
    assert tab.evaluate("return Boolean(document.fullscreenElement);"), \
        f"{tab.name}: the return button did not re-enter fullscreen"


def row_of(data, index):
    return next(t for t in data["trials"] if t["trial_index"] == index)


@EVERY
def test_a_reload_keeps_the_re_offers_and_the_third_exit_makes_the_trial_technical(tab, site):
    # Review 15b D1: the events were kept only in memory, so after a reload the trial was
    # stored with technical_events [] and offered three more times (unbounded looks).
    token = enter(tab, site, open_short_aot(site), f"{tab.name}-fullscreen-reload")
    index = block_opener(tab, site, token)
    run_until_trial(tab, site, token, index)
    for presentation in (1, 2):
        after = leave_fullscreen_and_wait_out(tab, index, "clip")
        assert after == "fullscreen-lost", \
            f"{tab.name}: the timed-out trial was not offered again ({presentation})"
        if presentation == 1:
            back_to_fullscreen(tab, index)
    tab.reload()  # on the "fullscreen lost" screen, as the reviewer did
    run_until_trial(tab, site, token, index)
    after = leave_fullscreen_and_wait_out(tab, index, "clip")
    assert after != "fullscreen-lost", f"{tab.name}: offered again past the cap after a reload"
    finish(tab, site, token)

    data = stored(site.app, token)
    assert data["status"] == "completed", "a technical trial failed the session"
    assert_every_trial_once(data)
    row = row_of(data, index)
    assert row["response"] is None and row["extra"]["technical"] is True
    assert row["extra"]["restarted"] is True
    assert row["extra"]["technical_events"] == [
        {"kind": "fullscreen_exited_timeout", "presentation": n} for n in (1, 2, 3)]
    assert tab.errors() == []


@EVERY
def test_exits_during_the_fixation_count_and_never_fail_the_session(tab, site):
    # Before the fix the monitor started with the clip, so an exit during the fixation cross
    # (where WebKitGTK takes an early F press) made a plain miss of the catch trial.  The
    # third presentation is answered wrongly out of fullscreen: the answer is stored for the
    # record but flagged technical, so the missed attention check fails nothing.
    token = enter(tab, site, open_short_aot(site), f"{tab.name}-fullscreen-fixation")
    index = block_opener(tab, site, token)
    run_until_trial(tab, site, token, index)
    wrong = other_key(tab, answer_key(site, token, index))
    for _ in range(2):
        after = leave_fullscreen_and_wait_out(tab, index, "fixation")
        assert after == "fullscreen-lost", \
            f"{tab.name}: an exit during the fixation was not a technical event ({after})"
        back_to_fullscreen(tab, index)
    after = leave_and_answer(tab, index, wrong)
    assert after != "fullscreen-lost", "offered again past the cap"
    finish(tab, site, token)

    data = stored(site.app, token)
    assert data["status"] == "completed", "a technical trial failed the session"
    assert_every_trial_once(data)
    row = row_of(data, index)
    assert row["response"] is not None
    assert not row["correct"] or row["trial_type"] != "catch"
    assert row["extra"]["technical"] is True and row["extra"]["fullscreen_exited"] is True
    assert row["extra"]["technical_events"] == [
        {"kind": "fullscreen_exited_timeout", "presentation": 1},
        {"kind": "fullscreen_exited_timeout", "presentation": 2},
        {"kind": "fullscreen_exited_answer", "presentation": 3}]
    assert tab.errors() == []


@EVERY
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
    finish(tab, site, token)

    data = stored(site.app, token)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    extra = row_of(data, index)["extra"]
    assert extra["timed_out"] is False and extra["technical"] is False and extra["moves"]
    assert extra["technical_events"] == [{"kind": "fullscreen_exited_timeout", "presentation": 1}]
    assert tab.errors() == []


def wait_out(tab, index: int) -> str:
    """The screen shown after trial ``index``'s presentation ends."""
    return tab.wait_for(AFTER_TRIAL.format(index=index, in_trial=list(IN_TRIAL)))


@EVERY
def test_a_clip_missed_or_answered_out_of_fullscreen_is_offered_again(tab, site):
    # Issue 15: an answer given after the page left fullscreen (Firefox: Escape, then a key in
    # the next trial, RT 4 ms) was stored as the participant's, with no technical event.
    # Here the first presentation times out out of fullscreen, the second is answered out of
    # it, and the third, in fullscreen, is the participant's answer.
    token = enter(tab, site, open_short_aot(site), f"{tab.name}-fullscreen-answer")
    index = block_opener(tab, site, token)
    key = answer_key(site, token, index)
    run_until_trial(tab, site, token, index)
    after = leave_fullscreen_and_wait_out(tab, index, "clip")
    assert after == "fullscreen-lost", f"{tab.name}: the timed-out trial was not offered again"
    back_to_fullscreen(tab, index)
    after = leave_and_answer(tab, index, key)
    assert after == "fullscreen-lost", f"{tab.name}: the answer out of fullscreen was stored"
    back_to_fullscreen(tab, index)
    tab.wait_for("return document.body.dataset.onset !== undefined;")
    press_after_onset(tab, key)
    finish(tab, site, token)

    data = stored(site.app, token)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    row = row_of(data, index)
    assert row["response"] is not None and (row["correct"] or row["trial_type"] != "catch"), \
        "the answer to the re-offer was lost"
    assert row["extra"]["timed_out"] is False and row["extra"]["technical"] is False
    assert row["extra"]["fullscreen_exited"] is False
    assert row["extra"]["technical_events"] == [
        {"kind": "fullscreen_exited_timeout", "presentation": 1},
        {"kind": "fullscreen_exited_answer", "presentation": 2}]
    assert tab.errors() == []


@pytest.mark.parametrize("tab", ["webkit"], indirect=True)  # the engine that keeps F
def test_the_second_f_after_a_swallowed_one_is_no_answer(tab, site):
    # The reviewer's WebKitGTK case with real keys: F in fullscreen leaves it and never
    # reaches the page; the participant presses F again, which does, and was stored as the
    # answer with an RT ~300 ms too long.  Now that presentation is offered again.
    # The shipped keys f and j, on the short study: fewer trials to finish.
    token = enter(tab, site, open_short_aot(site, ("f", "j")), f"{tab.name}-second-f")
    index = first_main(site, token, "aot")
    run_until_trial(tab, site, token, index)
    tab.wait_for(f"""const d = document.body.dataset;
        return Number(d.trialIndex) === {index} && d.screen === "clip" && d.onset !== undefined;""")
    assert tab.evaluate(IS_FULLSCREEN), "the trial did not start in fullscreen"
    press_after_onset(tab, "f")
    assert tab.wait_for("return !document.fullscreenElement;", 5), "F kept fullscreen"
    assert tab.evaluate("return document.body.dataset.screen;") == "clip", \
        "the swallowed F reached the page"
    tab.press("f")
    after = wait_out(tab, index)
    assert after == "fullscreen-lost", f"the second F was stored as an answer ({after})"
    back_to_fullscreen(tab, index)
    tab.wait_for("return document.body.dataset.onset !== undefined;")
    press_after_onset(tab, "j")  # a key WebKitGTK passes on in fullscreen
    finish(tab, site, token, limit_s=300)

    data = stored(site.app, token)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    row = row_of(data, index)
    assert row["extra"]["key"] == "j" and row["extra"]["technical"] is False
    assert row["extra"]["technical_events"] == [
        {"kind": "fullscreen_exited_answer", "presentation": 1}]
    assert tab.errors() == []


IS_FULLSCREEN = "return Boolean(document.fullscreenElement);"
ESCAPE = "\ue00c"  # WebDriver's Escape key
# An arrow-of-time study as a lab would write it to keep clear of WebKitGTK's f: the site's
# tiny arrow-of-time study (tests/live_site.py) with keys d and k, without catch trials (the
# exit is placed in the practice feedback; the main blocks only need to complete).
SAFE_KEYS_STUDY = """[study]
design = "arrow-of-time"
stimulus_set = "tiny"
[blocks]
count = 2
clips_per_session = 4
catch_per_block = 0
[practice]
trials = 2
pass_accuracy = 0.5
attempts = 2
[responses]
keys = ["d", "k"]
[timing]
fixation_ms = 300
[participants]
browsers = ["chromium", "firefox", "webkit"]
[exclusions]
min_practice_accuracy = 0.5
"""
# Notes, once, where the page was when it next left fullscreen.
RECORD_EXIT = """window.__exitSeenOn = null;
document.addEventListener("fullscreenchange", () => {
  if (document.fullscreenElement || window.__exitSeenOn) return;
  const d = document.body.dataset;
  window.__exitSeenOn = {screen: d.screen, trial: d.trialIndex};
});
return true;"""


def open_safe_keys_study(site) -> str:
    """Opens SAFE_KEYS_STUDY once per site, from its study file; returns its kind."""
    from experiments.study_file import loads
    from webapp.researcher import lifecycle, studies

    kind = "aot_safe_keys"
    if kind not in site.slugs:
        config = loads(SAFE_KEYS_STUDY, "safe-keys.toml")
        assert config.design.response_keys == SAFE_KEYS and config.design.catch_per_block == 0
        with site.app.app_context():
            studies.create_study_from_config("tiny-aot-safe-keys", config)
            lifecycle.transition("tiny-aot-safe-keys", "open")
        site.slugs[kind] = "tiny-aot-safe-keys"
    return kind


def answer_and_leave_during_feedback(tab, index: int, site, token) -> None:
    """Answers the clip of trial ``index`` and leaves fullscreen during its feedback.

    WebKitGTK: the answer and a real Escape in one action sequence.  WebKitWebDriver sends a
    key only once the page has handled the one before (a keydown listener kept busy for 300 ms
    held the Escape back as long), and the answer's keydown ends the trial and shows the
    feedback within that event's microtasks, so the Escape (kept from the page: the browser
    itself leaves fullscreen) comes after the trial's monitor finished, some 20 ms into the
    900 ms feedback.  Firefox: puppeteer's Escape reaches only the page, so the page leaves
    fullscreen itself, from a poll in the page, as soon as the feedback shows."""
    tab.wait_for(f"""const d = document.body.dataset;
        return Number(d.trialIndex) === {index} && d.screen === "clip"
               && performance.now() > Number(d.onset) + {PRESS_AFTER_ONSET_MS};""", every_ms=5)
    key = practice_key(tab, site, token)
    assert key in SAFE_KEYS, key
    if tab.name == "webkit":
        tab.press(key + ESCAPE)
        assert tab.wait_for("return !document.fullscreenElement;", 2), "Escape kept fullscreen"
        return
    tab.press(key)
    left = tab.wait_for(f"""const d = document.body.dataset;
        if (Number(d.trialIndex) !== {index} || d.screen !== "feedback") return null;
        document.exitFullscreen();
        return "left";""", every_ms=5)
    assert left == "left"


def on_a_practice_clip(tab, site, participant: str) -> tuple[str, int]:
    """Enters the safe-keys study as ``participant`` and runs it to the first clip's onset,
    in fullscreen: (the session's token, the trial's index)."""
    token = enter(tab, site, open_safe_keys_study(site), participant)
    run_until(tab, lambda s: s["screen"] == "clip" and s["onset"] is not None,
              site=site, token=token)
    index = int(screen_state(tab)["trial"])
    assert tab.evaluate(IS_FULLSCREEN), f"{tab.name}: the practice block started outside"
    return token, index


def back_in_fullscreen(tab) -> None:
    """Clicks the ask-back screen's button (the gesture that re-enters fullscreen), waits
    until the runner moves on, and checks the page is in fullscreen again."""
    tab.click("#fullscreen-go")
    tab.wait_for('return document.body.dataset.screen !== "fullscreen";')
    assert tab.evaluate(IS_FULLSCREEN), f"{tab.name}: the button did not re-enter fullscreen"


# Holds the worker presenter's "finished" reply (the clip stopped) until window.__release().
HOLD_CLIP_STOP = """window.__held = [];
window.__release = () => { const held = window.__held; window.__held = null; held.forEach(f => f()); };
const add = Worker.prototype.addEventListener;
Worker.prototype.addEventListener = function (type, handler, options) {
  const held = (event) => {
    if (event.data?.type === "finished" && window.__held) window.__held.push(() => handler(event));
    else handler(event);
  };
  return add.call(this, type, type === "message" ? held : handler, options);
};
return true;"""


@EVERY
def test_an_exit_while_the_answered_clip_stops_is_not_the_answered_trials(tab, site):
    # The monitor ended only once the worker presenter had stopped the clip, a message round
    # trip after the answer: an exit in between (an Escape right after the answer, as
    # WebKitWebDriver sent it under load) was counted against the answered trial, which was
    # thrown away and run again.  The round trip is held open here until the page is out.
    token, before = on_a_practice_clip(tab, site, f"{tab.name}-exit-as-clip-stops")
    tab.evaluate(HOLD_CLIP_STOP)
    press_after_onset(tab, practice_key(tab, site, token))
    assert tab.wait_for("return window.__held.length > 0;"), "the worker did not present the clip"
    tab.evaluate("document.exitFullscreen(); return true;")
    tab.wait_for("return !document.fullscreenElement;")
    tab.evaluate("window.__release(); return true;")
    state = tab.wait_for("""const d = document.body.dataset;
        return ["clip", "feedback"].includes(d.screen) ? null
            : {screen: d.screen, trial: d.trialIndex};""")
    assert state == {"screen": "fullscreen", "trial": str(before)}, \
        f"{tab.name}: the answered trial was not kept ({state})"
    back_in_fullscreen(tab)
    run_by_hand(tab, site=site, token=token, limit_s=300)

    answered = row_of(stored(site.app, token), before)
    assert answered["response"] is not None and answered["extra"]["fullscreen_exited"] is False
    assert not answered["extra"]["technical_events"]
    assert tab.errors() == []


@EVERY
def test_an_exit_between_trials_asks_back_before_the_next_trial(tab, site):
    # The monitor counted an exit only if its trial started in fullscreen: after an exit during
    # a practice trial's feedback the next trials ran out of fullscreen, a timeout there a
    # plain miss.  The runner now asks the participant back before the next trial starts.
    # The study's keys are d and k: with f (the shipped keys) WebKitGTK leaves fullscreen on
    # every F answer, so whether a feedback showed in fullscreen depended on the key mapping.
    token, before = on_a_practice_clip(tab, site, f"{tab.name}-fullscreen-between")
    practice = [t["trial_index"] for t in stored(site.app, token)["schedule"]
                if t["block"] == "practice"]
    assert before in practice[:-1], f"trial {before} is not followed by another practice trial"
    tab.evaluate(RECORD_EXIT)
    answer_and_leave_during_feedback(tab, before, site, token)
    state = tab.wait_for("""const d = document.body.dataset;
        return d.screen !== "feedback" ? {screen: d.screen, trial: d.trialIndex} : null;""")
    # After the answer: on its feedback, or while the clip's presenter stops (the page still
    # shows the clip screen then; WebKitGTK's Escape can come that early under load).
    exit_seen = tab.evaluate("return window.__exitSeenOn;")
    assert exit_seen in ({"screen": s, "trial": str(before)} for s in ("clip", "feedback")), \
        f"{tab.name}: the exit was not between trials ({exit_seen})"
    assert state["screen"] == "fullscreen", f"{tab.name}: the next trial started outside ({state})"
    assert int(state["trial"]) == before, "a trial started before the participant was back"
    back_in_fullscreen(tab)
    run_by_hand(tab, site=site, token=token, limit_s=300)

    data = stored(site.app, token)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    answered, after = row_of(data, before), row_of(data, before + 1)
    assert answered["response"] is not None and answered["extra"]["fullscreen_exited"] is False, \
        "the exit counted against the answered trial"
    assert after["extra"]["fullscreen_exited"] is False and not after["extra"]["technical_events"]
    assert tab.errors() == []
