"""Time in tests, in the only two forms it may take.

A test that waits for something waits for that state (``wait_until`` here for states Python
reads; ``page.wait_for_function`` / ``tab.wait_for`` for states in the page; an event), never
for a fixed time.  A fixed delay is allowed only where the delay is the stimulus itself, and
then it goes through ``hold``, whose caller says which stimulus it is.
"""
import time


def wait_until(condition, timeout_s: float, message: str, every_s: float = 0.01):
    """Polls ``condition()`` until it returns a true value, and returns that value; fails
    with ``message`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, message
        time.sleep(every_s)
    return value


def hold(ms: float, page=None) -> None:
    """Lets ``ms`` pass on purpose, because the delay is what the test presents: a participant
    who answers late, a pointer moved at a hand's pace, a network down for a while, a window
    in which something must not happen.  With a Playwright ``page``, its events (dialogs,
    routes) keep being handled meanwhile."""
    if page is not None:
        page.wait_for_timeout(ms)
    else:
        time.sleep(ms / 1000)
