"""Fixtures for whole-session browser tests: headless Debian Chromium driven by Playwright
(``browser`` and ``page``) against the live ``site``, both in tests/conftest.py.

``simulated_aot`` is one simulated arrow-of-time session per test process, watched for
Content-Security-Policy violations, script errors and the frames it decoded, for the tests
that only read what a whole simulated session leaves behind (test_csp, test_session_aot,
test_presentation, test_researcher_export): each ran its own, about 11 s apiece, and all
read the same kind of session."""
from types import SimpleNamespace

import pytest

from tests.browser.participant import TRACK_BITMAPS, enter, wait_done, watching


@pytest.fixture(scope="session")
def simulated_aot(browser, site):
    """A finished simulated arrow-of-time session (clips played from blob: URLs): its
    participant id, token and completion code, the page's problems and script errors, how many ImageBitmaps it made
    and whether every one was freed (read on the done screen)."""
    with watching(browser) as page:
        page.add_init_script(TRACK_BITMAPS)
        participant = "sim-aot-shared"
        token = enter(page, site, "aot", participant, simulate=True)
        code = wait_done(page)
        return SimpleNamespace(
            participant=participant, token=token, code=code, problems=list(page.problems), js_errors=list(page.js_errors),
            bitmaps=page.evaluate("() => window.bitmaps.length"),
            bitmaps_freed=page.evaluate("() => window.bitmaps.every((b) => b.width === 0)"))
