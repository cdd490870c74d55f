"""Who may take session 2, for Prolific's custom allowlist, with their earliest start times:
the export files, the dashboard download, ``manage.py export`` and the codebook
(webapp/researcher/exports.py next_session_allowlist)."""
import csv
import io
import zipfile
from datetime import datetime, timezone

import pytest

from tests.factories import RESEARCHER_PASSWORD
from webapp.researcher import exports
from webapp.researcher.codebook import CODEBOOK

DONE = datetime(2030, 1, 1, 10, 0, tzinfo=timezone.utc)  # + 20 h: 2030-01-02T06:00:00Z
LATER = datetime(2030, 1, 3, 22, 15, 30, tzinfo=timezone.utc)


def _rule(client, slug, participant, action):
    answer = client.post(f"/researcher/studies/{slug}/exclusions",
                         data={"participant": participant, "action": action,
                               "reason": "checked by hand"})
    assert answer.status_code == 303, answer.get_data(as_text=True)


@pytest.fixture
def study(logged_in, factory):
    """A two-session arrow-of-time study with everyone who must and must not be invited."""
    study = factory.study(slug="two-days")
    completed = {"status": "completed", "completed_at": DONE}
    factory.session(study, subject_id="P-ready", **completed)
    factory.session(study, subject_id="P-late", status="completed", completed_at=LATER)
    factory.session(study, subject_id="P-catch", status="failed_attention", completed_at=DONE,
                    excluded=True, exclusion_reasons=["catch_failed"])
    factory.session(study, subject_id="P-slow", excluded=True, completed_at=DONE,
                    status="completed", exclusion_reasons=["min_mean_trial_ms"])
    factory.session(study, subject_id="P-manual", **completed)
    factory.session(study, subject_id="P-back", **completed)
    first = factory.session(study, subject_id="P-started", **completed)
    factory.session(study, subject=first.subject, session_number=2, status="in_progress")
    factory.session(study, subject_id="P-sim", simulated=True, **completed)
    factory.session(study, subject_id="P-running", status="in_progress")
    factory.session(study, subject_id="P-declined", status="no_consent", completed_at=DONE)
    factory.session(study, subject_id="P-practice", status="failed_practice", completed_at=DONE,
                    excluded=True, exclusion_reasons=["practice_gate"])
    factory.session(study, subject_id="gpt-model", kind="model", **completed)
    _rule(logged_in, "two-days", "P-manual", "exclude")
    _rule(logged_in, "two-days", "P-back", "exclude")
    _rule(logged_in, "two-days", "P-back", "reinstate")
    return study


def _rows(data: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(data.decode())))


def test_the_allowlist_holds_only_those_due_for_session_two(app, study):
    with app.app_context():
        files = exports.build_export("two-days", now=DONE)
    # Prolific's custom allowlist: ids only, one per line, no header.
    assert files["next_session_allowlist.csv"].decode().splitlines() == \
        ["P-back", "P-ready", "P-late"]
    times = _rows(files["next_session_start_times.csv"])
    assert [r["participant_id"] for r in times] == ["P-back", "P-ready", "P-late"]
    assert {r["session_number"] for r in times} == {"2"}
    by_id = {r["participant_id"]: r["earliest_start_utc"] for r in times}
    assert by_id["P-ready"] == "2030-01-02T06:00:00Z"
    assert by_id["P-late"] == "2030-01-04T18:15:30Z"
    for value in by_id.values():
        assert datetime.fromisoformat(value).utcoffset().total_seconds() == 0


def test_the_dashboard_downloads_both_lists(app, logged_in, study):
    page = logged_in.get("/researcher/studies/two-days").get_data(as_text=True)
    assert 'id="next-session-allowlist-link"' in page and 'id="next-session-times-link"' in page
    with app.app_context():
        files = exports.build_export("two-days")
    for name in ("next_session_allowlist.csv", "next_session_start_times.csv"):
        response = logged_in.get(f"/researcher/studies/two-days/{name}")
        assert response.status_code == 200 and response.mimetype == "text/csv"
        assert "attachment" in response.headers["Content-Disposition"]
        assert f"two-days-{name}" in response.headers["Content-Disposition"]
        assert response.data == files[name]
    assert logged_in.get("/researcher/studies/two-days/other.csv").status_code in (404, 405)
    assert logged_in.get("/researcher/studies/nope/next_session_allowlist.csv").status_code == 404


def test_a_one_session_study_shows_no_link_and_lists_nobody(app, logged_in, factory):
    factory.study(slug="once", design="frame-ordering")
    factory.session(factory.study(slug="unused"), subject_id="P-x")
    page = logged_in.get("/researcher/studies/once").get_data(as_text=True)
    assert "next-session-allowlist-link" not in page
    response = logged_in.get("/researcher/studies/once/next_session_allowlist.csv")
    assert response.status_code == 200 and response.data == b""


def test_a_viewer_may_download_and_a_stranger_may_not(app, client, factory, study):
    factory.researcher("vic", role_in={"two-days": "viewer"})
    factory.researcher("stranger")
    for username, status in (("vic", 200), ("stranger", 404)):
        client.post("/auth/logout")
        client.post("/auth/login", data={"username": username, "password": RESEARCHER_PASSWORD})
        got = client.get("/researcher/studies/two-days/next_session_allowlist.csv")
        assert got.status_code == status, username


def test_manage_py_export_and_the_zip_hold_the_lists(app, logged_in, runner, study, tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(args=["export", "two-days", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "next_session_allowlist.csv").read_text().splitlines() == \
        ["P-back", "P-ready", "P-late"]
    assert "next_session_start_times.csv" in result.output
    response = logged_in.get("/researcher/studies/two-days/export.zip")
    with zipfile.ZipFile(io.BytesIO(response.data)) as archive:
        names = {name.split("/")[1]: name for name in archive.namelist()}
        assert archive.read(names["next_session_allowlist.csv"]).decode().splitlines() == \
            ["P-back", "P-ready", "P-late"]
        metadata = archive.read(names["metadata.json"]).decode()
    assert "next_session_start_times.csv" in metadata  # hashed with the others


def test_the_codebook_describes_every_column_of_both_lists():
    entries = {(file, column) for file, column, _, _ in CODEBOOK}
    assert ("next_session_allowlist.csv", "participant_id") in entries
    for column in exports.START_TIME_COLUMNS:
        assert ("next_session_start_times.csv", column) in entries
