"""One browser tab, the same to the tests in every engine: Firefox ESR through the
puppeteer-core bridge (firefox.mjs, WebDriver BiDi) and WebKitGTK through Selenium and
WebKitWebDriver, each in real windows on an Xvfb display of its own (``tab.display``), and
headless Chromium through a Playwright page (no display), so that a scenario written once
runs in all three.

Clicks and key presses are real input events sent by the driver (``isTrusted``), at the
viewport coordinates of the element; drags go through the X server (xserver.py), and in
headless Chromium through Playwright's mouse.
JavaScript is passed as the body of a function (``return …``) and built into the script on
the Python side: the runner's Content-Security-Policy forbids ``eval`` and ``new Function``
inside the page.
"""
import json
import os
import queue
import socket
import subprocess
import threading
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.webkitgtk.options import Options
from selenium.webdriver.webkitgtk.service import Service

from bench.harness.xserver import XMouse

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--autoplay-policy=no-user-gesture-required"]
# The address bar's WebUI popups, which every new context's window loads in a renderer of
# its own: about a third of a new context's CPU, for UI a headless test never shows
# (docs/measurements.md, The test suite; bench/browser_contexts.py).
HIDDEN_UI = ["WebUIOmniboxPopup", "WebUIOmniboxAimPopup", "WebUIOmniboxFullPopup"]
FIREFOX = "/usr/bin/firefox-esr"
FIREFOX_BRIDGE = Path(__file__).with_name("firefox.mjs")
WEBKIT_DRIVER = "/usr/bin/WebKitWebDriver"
MINIBROWSER = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"
WINDOW = (1280, 800)
WAIT_S = 20
LONGEST_S = 300  # what a driver may take to answer one call (a wait_for included)


def polling(body: str, timeout_ms: float, every_ms: int) -> str:
    """An expression whose promise resolves to the body's first truthy value, or to null once
    timeout_ms have passed."""
    return f"""new Promise((resolve) => {{
  const deadline = performance.now() + {timeout_ms};
  const check = () => {{
    let value;
    try {{ value = (() => {{ {body} }})(); }} catch (error) {{ value = undefined; }}
    if (value) resolve(value);
    else if (performance.now() > deadline) resolve(null);
    else setTimeout(check, {every_ms});
  }};
  check();
}})"""


class Tab:
    """What the engine tests do in a tab; each engine supplies ``_evaluate(expression)``,
    navigation, input and its errors."""

    name = ""

    def evaluate(self, body: str):
        return self._evaluate(f"(() => {{ {body} }})()")

    def wait_for(self, body: str, timeout_s: float = WAIT_S, every_ms: int = 10):
        """Polls the body in the page until it returns something truthy, and returns that."""
        value = self._evaluate(polling(body, timeout_s * 1000, every_ms))
        if value is None:
            raise TimeoutError(f"{self.name}: not within {timeout_s} s: {body}")
        return value

    def click(self, selector: str) -> None:
        """Clicks the element's centre once it is there and enabled (as Playwright does, which
        the Chromium tests use: ``aria-disabled`` counts as disabled)."""
        centre = self.wait_for(f"""const e = document.querySelector({json.dumps(selector)});
            if (!e || e.disabled || e.getAttribute("aria-disabled") === "true") return null;
            const r = e.getBoundingClientRect();
            return r.width ? [r.x + r.width / 2, r.y + r.height / 2] : null;""")
        self.click_at(*centre)

    def focus(self, selector: str) -> None:
        self.evaluate(f"document.querySelector({json.dumps(selector)}).focus();")

    def drag(self, start, end) -> None:
        """A real mouse drag from ``start`` to ``end`` (viewport coordinates) through the X
        server: WebDriver's pointer actions start a native drag-and-drop but never drop it."""
        mouse = XMouse(self)
        try:
            mouse.drag(start, end)
        finally:
            mouse.close()


class FirefoxTab(Tab):
    """A tab in the Firefox that the bridge process runs (one fresh browser context per tab)."""

    name = "firefox"

    def __init__(self, bridge: "FirefoxBridge"):
        self.bridge = bridge
        self.display = bridge.display
        bridge.call("open")

    def _evaluate(self, expression):
        return self.bridge.call("evaluate", timeout_s=LONGEST_S, expression=expression)

    def goto(self, url: str) -> str:
        return self.bridge.call("goto", url=url)

    def reload(self) -> None:
        self.bridge.call("reload")

    def click_at(self, x: float, y: float) -> None:
        self.bridge.call("click", x=x, y=y)

    def press(self, key: str) -> None:
        self.bridge.call("press", key=" " if key == "Space" else key)

    def set_offline(self, on: bool) -> None:
        """The browser's own offline switch (WebDriver BiDi network emulation)."""
        self.bridge.call("offline", on=on)

    def errors(self) -> list[str]:
        return self.bridge.call("errors")

    def close(self) -> None:
        self.bridge.call("close")


class FirefoxBridge:
    """The node process running firefox.mjs, with Firefox's window on the X display given:
    one JSON command per line, one answer per line."""

    def __init__(self, display: str, firefox: str = FIREFOX, prefs: dict | None = None):
        self.display = display
        self.process = subprocess.Popen(["node", str(FIREFOX_BRIDGE), firefox,
                                         json.dumps(prefs or {})],
                                        env={**os.environ, "DISPLAY": display},
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.answers = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._answer(60)  # {"ready": true}

    def _read(self) -> None:
        for line in self.process.stdout:
            self.answers.put(json.loads(line))
        self.answers.put({"error": f"the Firefox bridge exited ({self.process.wait()})"})

    def _answer(self, timeout_s: float):
        try:
            answer = self.answers.get(timeout=timeout_s)
        except queue.Empty:
            raise TimeoutError(f"the Firefox bridge did not answer within {timeout_s} s") from None
        if "error" in answer:
            raise RuntimeError(f"firefox: {answer['error']}")
        return answer.get("value")

    def call(self, op: str, timeout_s: float = 60, **args):
        self.process.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.process.stdin.flush()
        return self._answer(timeout_s)

    def close(self) -> None:
        self.process.stdin.close()  # the bridge closes Firefox and exits
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def launch_chromium(playwright):
    """Chromium with CHROMIUM_ARGS and HIDDEN_UI disabled. Chromium keeps only the last
    --disable-features, and Playwright passes its own list first, so HIDDEN_UI joins the
    list read off a first launch's command line rather than replacing it."""
    def launch(*extra):
        return playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra])

    first = launch()
    try:
        page = first.new_page()
        page.goto("chrome://version")
        switches = page.locator("#command_line").inner_text().split()
    finally:
        first.close()
    if "--remote-debugging-pipe" not in switches:  # Playwright's own: the page was misread
        raise RuntimeError(f"no command line on chrome://version: {switches[:5]}")
    disabled = [s.partition("=")[2] for s in switches if s.startswith("--disable-features=")]
    return launch(f"--disable-features={','.join([*disabled, *HIDDEN_UI])}")


class ChromiumTab(Tab):
    """A page of its own browser context in the Playwright ``browser`` (headless Chromium);
    ``page`` is there for what only Playwright offers."""

    name = "chromium"

    def __init__(self, browser):
        self.context = browser.new_context(viewport=dict(zip(("width", "height"), WINDOW)))
        self.page = self.context.new_page()
        self.page.set_default_timeout(WAIT_S * 1000)
        self.seen_errors = []
        self.page.on("pageerror", lambda error: self.seen_errors.append(f"page error: {error}"))
        self.page.on("console", self._console)
        # A leave prompt is confirmed, as in the other engines' tabs (Playwright would dismiss it).
        self.page.on("dialog", lambda dialog: dialog.accept())

    def _console(self, message) -> None:
        # Chromium logs every failed request as an error of its own, not the page's (the
        # other engines do not): only the page's console.error calls count.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.seen_errors.append(f"console.error: {message.text}")

    def _evaluate(self, expression):
        return self.page.evaluate(expression)  # a promise is awaited

    def goto(self, url: str) -> str:
        self.page.goto(url)
        return self.page.url

    def reload(self) -> None:
        self.page.reload()

    def click_at(self, x: float, y: float) -> None:
        self.page.mouse.click(x, y)

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)

    def drag(self, start, end, steps: int = 20) -> None:
        """Playwright's mouse (headless: no X server), at a hand's pace: Sortable follows the
        pointer only through intermediate moves."""
        self.page.mouse.move(*start)
        self.page.mouse.down()
        for step in range(1, steps + 1):
            self.page.mouse.move(start[0] + (end[0] - start[0]) * step / steps,
                                 start[1] + (end[1] - start[1]) * step / steps)
            self.page.wait_for_timeout(20)  # the pace of a hand is the stimulus, not a wait
        self.page.mouse.up()

    def set_offline(self, on: bool) -> None:
        self.context.set_offline(on)

    def errors(self) -> list[str]:
        errors, self.seen_errors = self.seen_errors, []
        return errors

    def close(self) -> None:
        self.context.close()


class WebKitTab(Tab):
    """A MiniBrowser window of its own WebKitWebDriver session on the given X display.

    WebKitWebDriver offers neither a log endpoint nor WebDriver BiDi, and MiniBrowser does
    not write console messages in automation mode, so page errors come from the recorder the
    live site puts in every page (``site.faults.record_errors``); it is read before each
    navigation, which would discard it.
    """

    name = "webkit"
    KEYS = {"Space": " ", "ArrowLeft": "\ue012", "ArrowRight": "\ue014"}

    def __init__(self, display: str, faults):
        options = Options()
        options.binary_location = MINIBROWSER
        options.add_argument("--automation")  # without it MiniBrowser refuses the session
        service = Service(executable_path=WEBKIT_DRIVER,
                          env={**os.environ, "DISPLAY": display}, log_output=subprocess.DEVNULL)
        # A loaded full run once saw WebKitWebDriver never answer a new session (its
        # MiniBrowser never came up) and the suite wait for ever: every call of this driver,
        # the session's start included, is bounded (selenium reads the socket default once,
        # when the driver's connection is made).
        previous = socket.getdefaulttimeout()
        socket.setdefaulttimeout(LONGEST_S + 30)
        try:
            self.driver = webdriver.WebKitGTK(options=options, service=service)
        finally:
            socket.setdefaulttimeout(previous)
        self.driver.set_window_size(*WINDOW)
        self.driver.set_script_timeout(LONGEST_S)
        self.seen_errors = []
        self.faults = faults
        self.display = display

    def _evaluate(self, expression):
        answer = self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            f"Promise.resolve({expression}).then((value) => done({{value}}),"
            " (error) => done({error: String(error)}));")
        if "error" in answer:
            raise RuntimeError(f"webkit: {answer['error']}")
        return answer.get("value")

    def _keep_errors(self) -> None:
        try:
            self.seen_errors += self.evaluate("""const errors = window.__pageErrors;
                return errors ? errors.splice(0) : ["this page has no error recorder"];""")
        except Exception as error:  # noqa: BLE001  (no page yet, or one that is going away)
            self.seen_errors.append(f"page errors not readable: {error}")

    def goto(self, url: str) -> str:
        if self.driver.current_url.startswith("http"):
            self._keep_errors()
        self.driver.get(url)
        return self.driver.current_url

    def reload(self) -> None:
        self._keep_errors()
        self.driver.refresh()

    def click_at(self, x: float, y: float) -> None:
        actions = ActionBuilder(self.driver, duration=0)  # no 250 ms glide to the spot
        actions.pointer_action.move_to_location(round(x), round(y)).click()
        actions.perform()

    def press(self, key: str) -> None:
        ActionChains(self.driver, duration=0).send_keys(self.KEYS.get(key, key)).perform()

    def set_offline(self, on: bool) -> None:
        """WebDriver classic has no offline switch: the live site drops the connections of the
        participant API and media instead (tests/live_site.py)."""
        self.faults.offline = on

    def errors(self) -> list[str]:
        self._keep_errors()
        errors, self.seen_errors = self.seen_errors, []
        return errors

    def close(self) -> None:
        self.driver.quit()
