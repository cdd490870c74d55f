"""A researcher signs in, opens a study's page, pauses and reopens it, and downloads its export,
which holds the trials a (simulated) participant completed in the same browser (the session
of ``simulated_aot``, tests/browser/conftest.py)."""
import csv
import io
import zipfile

import pytest
from sqlalchemy import func, select

from webapp import auth
from webapp.extensions import db
from webapp.models import Session, Trial

pytestmark = pytest.mark.browser

USERNAME, PASSWORD = "lab-admin", "a long enough password"


@pytest.fixture(scope="module")
def researcher(site):
    with site.app.app_context():
        auth.create_researcher(USERNAME, PASSWORD, is_admin=True)  # sees every study


def _stored_trials(app, token):
    with app.app_context():
        return db.session.scalar(select(func.count(Trial.id)).join(Trial.session)
                                 .where(Session.token == token))


def sign_in(page, base_url):
    page.goto(f"{base_url}/researcher/")
    assert "/auth/login" in page.url  # not signed in yet
    page.fill("#username", USERNAME)
    page.fill("#password", PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url("**/researcher/")


def test_researcher_logs_in_opens_a_study_and_downloads_its_export(browser, site, researcher,
                                                                    simulated_aot):
    participant = simulated_aot.participant
    n_trials = _stored_trials(site.app, simulated_aot.token)
    assert n_trials > 0
    slug = site.slugs["aot"]

    context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
    dash = context.new_page()
    dash.set_default_timeout(20_000)
    errors = []
    dash.on("pageerror", lambda error: errors.append(str(error)))
    try:
        sign_in(dash, site.base_url)
        dash.click(f"a[href='/researcher/studies/{slug}']")
        dash.wait_for_url(f"**/researcher/studies/{slug}")

        assert dash.text_content("#study-status") == "open"
        assert dash.text_content("#participant-link") == f"{site.base_url}/p/{slug}"
        row = dash.locator("#participants tr", has_text=participant).text_content()
        # The simulation answers catch videos at random, so it may end excluded for them.
        assert f"{n_trials}/{n_trials}" in row
        assert "completed" in row or "failed attention" in row
        dash.wait_for_selector("#figure-flow .main-svg")  # plotly.js (served locally) drew it

        dash.click("#action-pause")
        dash.wait_for_selector("#study-status:text('paused')")
        dash.click("#action-open")
        dash.wait_for_selector("#study-status:text('open')")

        with dash.expect_download() as info:
            dash.click("#export-link")
        download = info.value
        assert download.suggested_filename.startswith(f"{slug}-export-")
        with zipfile.ZipFile(download.path()) as archive:
            names = {name.split("/", 1)[1]: name for name in archive.namelist()}
            assert {"trials.csv", "trials.json", "participants.csv", "codebook.csv",
                    "metadata.json"} <= set(names)
            trials = list(csv.DictReader(io.StringIO(archive.read(names["trials.csv"]).decode())))
        mine = [t for t in trials if t["subject_id"] == participant]
        assert len(mine) == n_trials
        assert len({t["trial_index"] for t in mine}) == n_trials  # each trial once
        assert errors == []
    finally:
        context.close()
