"""Fixtures for whole-session browser tests: headless Debian Chromium driven by Playwright
(``browser`` and ``page``) against the live ``site``, both in tests/conftest.py."""
