"""One session, one tab: a second tab or browser takes the session over and the first one is
told and stops; a study stopped by its researchers ends the session on screen."""
import pytest

from tests.browser.participant import assert_every_trial_once, enter, run_by_hand, stored, wait_done
from tests.conftest import VIEWPORT
from tests.live_site import writing
from webapp.extensions import db
from webapp.models import Study
from webapp.participant import sessions
from webapp.researcher import lifecycle, studies

pytestmark = pytest.mark.browser


def open_run_page(context, page):
    other = context.new_page()
    other.set_default_timeout(20_000)
    other.goto(page.url)
    return other


def test_a_second_tab_takes_over_at_once_and_the_session_completes_there(page, site):
    token = enter(page, site, "aot", "tabs-same-browser")
    run_by_hand(page, until="consent")  # past the device check
    second = open_run_page(page.context, page)
    # Same browser: the first tab hears of it straight away, before it sends anything.
    page.wait_for_selector("body[data-screen=other-tab]", timeout=5_000)
    assert "another tab" in page.text_content("#stage")
    run_by_hand(second, site=site, token=token)
    data = stored(site.app, token)
    assert data["status"] == "completed"
    assert_every_trial_once(data)
    assert page.evaluate("document.body.dataset.screen") == "other-tab"
    assert not page.js_errors


def test_another_browser_takes_over_and_the_first_stops_at_its_next_request(page, site, browser):
    token = enter(page, site, "aot", "tabs-two-browsers")
    run_by_hand(page, until="consent")  # past the device check
    context = browser.new_context(viewport=VIEWPORT)
    try:
        second = open_run_page(context, page)
        run_by_hand(second, until="consent")
        page.click("#consent-yes")  # refused by the server: the session is the other's now
        page.wait_for_selector("body[data-screen=other-tab]")
        # "Continue here instead" claims it back; the other browser then stops in its turn.
        with page.expect_navigation():  # it reloads: no body to read until the new one
            page.click("#continue-here")
        run_by_hand(page, until="consent")
        second.click("#consent-yes")
        second.wait_for_selector("body[data-screen=other-tab]")
        run_by_hand(page, site=site, token=token)
    finally:
        context.close()
    data = stored(site.app, token)
    assert data["status"] == "completed"
    assert_every_trial_once(data)


def test_a_study_stopped_mid_session_ends_it_on_screen_with_the_stopped_code(page, site):
    token = enter(page, site, "aot", "stopped-mid-session")
    run_by_hand(page, until="clip", site=site, token=token)
    with site.app.app_context():
        codes = sessions.completion_codes(site.slugs["aot"])
        lifecycle.transition(site.slugs["aot"], "stop")
    try:
        page.wait_for_selector("body[data-onset]")
        page.keyboard.press("f")
        code = wait_done(page)
        assert page.evaluate("document.body.dataset.status") == "stopped"
        assert code == codes["stopped"]
        assert "answers you gave are saved" in page.text_content("#stage")
    finally:
        with writing(site.app) as session:  # the other browser tests share this study
            study = studies.get_study(site.slugs["aot"])
            session.execute(db.update(Study).where(Study.id == study.id)
                            .values(status="open", close_mode=None))
    assert stored(site.app, token)["status"] == "stopped"
