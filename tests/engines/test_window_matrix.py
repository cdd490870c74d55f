"""Nobody locked out by their laptop (issue 28): on a study asking for the README's
1024 x 700 pixels, every participant the policy admits reaches trial 1, in every engine, with
fullscreen granted or refused; everyone else is told what to do (enlarge the window or go
fullscreen; on a screen too small even in fullscreen, another computer with the same id).

The window before fullscreen is the screen less the browser's bars (657 px of a 1280 x 800
laptop); the study runs in fullscreen, so the check reads the screen, and after the
fullscreen step the window only where the browser refused fullscreen.  Chromium emulates each
screen (DevTools device metrics: screen and window size) in one reused page; Firefox and
WebKitGTK run in real windows on their Xvfb screen (1280 x 1024), sized as the laptop's
window, and really go fullscreen there.
"""
import json

import pytest

from tests.engines.conftest import EVERY_ENGINE
from tests.engines.participant import enter, screen_state, wait_change
from tests.factories import open_site_study, tiny_designs

pytestmark = [pytest.mark.engines,
              pytest.mark.filterwarnings("ignore:setting remote_server_addr:DeprecationWarning")]

MIN_WINDOW = (1024, 700)  # the README's example study
SCREENS = [(1280, 720), (1280, 800), (1366, 768), (1440, 900), (1920, 1080)]
NETBOOK = (1024, 600)  # smaller than the study asks even in fullscreen: another computer
BARS_PX = 143  # what tabs, address bar and taskbar take of a laptop screen's height
# A browser (or participant) that refuses fullscreen: the request fails, as when denied.
REFUSE_FULLSCREEN = """Element.prototype.requestFullscreen = function () {
    return Promise.reject(new TypeError("fullscreen refused")); }; return true;"""
LOOK = """return {screen: [screen.width, screen.height], window: [innerWidth, innerHeight],
    fullscreen: Boolean(document.fullscreenElement),
    text: document.getElementById("stage").innerText};"""


def matrix_study(site) -> str:
    kind = "window_matrix"
    if kind not in site.slugs:
        open_site_study(site.app, "tiny-window-matrix", tiny_designs()["aot"],
                        min_window=MIN_WINDOW)
        site.slugs[kind] = "tiny-window-matrix"
    return kind


def to_trial_one(tab, site, participant: str, refuse_fullscreen: bool) -> dict:
    """Answers every screen up to the first trial; what the page showed where it stopped
    (the first trial, or a screen that asks for a change), with ``outcome``."""
    enter(tab, site, matrix_study(site), participant)
    if refuse_fullscreen:
        tab.evaluate(REFUSE_FULLSCREEN)  # before the fullscreen button: it is after consent
    state = screen_state(tab)
    while state["trial"] is None:
        screen = state["screen"]
        if screen in ("window-problem", "device-problem", "device-switch"):
            return {"outcome": screen, **tab.evaluate(LOOK)}
        if screen == "keyboard-check":
            tab.press("Space")
        elif screen == "consent":
            tab.click("#consent-yes")
        elif screen == "fullscreen":
            tab.click("#fullscreen-go")
        elif screen in ("instructions", "block-intro"):
            tab.click("#continue")
        state = wait_change(tab, state)
    return {"outcome": "trial", **tab.evaluate(LOOK)}


def admitted(seen: dict) -> bool:
    """The policy: the size the study runs in, the fullscreen screen or else the window."""
    width, height = seen["screen"] if seen["fullscreen"] else seen["window"]
    return width >= MIN_WINDOW[0] and height >= MIN_WINDOW[1]


def check(seen: dict, refuse_fullscreen: bool, case: str) -> list[str]:
    """What is wrong with one case: an admitted participant not at trial 1, or a refusal
    that does not say what to do."""
    if not refuse_fullscreen and not seen["fullscreen"] and tuple(seen["screen"]) != NETBOOK:
        return [f"{case}: fullscreen was not granted: {json.dumps(seen)}"]
    if admitted(seen):
        return [] if seen["outcome"] == "trial" else [f"{case}: admitted but stopped: {seen}"]
    if tuple(seen["screen"]) == NETBOOK:
        if seen["outcome"] != "device-switch" or "Open the same study link" not in seen["text"]:
            return [f"{case}: a too small screen not asked to switch: {json.dumps(seen)}"]
        return []
    if seen["outcome"] != "window-problem" or "fullscreen" not in seen["text"] \
            or f"{MIN_WINDOW[0]} × {MIN_WINDOW[1]}" not in seen["text"]:
        return [f"{case}: refused without saying what to do: {json.dumps(seen)}"]
    return []


def set_size(tab, screen: tuple[int, int], window: tuple[int, int]) -> None:
    """Chromium: the emulated screen and window.  Firefox and WebKitGTK: the real window
    (their screen is the Xvfb display's)."""
    if tab.name == "chromium":
        if not hasattr(tab, "cdp"):
            tab.cdp = tab.context.new_cdp_session(tab.page)
        tab.cdp.send("Emulation.setDeviceMetricsOverride", {
            "width": window[0], "height": window[1], "deviceScaleFactor": 1, "mobile": False,
            "screenWidth": screen[0], "screenHeight": screen[1]})
    elif tab.name == "firefox":
        tab.bridge.call("viewport", width=window[0], height=window[1])
    else:
        tab.driver.set_window_size(*window)


def cases(engine: str) -> list[tuple[tuple[int, int], tuple[int, int], bool]]:
    """(screen, window before fullscreen, refuse fullscreen) for ``engine``: every laptop in
    Chromium (and a netbook too small for the study); in the other engines their real screen, with the 1280 x 800 laptop's window
    (too low without fullscreen) and one tall enough."""
    if engine == "chromium":
        sizes = [(screen, (screen[0], screen[1] - BARS_PX)) for screen in [*SCREENS, NETBOOK]]
    else:
        sizes = [(None, (1280, 800 - BARS_PX)), (None, (1280, 1024 - BARS_PX))]
    return [(screen, window, refuse) for screen, window in sizes for refuse in (False, True)]


@pytest.mark.parametrize("tab", EVERY_ENGINE, indirect=True)
def test_every_admitted_participant_reaches_trial_one(tab, site):
    problems, outcomes = [], []
    for n, (screen, window, refuse) in enumerate(cases(tab.name)):
        set_size(tab, screen or (0, 0), window)
        case = f"{tab.name} screen {screen or 'real'} window {window} " \
               f"fullscreen {'refused' if refuse else 'allowed'}"
        seen = to_trial_one(tab, site, f"matrix-{tab.name}-{n}", refuse)
        problems += check(seen, refuse, case)
        outcomes.append(seen["outcome"])
        if tab.evaluate("return Boolean(document.fullscreenElement);"):
            tab.evaluate("return document.exitFullscreen().then(() => true);")
    assert not problems, "\n".join(problems)
    # Both sides of the policy were exercised: admitted participants and told ones.
    assert "trial" in outcomes and "window-problem" in outcomes, outcomes
    assert tab.name != "chromium" or "device-switch" in outcomes, outcomes
    assert not tab.errors()


@pytest.mark.parametrize("tab", ["chromium"], indirect=True)
def test_a_refused_fullscreen_goes_on_once_the_window_is_large_enough(tab, site):
    """The window-problem screen is no dead end: the participant enlarges the window (a
    1280 x 1024 screen, the browser refusing fullscreen) and continues to trial 1."""
    set_size(tab, (1280, 1024), (1280, 657))
    seen = to_trial_one(tab, site, "matrix-enlarges", refuse_fullscreen=True)
    assert seen["outcome"] == "window-problem", seen
    set_size(tab, (1280, 1024), (1280, 900))
    state = screen_state(tab)
    tab.click("#window-retry")
    while state["trial"] is None:
        if state["screen"] in ("instructions", "block-intro"):
            tab.click("#continue")
        state = wait_change(tab, state)
    assert not tab.evaluate("return Boolean(document.fullscreenElement);")  # in the window


@pytest.mark.parametrize("tab", ["chromium"], indirect=True)
def test_a_window_that_cannot_be_enlarged_ends_with_the_screen_out_code(tab, site):
    """After consent, fullscreen refused and a window that stays too small left the
    participant on the window screen with no way out and no code (outside review): they
    may give up there, before any trial, and leave with the screen-out code."""
    set_size(tab, (1366, 768), (1366, 625))
    seen = to_trial_one(tab, site, "matrix-gives-up", refuse_fullscreen=True)
    assert seen["outcome"] == "window-problem", seen
    state = screen_state(tab)
    tab.click("#window-give-up")
    while state["screen"] != "done":
        state = wait_change(tab, state)
    assert tab.evaluate('return document.getElementById("completion-code").innerText;')
    assert not tab.errors()
