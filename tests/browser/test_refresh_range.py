"""A study can require a refresh-rate range (participants.min_refresh_hz / max_refresh_hz):
the device check measures the display's rate, stores it, and refuses one outside the range
with what to do (set the display's rate, or use another screen); by default every rate is
admitted. Headless Chromium refreshes at 60 Hz."""
import pytest

from experiments.texts import defaults
from tests.browser.participant import enter, session_row
from tests.factories import site_study, tiny_designs

pytestmark = pytest.mark.browser


def refresh_study(site, kind: str, **settings) -> str:
    return site_study(site, kind, tiny_designs()["aot"], **settings)


def device_outcome(page) -> str:
    """The screen the device check ends on: device-problem (asked to fix something here), or
    keyboard-check (passed)."""
    page.wait_for_function("() => ['keyboard-check', 'device-problem', 'device-switch']"
                           ".includes(document.body.dataset.screen)")
    return page.evaluate("() => document.body.dataset.screen")


def test_a_study_requiring_100_hz_refuses_a_60_hz_browser_and_says_what_to_do(page, site):
    token = enter(page, site, refresh_study(site, "refresh_100", min_refresh_hz=100),
                  "refresh-60")
    assert device_outcome(page) == "device-problem"
    shown = page.inner_text("#stage")
    before_values = defaults("en")["device_problem_refresh"].split("{")[0]
    assert before_values in shown and "≥ 100 Hz" in shown and "about 60 Hz" in shown, shown
    assert "display settings" in shown
    # The measured rate is stored with the device check.
    assert session_row(site.app, token)["device_info"]["device"]["refresh_hz"] == \
        pytest.approx(60, abs=2)
    page.click("#device-give-up")
    page.wait_for_function("() => document.body.dataset.status === 'screened_out'")
    assert "≥ 100 Hz" in page.inner_text("#stage")  # why, beside the screen-out code
    row = session_row(site.app, token)
    assert row["status"] == "screened_out"
    assert row["device_info"]["screen_out"]["reasons"] == ["refresh"]
    # The link opened again: the server's screen-out page says why too, with the stored rate.
    page.goto(f"{site.base_url}/p/{site.slugs['refresh_100']}?participant=refresh-60")
    assert "≥ 100 Hz" in page.inner_text("body") and "about 60 Hz" in page.inner_text("body")


def test_a_range_that_holds_60_hz_and_the_default_admit_the_browser(page, site):
    enter(page, site, refresh_study(site, "refresh_50_75", min_refresh_hz=50,
                                    max_refresh_hz=75), "refresh-in-range")
    assert device_outcome(page) == "keyboard-check"
    enter(page, site, refresh_study(site, "refresh_default"), "refresh-default")
    assert device_outcome(page) == "keyboard-check"


def test_a_study_capping_the_rate_below_60_hz_refuses_it(page, site):
    enter(page, site, refresh_study(site, "refresh_30", max_refresh_hz=30), "refresh-fast")
    assert device_outcome(page) == "device-problem"
    assert "≤ 30 Hz" in page.inner_text("#stage")
