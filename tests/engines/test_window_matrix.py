"""Nobody locked out by their laptop (issue 28): on a study asking for the README's
1024 x 700 pixels, every participant the policy admits reaches trial 1, in every engine, on
every laptop screen of the matrix (1280 x 720, 1280 x 800, 1366 x 768, 1440 x 900,
1920 x 1080), with fullscreen granted or refused; everyone else is told what to do (enlarge
the window or go fullscreen; on a screen too small even in fullscreen, another computer with
the same id).

The window before fullscreen is the screen less the browser's bars (657 px of a 1280 x 800
laptop); the study runs in fullscreen, so the check reads the screen, and after the
fullscreen step the window only where the browser refused fullscreen.  Each cell of the
matrix is a fresh browser context in a shared browser: Chromium (one per test process)
emulates each screen (DevTools device metrics: screen and window size); Firefox and WebKitGTK
read the screen from their X display, so each screen size gets an Xvfb display of that size,
one Firefox at a time on it (a fresh context per cell) and a MiniBrowser per cell (WebKitGTK's
WebDriver gives each session its own browser), sized as the laptop's window, and really going
fullscreen there.  No engine needs a skip: Xvfb gives the other two every size, and all three
go fullscreen headless (Chromium) or on Xvfb.
"""
import json
from contextlib import ExitStack, contextmanager

import pytest

from bench.harness.tabs import (
    FIREFOX,
    MINIBROWSER,
    WEBKIT_DRIVER,
    ChromiumTab,
    FirefoxBridge,
    FirefoxTab,
    WebKitTab,
)
from bench.harness.xserver import xvfb
from tests.engines.conftest import EVERY_ENGINE, PUPPETEER, require
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
    (their screen is their X display's)."""
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


class Screens:
    """The X side of the matrix: an Xvfb display per screen size, made when first asked for,
    and one Firefox at a time, on the display of the screen asked for last (the cells run
    screen by screen, so each Firefox serves every cell of its screen)."""

    def __init__(self, stack: ExitStack):
        self.stack = stack
        self.displays: dict[tuple[int, int], str] = {}
        self.firefox: tuple[tuple[int, int], FirefoxBridge] | None = None

    def display(self, screen: tuple[int, int]) -> str:
        if screen not in self.displays:
            self.displays[screen] = self.stack.enter_context(xvfb(f"{screen[0]}x{screen[1]}x24"))
        return self.displays[screen]

    def firefox_bridge(self, screen: tuple[int, int]) -> FirefoxBridge:
        if self.firefox is None or self.firefox[0] != screen:
            self.close()
            self.firefox = (screen, FirefoxBridge(self.display(screen)))
        return self.firefox[1]

    def close(self) -> None:
        if self.firefox is not None:
            self.firefox[1].close()
            self.firefox = None


@pytest.fixture(scope="module")
def screens():
    with ExitStack() as stack:
        made = Screens(stack)
        yield made
        made.close()


@contextmanager
def cell_tab(request, site, screens: Screens, engine: str, screen: tuple[int, int]):
    """A fresh context (a new MiniBrowser for WebKitGTK) in ``engine`` on ``screen``."""
    if engine == "chromium":
        tab = ChromiumTab(request.getfixturevalue("browser"))
    elif engine == "firefox":
        require("Firefox", FIREFOX, "node", PUPPETEER, "Xvfb")
        tab = FirefoxTab(screens.firefox_bridge(screen))
    else:
        require("WebKitGTK", WEBKIT_DRIVER, MINIBROWSER, "Xvfb")
        site.faults.record_errors = True
        tab = WebKitTab(screens.display(screen), site.faults)
    try:
        yield tab
    finally:
        tab.close()
        site.faults.record_errors = False


CELLS = [(engine, screen, refuse) for engine in EVERY_ENGINE for screen in [*SCREENS, NETBOOK]
         for refuse in (False, True)]


@pytest.mark.parametrize("engine, screen, refuse", CELLS, ids=[
    f"{engine}-{screen[0]}x{screen[1]}-fullscreen-{'refused' if refuse else 'allowed'}"
    for engine, screen, refuse in CELLS])
def test_every_admitted_participant_reaches_trial_one(request, site, screens, engine, screen,
                                                      refuse):
    window = (screen[0], screen[1] - BARS_PX)
    case = f"{engine} screen {screen} window {window} " \
           f"fullscreen {'refused' if refuse else 'allowed'}"
    with cell_tab(request, site, screens, engine, screen) as tab:
        set_size(tab, screen, window)
        seen = to_trial_one(tab, site, f"matrix-{engine}-{screen[0]}x{screen[1]}-{refuse:d}",
                            refuse)
        assert tuple(seen["screen"]) == screen, seen  # the engine had the laptop's screen
        assert check(seen, refuse, case) == []
        # Both sides of the policy: the too small screen is asked to switch, a refused
        # fullscreen on a window lower than the study asks is told to enlarge it.
        expected = "device-switch" if screen == NETBOOK else \
            "window-problem" if refuse and window[1] < MIN_WINDOW[1] else "trial"
        assert seen["outcome"] == expected, (case, seen)
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
