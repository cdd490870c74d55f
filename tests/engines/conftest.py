"""Fixtures for the engine tests: per test process, one Firefox ESR (through the puppeteer-core
bridge) and an Xvfb display for each engine; a fresh tab per test in the engine the test is
parametrized with, on the live ``site`` of tests/conftest.py.

A scenario written once for every engine takes ``tab`` parametrized over EVERY_ENGINE
(``@pytest.mark.parametrize("tab", EVERY_ENGINE, indirect=True)``): Chromium's tab is a
Playwright page of the ``browser`` fixture (bench/harness/tabs.py ChromiumTab)."""
import os
import shutil
from pathlib import Path

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

ENGINES = ["firefox", "webkit"]  # what tests/browser does not already run in Chromium
EVERY_ENGINE = ["chromium", *ENGINES]
PUPPETEER = Path(__file__).parents[2] / "node_modules" / "puppeteer-core"


def require(engine: str, *needed: str) -> None:
    """Skips without an engine's programs, except under CI=true, where that is a failure."""
    missing = [str(p) for p in needed if not (Path(p).exists() or shutil.which(p))]
    if missing:
        message = f"{engine} needs {', '.join(missing)} (make setup browser)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def firefox_bridge():
    require("Firefox", FIREFOX, "node", PUPPETEER, "Xvfb")
    with xvfb() as display:
        bridge = FirefoxBridge(display)
        yield bridge
        bridge.close()


@pytest.fixture(scope="session")
def webkit_display():
    require("WebKitGTK", WEBKIT_DRIVER, MINIBROWSER, "Xvfb")
    with xvfb() as display:
        yield display


@pytest.fixture(params=ENGINES)
def tab(request, site):
    if request.param == "chromium":
        tab = ChromiumTab(request.getfixturevalue("browser"))
    elif request.param == "firefox":
        tab = FirefoxTab(request.getfixturevalue("firefox_bridge"))
    else:
        site.faults.record_errors = True
        tab = WebKitTab(request.getfixturevalue("webkit_display"), site.faults)
    yield tab
    tab.close()
    site.faults.record_errors = False
    site.faults.offline = False
