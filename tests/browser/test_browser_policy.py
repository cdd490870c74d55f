"""The study's browser policy in the runner: WebKit (Safari) is refused by default, with the
reason and what to do (the same link in an accepted browser, where the same id continues),
and runs where a study opts it in (docs/measurements.md "Onset timing per engine")."""
import pytest

from experiments.texts import defaults
from tests.browser.participant import enter, session_row, stored
from tests.factories import STIMULUS_SET, tiny_designs
from tests.live_site import writing

pytestmark = pytest.mark.browser
# Desktop Safari: the runner reads the engine from the user agent (static/js/device.js).
SAFARI = ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like "
          "Gecko) Version/17.5 Safari/605.1.15")


def open_default(site) -> str:
    """A study made from a shipped design without a study file: the default browsers."""
    from webapp.researcher import lifecycle, studies

    kind = "aot_default_browsers"
    if kind not in site.slugs:
        design = tiny_designs()["aot"]
        with writing(site.app):
            study = studies.create_study("tiny-aot-default", design.name, STIMULUS_SET)
            study.design_snapshot = design.to_dict()
        with site.app.app_context():
            lifecycle.transition("tiny-aot-default", "open")
        site.slugs[kind] = "tiny-aot-default"
    return kind


@pytest.fixture
def safari_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, user_agent=SAFARI)
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def _screen_out_reasons(app, token: str) -> list:
    from sqlalchemy import select

    from webapp.extensions import db
    from webapp.models import Session

    with app.app_context():
        info = db.session.scalar(select(Session.device_info).where(Session.token == token))
    return info["screen_out"]["reasons"]


def _device_outcome(page) -> str:
    """What the device check decided: switch (asked to use another browser), screened_out, or
    passed (the keyboard check or consent comes next)."""
    page.wait_for_function("() => document.body.dataset.status === 'screened_out' || "
                           "['keyboard-check', 'consent', 'device-switch']"
                           ".includes(document.body.dataset.screen)")
    return page.evaluate("() => document.body.dataset.status === 'screened_out' ? 'screened_out'"
                         " : document.body.dataset.screen === 'device-switch' ? 'switch'"
                         " : 'passed'")


def test_webkit_is_asked_to_switch_and_the_same_id_continues_in_chromium(safari_page, page,
                                                                          site):
    token = enter(safari_page, site, open_default(site), "safari-default")
    assert _device_outcome(safari_page) == "switch"
    shown = safari_page.inner_text("#stage")
    # Why, and what to do: the same link in an accepted browser, with the same id.
    assert defaults("en")["device_problem_browser"].split("{")[0] in shown
    assert "Open the same study link in Chrome, Edge, or Firefox" in shown and "Safari" not in shown
    assert stored(site.app, token)["status"] == "started"
    # The same id in Chromium: a fresh start of the same participant, not "started elsewhere".
    moved = enter(page, site, open_default(site), "safari-default")
    assert moved != token
    assert _device_outcome(page) == "passed"
    row = session_row(site.app, moved)
    assert row["status"] == "started"
    assert row["device_info"]["switched_from"][0]["switch"]["reasons"] == ["browser"]
    # Safari's token opens nothing more: its "I cannot switch" changes nothing.
    assert safari_page.evaluate(
        f"fetch('/api/session/{token}').then((r) => r.status)") == 404


def test_a_participant_who_cannot_switch_is_screened_out_with_the_code(safari_page, site):
    token = enter(safari_page, site, open_default(site), "safari-cannot-switch")
    assert _device_outcome(safari_page) == "switch"
    safari_page.click("#device-give-up")
    safari_page.wait_for_function("() => document.body.dataset.status === 'screened_out'")
    shown = safari_page.inner_text("#stage")
    assert stored(site.app, token)["status"] == "screened_out"
    assert _screen_out_reasons(site.app, token) == ["browser"]
    # The code it shows is a screen-out code, not a completion code.
    assert defaults("en")["screen_out_code_label"] in shown
    assert defaults("en")["completion_code_label"] not in shown


def test_webkit_runs_a_study_that_opts_it_in(safari_page, site):
    token = enter(safari_page, site, "aot", "safari-opted-in")
    assert _device_outcome(safari_page) == "passed"
    assert stored(site.app, token)["status"] == "started"
