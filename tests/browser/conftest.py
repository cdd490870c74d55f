"""Fixtures for whole-session browser tests: headless Debian Chromium driven by Playwright
(``browser`` and ``page``, in tests/conftest.py) against the live site of tests/live_site.py,
which tests/engines shares."""
from tests.live_site import site  # noqa: F401  (fixture)
