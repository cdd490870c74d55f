"""The entry link resumes a session only in the browser that began it (its resume cookie):
there a new tab takes the session over; another browser gets a page that sends it back,
until a researcher's single-use link lets it in."""
import pytest
from sqlalchemy import select

from tests.browser.participant import enter, run_by_hand, stored
from tests.conftest import VIEWPORT
from webapp.extensions import db
from webapp.models import Session
from webapp.participant import resume
from webapp.researcher import studies

pytestmark = pytest.mark.browser


def test_the_entry_link_resumes_in_its_own_browser_and_elsewhere_only_by_a_researchers_link(
        page, site, browser):
    who, slug = "resume-browser-1", site.slugs["aot"]
    token = enter(page, site, "aot", who)
    run_by_hand(page, until="consent")  # past the device check
    link = f"{site.base_url}/p/{slug}?participant={who}"
    # The same browser: the link opens the same session in a new tab, which takes it over.
    second = page.context.new_page()
    second.goto(link)
    second.wait_for_url(f"**/run/{token}")
    page.wait_for_selector("body[data-screen=other-tab]", timeout=5_000)
    run_by_hand(second, until="consent")
    context = browser.new_context(viewport=VIEWPORT)
    try:
        other = context.new_page()
        errors = []
        other.on("pageerror", lambda error: errors.append(str(error)))
        # Another browser with the id: sent back, shown nothing, changing nothing.
        response = other.goto(f"{link}&lang=de")
        assert response.status == 403 and "/run/" not in other.url
        assert other.locator("#elsewhere").is_visible()
        assert token not in other.content()
        second.click("#consent-yes")  # the session is still the second tab's
        second.wait_for_function("() => document.body.dataset.screen !== 'consent'")
        assert second.evaluate("document.body.dataset.screen") != "other-tab"
        # The researcher's link: this browser continues the same session.
        with site.app.app_context():
            code, _ = resume.issue_link(studies.get_study(slug), who, "ada")
        other.goto(f"{site.base_url}/p/{slug}?resume={code}")
        other.click("#resume-continue")
        other.wait_for_url("**/run/**")
        other.wait_for_selector("body[data-screen]")
        assert not errors and not page.js_errors
        # The same session, under a new token: the first browser's tabs open it no more.
        moved = other.url.rsplit("/", 1)[-1].split("?")[0]
        with site.app.app_context():
            assert moved != token and db.session.scalar(
                select(Session.id).where(Session.token == token)) is None
    finally:
        context.close()
    assert stored(site.app, moved)["status"] == "in_progress"
    with site.app.app_context():  # the other browser's ?lang=de changed nothing
        assert db.session.scalar(select(Session.device_info).where(Session.token == moved)) \
            .get("language") != "de"
