"""The scripted participant of tests/browser/participant.py for a tab of any engine
(bench/harness/tabs.py): reads which screen the runner shows (``body[data-screen]``) and
answers it with real clicks and key presses.  The database side (``stored``,
``assert_every_trial_once``, ``answer_key``) is shared with the Chromium tests."""
import json
import time
from urllib.parse import urlencode, urlsplit

from tests.browser.participant import WAITING, answer_key, stored

PRESS_AFTER_ONSET_MS = 20
# Keys an engine keeps from the page in fullscreen (issue 15: WebKitGTK leaves fullscreen on
# Escape, f and F and never passes the key on).
SWALLOWED = {"webkit": ("f",)}
STATE = """const d = document.body.dataset;
const state = {screen: d.screen || "", trial: d.trialIndex ?? null, onset: d.onset ?? null};"""


def enter(tab, site, kind: str, participant: str, simulate: bool = False) -> str:
    """Opens the study's entry link; returns the session token from the runner URL.
    With ``simulate`` the server makes the session a simulated one and the runner answers
    every screen by itself (static/js/simulate.js)."""
    query = {"participant": participant} | ({"simulate": "1"} if simulate else {})
    url = tab.goto(f"{site.base_url}/p/{site.slugs[kind]}?{urlencode(query)}")
    assert "/run/" in url, url
    return urlsplit(url).path.rstrip("/").split("/")[-1]


def screen_state(tab) -> dict:
    return tab.evaluate(f"{STATE} return state;")


def wait_change(tab, state: dict, timeout_s: float = 20) -> dict:
    old = json.dumps(state)
    return tab.wait_for(f"""{STATE} const old = {old};
        const changed = state.screen !== old.screen || state.trial !== old.trial
                        || state.onset !== old.onset;
        return changed ? state : null;""", timeout_s)


def wait_trial(tab, index: int, timeout_s: float = 60) -> int:
    """Waits until the runner shows trial ``index`` or a later one; returns its index."""
    return tab.wait_for(f"""const i = Number(document.body.dataset.trialIndex ?? -1);
        return i >= {index} ? i + 1 : null;""", timeout_s) - 1  # + 1: trial 0 is falsy


def wait_done(tab, timeout_s: float = 120) -> str:
    """Waits for the completion screen; returns the completion code shown there."""
    return tab.wait_for("""if (document.body.dataset.screen !== "done") return null;
        return document.getElementById("completion-code")?.textContent || "(no code)";""",
                        timeout_s)


def practice_key(tab, site, token) -> str:
    """The key a participant who knows the answer presses, read on the server's side: the
    browser is never sent an answer (practice feedback comes after the answer is stored)."""
    index = int(tab.evaluate("return document.body.dataset.trialIndex;"))
    return answer_key(site.app, token, index)



def other_key(tab, key: str) -> str:
    return next(k for k in tab.evaluate("return window.chronoscope.session.response_keys;")
                if k != key)


def main_clips_answerable(tab, site, token):
    """``key_for`` for run_until / run_by_hand: a main-block clip whose correct key the engine
    keeps from the page in fullscreen (WebKitGTK: f) is answered with the other response key.
    Any key answers such a trial, and the swallowed key would only replay the exit / time out
    / re-offer cycle (three presentations of ~3 s each) that the practice and catch trials,
    which keep the correct key (the practice must be passed), go through as they are."""
    swallowed = SWALLOWED.get(tab.name, ())
    if not swallowed:
        return lambda index: None
    schedule = {t["trial_index"]: t for t in stored(site.app, token)["schedule"]}

    def key_for(index: int) -> str | None:
        trial = schedule[index]
        if trial["block"] == "practice" or trial["trial_type"] == "catch":
            return None
        key = answer_key(site.app, token, index)
        return other_key(tab, key) if key in swallowed else None

    return key_for


def order_with_keyboard(tab) -> None:
    """Moves the first movable frame one slot right with Space / ArrowRight / Space."""
    tab.focus(".frame:not(.hint)")
    for key in ("Space", "ArrowRight", "Space"):
        tab.press(key)


def press_after_onset(tab, key: str, index: int | None = None) -> None:
    """Presses ``key`` once the clip's onset is past.  Without Element Timing (Firefox,
    WebKit) the onset is the refresh after the reveal's animation frame, which the runner
    knows a few ms before it comes; a press before it is an anticipation, not an answer.

    With ``index``, only while trial ``index``'s clip is on screen: a state read before the
    trial ended (answered, or timed out on a loaded machine) presses nothing, where it waited
    for an onset that a screen waiting for a click never sets (seen in CI)."""
    moved_on = "false" if index is None else \
        f'Number(d.trialIndex) !== {int(index)} || d.screen !== "clip"'
    when = tab.wait_for(f"""const d = document.body.dataset;
        if ({moved_on}) return "moved on";
        return performance.now() > Number(d.onset) + {PRESS_AFTER_ONSET_MS} ? "now" : null;""")
    if when == "now":
        tab.press(key)


def answer(tab, state: dict, on_trial=None, site=None, token=None, key_for=None) -> None:
    screen = state["screen"]
    if screen == "consent":
        tab.click("#consent-yes")
    elif screen == "keyboard-check":
        tab.press("Space")
    elif screen == "fullscreen":
        tab.click("#fullscreen-go")
    elif screen == "fullscreen-lost":  # the page left fullscreen during a trial: go back
        tab.click("#fullscreen-return")
    elif screen in ("instructions", "block-intro", "break", "debrief"):
        tab.click("#continue")
    elif screen == "clip" and state["onset"] is not None:
        index = int(state["trial"])
        key = key_for(index) if key_for else None
        press_after_onset(tab, key or (answer_key(site.app, token, index) if site else tab.evaluate(
            f"return window.chronoscope.session.response_keys[{index} % 2];")), index)
    elif screen == "frame_order":
        if on_trial:
            on_trial(tab, state)
        else:
            order_with_keyboard(tab)
        tab.click("#order-done")


def run_until(tab, done, on_trial=None, limit_s: float = 120, site=None, token=None,
              key_for=None) -> dict:
    """Answers screens (real clicks and key presses, no simulation) until ``done(state)`` is
    true; returns that state.

    ``on_trial(tab, state)`` orders the frames of a frame-ordering trial (default: one
    keyboard move); ``site`` and ``token`` let catch trials be answered as instructed;
    ``key_for(index)`` names the key for a clip (None: the correct one).
    """
    deadline = time.monotonic() + limit_s
    state = screen_state(tab)
    while not done(state):
        if time.monotonic() > deadline:
            raise AssertionError(f"{tab.name}: session stuck at {state}")
        if state["screen"] not in WAITING:
            answer(tab, state, on_trial, site, token, key_for)
        state = wait_change(tab, state)
    return state


def run_by_hand(tab, until: str = "done", on_trial=None, limit_s: float = 120,
                site=None, token=None, key_for=None) -> None:
    """Answers screens by hand until the screen ``until`` shows (see run_until)."""
    run_until(tab, lambda state: state["screen"] == until, on_trial, limit_s, site, token,
              key_for)
