"""A real engine at a rate other than 60 Hz: Firefox ESR with its software vsync at 120 Hz
(the ``layout.frame_rate`` preference), in a window on Xvfb. A study requiring at least
100 Hz admits it, the device check stores the rate it measured, and every clip trial stores
the refresh interval and the cadence its frames were laid on (30 fps at 120 Hz: 4 refreshes
a frame). Headless Chromium cannot be moved off 60 Hz (docs/measurements.md "Refresh rates
in real engines"), so the 60 Hz refusal is tests/browser/test_refresh_range.py's."""
import pytest

from bench.harness.tabs import FIREFOX, FirefoxBridge, FirefoxTab
from bench.harness.xserver import xvfb
from tests.browser.participant import session_row, stored
from tests.engines.conftest import PUPPETEER, require
from tests.engines.participant import enter, run_by_hand
from tests.factories import open_site_study, tiny_designs

pytestmark = pytest.mark.engines

HZ = 120


@pytest.fixture(scope="module")
def firefox_at_120_hz():
    require("Firefox", FIREFOX, "node", PUPPETEER, "Xvfb")
    with xvfb() as display:
        bridge = FirefoxBridge(display, prefs={"layout.frame_rate": HZ})
        tab = FirefoxTab(bridge)
        yield tab
        tab.close()
        bridge.close()


def test_firefox_at_120_hz_is_admitted_by_a_100_hz_study_and_stores_its_cadence(
        firefox_at_120_hz, site):
    tab = firefox_at_120_hz
    if "refresh_min_100" not in site.slugs:
        open_site_study(site.app, "tiny-refresh-min-100", tiny_designs()["aot"],
                        min_refresh_hz=100)
        site.slugs["refresh_min_100"] = "tiny-refresh-min-100"
    token = enter(tab, site, "refresh_min_100", "firefox-120")
    run_by_hand(tab, site=site, token=token)
    data = stored(site.app, token)
    assert data["status"] == "completed"
    device = session_row(site.app, token)["device_info"]["device"]
    assert device["refresh_hz"] == pytest.approx(HZ, rel=0.05)
    clips = [t for t in data["trials"] if t["extra"].get("frames_total")]
    assert clips, "no clip was drawn frame by frame"
    for trial in clips:
        extra = trial["extra"]
        assert extra["refresh_ms"] == pytest.approx(1000 / HZ, rel=0.05), extra
        assert (extra["frame_cadence"], extra["refreshes_per_frame"]) == ("whole", 4), extra
        assert extra["presenter"] in ("worker", "canvas"), extra
    assert not tab.errors()
