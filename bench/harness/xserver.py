"""The X server side of the engine tests: a virtual display (Xvfb) per engine, and a mouse
that moves and presses through the X server itself (the XTEST extension), as a person's
mouse does.

Why through X: a drag made of WebDriver pointer actions starts the browser's native
drag-and-drop (``dragstart`` fires) but never drops it in Firefox ESR 153 (WebDriver BiDi)
nor in WebKitGTK 2.50 (WebKitWebDriver); the same drag from X events ends with ``drop``
and ``dragend`` in both, as it does for a participant.
"""
import os
import subprocess
import time
from contextlib import contextmanager

from Xlib import X
from Xlib import display as xdisplay
from Xlib.ext import xtest

SCREEN = "1280x1024x24"


@contextmanager
def xvfb(screen: str = SCREEN):
    """A fresh virtual display of ``screen`` (WxHxDEPTH); yields its name (":N"). Xvfb picks a
    free number itself."""
    read, write = os.pipe()
    process = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", screen,
                                "-nolisten", "tcp"], pass_fds=(write,), stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    try:
        if not number:
            raise RuntimeError(f"Xvfb did not start ({process.wait()})")
        yield f":{number}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# The screen position of the viewport's origin, from the next mouse move over the page.
VIEWPORT_AT = """window.__viewportAt = null;
addEventListener("mousemove", (e) => {
  window.__viewportAt = [e.screenX - e.clientX, e.screenY - e.clientY];
}, {capture: true, once: true});"""


class XMouse:
    """The X server's pointer on a tab's display, in the tab's viewport coordinates."""

    def __init__(self, tab):
        self.tab = tab
        self.x = xdisplay.Display(tab.display)
        self.offset = self._calibrate()

    def _send(self, kind, **where) -> None:
        xtest.fake_input(self.x, kind, **where)
        self.x.sync()

    def _move_screen(self, x: int, y: int) -> None:
        self._send(X.MotionNotify, x=x, y=y)

    def _calibrate(self) -> tuple[int, int]:
        """Where the viewport's origin is on the screen (window position, toolbars)."""
        self.tab.evaluate(VIEWPORT_AT)
        self._move_screen(635, 500)  # two points: the pointer may already be at either
        self._move_screen(640, 500)
        x, y = self.tab.wait_for("return window.__viewportAt;", timeout_s=5)
        return round(x), round(y)

    def move(self, x: float, y: float) -> None:
        self._move_screen(round(x) + self.offset[0], round(y) + self.offset[1])

    def drag(self, start, end, steps: int = 20, step_s: float = 0.02) -> None:
        """Presses the left button at ``start``, moves to ``end`` in steps, and releases."""
        self.move(*start)
        time.sleep(0.05)
        self._send(X.ButtonPress, detail=1)
        for step in range(1, steps + 1):
            self.move(start[0] + (end[0] - start[0]) * step / steps,
                      start[1] + (end[1] - start[1]) * step / steps)
            time.sleep(step_s)
        time.sleep(0.1)
        self._send(X.ButtonRelease, detail=1)

    def close(self) -> None:
        self.x.close()
