"""The tests' own Chromium (tests/conftest.py ``browser``): the address bar's WebUI popups are
off, and Playwright's disabled features are still disabled (Chromium keeps only the last
--disable-features, so a list of our own alone would drop Playwright's)."""
import pytest

from bench.harness.tabs import HIDDEN_UI

pytestmark = pytest.mark.browser


def test_hidden_ui_joins_playwrights_disabled_features(browser):
    page = browser.new_page()
    cdp = browser.new_browser_cdp_session()
    try:
        page.goto("chrome://version")
        switches = page.locator("#command_line").inner_text().split()
        targets = cdp.send("Target.getTargets", {"filter": [{}]})["targetInfos"]
    finally:
        cdp.detach()
        page.close()
    lists = [set(s.partition("=")[2].split(",")) for s in switches
             if s.startswith("--disable-features=")]
    *earlier, kept = lists  # Chromium keeps the last
    assert "PaintHolding" in set().union(*earlier)  # one of Playwright's
    assert kept == set().union(*earlier) | set(HIDDEN_UI)
    assert not [t["url"] for t in targets if t["url"].startswith("chrome://omnibox")]
