"""The study page on a 1280 px laptop: no sideways page scroll, the Verdict column in view, an
excluded row not green; and axe-core finds no serious or critical problem on the study page
or a participant's trial view (the participant's screens: test_participant_screens.py)."""
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import select

from experiments.designs import STUDY_CONFIG_KEY
from tests.factories import STIMULUS_SET, tiny_designs
from tests.live_site import writing
from webapp import auth
from webapp.models import Session, Study, Subject

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
USERNAME, PASSWORD = "layout-admin", "a long enough password"
SLUG = "layout-1280"
# Prolific ids are 24 characters; reasons as long as the rules give.
PEOPLE = [("5f3c1a2b4d6e8f0a1b2c3d4e", "completed", False, []),
          ("6a7b8c9d0e1f2a3b4c5d6e7f", "failed_attention", True,
           ["catch_failed", "catch_accuracy", "too_many_technical"]),
          ("7b8c9d0e1f2a3b4c5d6e7f8a", "no_consent", False, []),
          ("8c9d0e1f2a3b4c5d6e7f8a9b", "completed", True, ["manual"])]


@pytest.fixture(scope="module")
def study_page(browser, site):
    from webapp.researcher import studies

    with site.app.app_context():
        auth.create_researcher(USERNAME, PASSWORD, is_admin=True)
        design = tiny_designs()["aot"]
        studies.create_study(SLUG, design.name, STIMULUS_SET)
    with writing(site.app) as db_session:
        study = db_session.scalar(select(Study).where(Study.slug == SLUG))
        study.design_snapshot = {**design.to_dict(),
                                 STUDY_CONFIG_KEY: {"stimulus_set": STIMULUS_SET,
                                                   "time_zone": "Asia/Tokyo"}}
        for n, (pid, status, excluded, reasons) in enumerate(PEOPLE):
            subject = Subject(study=study, kind="human", external_id=pid,
                              recruitment={"PROLIFIC_PID": pid})
            db_session.add(Session(subject=subject, token=uuid.uuid4().hex, seed=n,
                                   status=status, excluded=excluded,
                                   exclusion_reasons=reasons, schedule=[],
                                   condition={"key_mapping": {"f": "F", "j": "B"}}))
    context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto(f"{site.base_url}/auth/login")
    page.fill("#username", USERNAME)
    page.fill("#password", PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url("**/researcher/")
    page.goto(f"{site.base_url}/researcher/studies/{SLUG}")
    page.wait_for_selector("#participants")
    yield page
    context.close()


def serious_axe_violations(page) -> list:
    if not page.evaluate("() => Boolean(window.axe)"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate("""async () => {
        const result = await axe.run(document, {runOnly: {type: 'tag',
            values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}});
        return result.violations.filter((v) => ['serious', 'critical'].includes(v.impact))
            .map((v) => ({id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.html)}));
    }""")


def test_the_study_page_fits_1280_px_with_the_verdict_in_view(study_page):
    page = study_page
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280
    verdict = page.locator("#participants th", has_text="Verdict").bounding_box()
    assert verdict and verdict["x"] + verdict["width"] <= 1280
    button = page.locator(f"tr[data-participant='{PEOPLE[0][0]}'] .review-button")
    box = button.bounding_box()
    assert box and box["x"] + box["width"] <= 1280


def test_an_excluded_row_is_not_green_and_a_declined_one_not_included(study_page):
    page = study_page
    colours = page.evaluate("""() => Object.fromEntries(Array.from(
        document.querySelectorAll('#participants tbody tr')).map((row) =>
        [row.dataset.participant, getComputedStyle(row).backgroundColor]))""")
    for pid, _, excluded, _ in PEOPLE:
        red, green, blue = (int(c) for c in colours[pid].split("(")[1].split(",")[:3])
        assert not (green > red and green > blue), (pid, colours[pid])  # never green
        if excluded:
            assert colours[pid] != colours[PEOPLE[0][0]], pid
    declined = page.locator(f"tr[data-participant='{PEOPLE[2][0]}'] td.verdict").inner_text()
    assert declined.startswith("declined consent")
    page.select_option("#participant-show", "included")  # a declined session is not included
    shown = page.evaluate("""() => Array.from(document.querySelectorAll('#participants tbody tr'))
        .filter((row) => !row.hidden).map((row) => row.dataset.participant)""")
    assert shown == [PEOPLE[0][0]]
    page.select_option("#participant-show", "all")


def test_the_study_page_and_a_participants_trials_pass_axe(study_page, site):
    page = study_page
    assert serious_axe_violations(page) == []
    page.goto(f"{site.base_url}/researcher/studies/{SLUG}/trials?participant="
              f"{quote(PEOPLE[0][0])}")
    page.wait_for_selector("#participant-sessions")
    assert serious_axe_violations(page) == []
