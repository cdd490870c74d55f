"""The tests' own Chromium (tests/conftest.py ``browser``): the address bar's WebUI popups are
off, and Playwright's disabled features are still disabled (Chromium keeps only the last
--disable-features, so a list of our own alone would drop Playwright's)."""
import pytest

from tests.conftest import HIDDEN_UI

pytestmark = pytest.mark.browser


def test_hidden_ui_joins_playwrights_disabled_features(browser):
    page = browser.new_page()
    try:
        page.goto("chrome://version")
        switches = page.locator("#command_line").inner_text().split()
        targets = browser.new_browser_cdp_session().send(
            "Target.getTargets", {"filter": [{}]})["targetInfos"]
    finally:
        page.close()
    lists = [set(s.partition("=")[2].split(",")) for s in switches
             if s.startswith("--disable-features=")]
    assert len(lists) == 2, lists  # Playwright's, then the one Chromium keeps
    playwrights, kept = lists
    assert {"PaintHolding", "ThirdPartyStoragePartitioning"} <= playwrights
    assert kept == playwrights | set(HIDDEN_UI)
    assert not [t["url"] for t in targets if t["url"].startswith("chrome://omnibox")]
