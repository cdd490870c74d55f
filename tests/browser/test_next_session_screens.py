"""The end of session 1 and the wait page of a two-day study, read in the participant's own
time zone (UTC+13 and UTC−10) and language, with the calendar file the screen offers."""
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select

from experiments.designs import STUDY_CONFIG_KEY
from experiments.texts import defaults
from tests.browser.participant import enter, run_by_hand
from tests.factories import STIMULUS_SET, tiny_designs
from tests.live_site import writing
from tests.webapp.test_next_session import event, unescape, utc_time
from webapp.models import Session

pytestmark = pytest.mark.browser
TONGA, HONOLULU = "Pacific/Tongatapu", "Pacific/Honolulu"  # UTC+13 and UTC−10, no DST
GAP = timedelta(hours=tiny_designs()["aot"].session_gap_hours)


@pytest.fixture
def zoned(browser):
    """``open(timezone_id, locale)``: a page whose browser lives in that zone."""
    contexts = []

    def open_page(zone: str, locale: str = "en-US"):
        context = browser.new_context(viewport={"width": 1280, "height": 800},
                                      timezone_id=zone, locale=locale)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.js_errors = []
        page.on("pageerror", lambda error: page.js_errors.append(str(error)))
        return page

    yield open_page
    for context in contexts:
        context.close()


def german(site) -> str:
    from webapp.researcher import lifecycle, studies

    kind = "aot_de_next"
    if kind not in site.slugs:
        design = tiny_designs()["aot"]
        with writing(site.app):
            study = studies.create_study("tiny-aot-de-next", design.name, STIMULUS_SET)
            study.design_snapshot = {**design.to_dict(), STUDY_CONFIG_KEY: {"languages": ["de"]}}
        with site.app.app_context():
            lifecycle.transition("tiny-aot-de-next", "open")
        site.slugs[kind] = "tiny-aot-de-next"
    return kind


def completed_at(site, token: str, when: datetime | None = None) -> datetime:
    """The session's completion (set to ``when`` as completed, if given), in UTC."""
    with writing(site.app) as session:
        row = session.scalar(select(Session).where(Session.token == token))
        if when is not None:
            row.status, row.completed_at = "completed", when
        return row.completed_at.astimezone(timezone.utc)


def expect_local(moment: datetime, zone: str, language: str) -> list[str]:
    """Pieces the local rendering must hold: the local date and the local clock time."""
    local = moment.astimezone(ZoneInfo(zone))
    if language == "de":
        months = ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August",
                  "September", "Oktober", "November", "Dezember"]
        return [f"{local.day}. {months[local.month - 1]} {local.year}", local.strftime("%H:%M")]
    hour = local.hour % 12 or 12
    return [f"{local.strftime('%B')} {local.day}, {local.year}", f"{hour}:{local.strftime('%M')}"]


def calendar_href(page) -> str:
    """The calendar link as the browser resolves it (the page writes a relative one)."""
    assert page.get_attribute("#calendar-link", "download") is not None
    return page.evaluate("() => document.getElementById('calendar-link').href")


def test_session_one_ends_with_the_next_session_in_local_time_utc_plus_13(zoned, site):
    page = zoned(TONGA)
    token = enter(page, site, "aot", "tonga-1", prolific=True)
    run_by_hand(page, site=site, token=token)
    assert page.evaluate("() => document.body.dataset.status") == "completed"
    opens_at = completed_at(site, token) + GAP
    shown = page.inner_text("#stage")
    title = defaults("en")["next_session_title"].format(session=1, sessions=2)
    assert title in shown and defaults("en")["done_completed_title"] not in shown
    assert "recruitment site" in shown  # how they will be invited
    local = page.inner_text("#next-session time")
    for piece in expect_local(opens_at, TONGA, "en"):
        assert piece in local, (piece, local)
    assert "GMT+13" in local
    assert page.get_attribute("#next-session time", "datetime") == \
        opens_at.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    # The code is still there, and the way back waits long enough to save the calendar file.
    assert page.text_content("#completion-code")
    assert int(page.get_attribute("#countdown", "data-seconds")) > 30
    props = event(page.request.get(calendar_href(page)).body())
    assert utc_time(props["DTSTART"]) == opens_at.replace(microsecond=0)
    assert "tonga-1" in props["URL"]
    assert not page.js_errors


def test_a_german_participant_in_utc_minus_10_reads_german_local_time(zoned, site):
    page = zoned(HONOLULU, locale="de-DE")
    kind = german(site)
    token = enter(page, site, kind, "honolulu-1")
    # Session 1 completed so that session 2 opens at 05:30 UTC on 15 January: still the 14th
    # in Honolulu. Reloading the ended session shows its ending again.
    opens_at = datetime(2030, 1, 15, 5, 30, tzinfo=timezone.utc)
    completed_at(site, token, opens_at - GAP)
    page.reload()
    page.wait_for_selector("body[data-screen=done]")
    shown = page.inner_text("#stage")
    assert defaults("de")["next_session_title"].format(session=1, sessions=2) in shown
    assert "Rekrutierungsseite" in shown and "recruitment" not in shown
    local = page.inner_text("#next-session time")
    assert "14. Januar 2030" in local and "19:30" in local and "GMT-10" in local, local
    assert page.inner_text("#calendar-link") == defaults("de")["next_session_calendar"]
    props = event(page.request.get(calendar_href(page)).body())
    assert utc_time(props["DTSTART"]) == opens_at
    assert unescape(props["SUMMARY"]) == "Studiensitzung 2 von 2"
    assert not page.js_errors


@pytest.mark.parametrize("zone, language, pieces", [
    (TONGA, "en", ["January 16, 2030", "1:30", "GMT+13"]),
    (HONOLULU, "de", ["15. Januar 2030", "02:30", "GMT-10"]),
])
def test_the_wait_page_shows_local_time_and_looks_like_the_others(zoned, site, zone, language,
                                                                   pieces):
    page = zoned(zone, locale="de-DE" if language == "de" else "en-US")
    kind = german(site) if language == "de" else "aot"
    who = f"early-{language}"
    token = enter(page, site, kind, who)
    opens_at = datetime(2030, 1, 15, 12, 30, tzinfo=timezone.utc)
    completed_at(site, token, opens_at - GAP)
    page.goto(f"{site.base_url}/p/{site.slugs[kind]}?{urlencode({'participant': who})}")
    page.wait_for_function("() => !document.querySelector('time[data-local]')"
                           ".textContent.includes('UTC')")
    local = page.inner_text("time[data-local]")
    for piece in pieces:
        assert piece in local, (piece, local)
    assert defaults(language)["wait_title"] in page.inner_text("h1")
    # Styled like the other participant pages: the runner's grey, its centred stage.
    assert page.evaluate("() => getComputedStyle(document.body).backgroundColor") == \
        "rgb(128, 128, 128)"
    assert page.evaluate("() => getComputedStyle(document.querySelector('.stage')).display") == \
        "flex"
    # Centred on the page, as the runner's own end screen is.
    box = page.locator("h1").bounding_box()
    assert box["y"] > 150, box
    assert not page.js_errors
