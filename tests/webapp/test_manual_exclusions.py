"""Manual exclusion rules: who may add one, what a careless or hostile request gets, and where
the verdict shows (roster, exports, codebook, exclusion flow, Prolific list)."""
import csv
import html
import io
import json
import re

import pytest
import sqlalchemy as sa

from analysis.exclusions import trial_exclusion_flow
from analysis.loading import read_trials
from tests.factories import RESEARCHER_PASSWORD
from webapp.extensions import db
from webapp.models import ManualExclusion, Study, Trial
from webapp.researcher import exports
from webapp.researcher.roster import roster_frame

ODD = "P/1 <b>&'\"=x?#%"  # a recruitment id with every character a URL or page could trip on


@pytest.fixture
def study(logged_in, factory):
    """Owner "ada" signed in; P-ok kept, P-catch excluded by the rules, ODD kept."""
    study = factory.study(slug="pilot")
    stimulus = factory.stimulus()
    sessions = {
        "P-ok": factory.session(study, subject_id="P-ok", status="completed"),
        "P-catch": factory.session(study, subject_id="P-catch", status="failed_attention",
                                   excluded=True, exclusion_reasons=["catch_failed"]),
        ODD: factory.session(study, subject_id=ODD, status="completed"),
    }
    for session in sessions.values():
        factory.trial(session, stimulus)
        factory.trial(session, stimulus, response=None, correct=False, rt_ms=None,
                      excluded=True, exclusion_reasons=["timeout"], extra={"timed_out": True})
    return study


def _post(client, participant="P-ok", action="exclude", reason="answered at random", slug="pilot"):
    data = {"participant": participant, "action": action}
    if reason is not None:
        data["reason"] = reason
    return client.post(f"/researcher/studies/{slug}/exclusions", data=data)


def _rules(app):
    with app.app_context():
        return db.session.execute(sa.select(ManualExclusion.action, ManualExclusion.reason,
                                            ManualExclusion.sequence)
                                  .order_by(ManualExclusion.sequence)).all()


def _read(files, tmp_path):
    (tmp_path / "trials.csv").write_bytes(files["trials.csv"])
    return read_trials(tmp_path / "trials.csv")


def _trial_rows(app):
    with app.app_context():
        return sorted((t.session_id, t.trial_index, t.excluded, tuple(t.exclusion_reasons))
                      for t in db.session.scalars(sa.select(Trial)))


def test_an_owner_excludes_by_hand_and_no_trial_changes(app, logged_in, study):
    before = _trial_rows(app)
    response = _post(logged_in)
    assert response.status_code == 303
    assert _rules(app) == [("exclude", "answered at random", 1)]
    assert _trial_rows(app) == before  # a rule, never an edit of the data
    with app.app_context():
        roster = roster_frame("pilot").set_index("subject_id")
        version = db.session.scalar(sa.select(Study.exclusion_rules_version))
    assert roster.loc["P-ok", "excluded"] and roster.loc["P-ok", "exclusion_reasons"] == ["manual"]
    assert roster.loc["P-ok", "manual_action"] == "exclude"
    assert version.endswith("+manual.1")
    page = logged_in.get("/researcher/studies/pilot").get_data(as_text=True)
    assert "P-ok is excluded (rule 1)" in page
    assert "by hand (exclude): answered at random" in page


def test_the_latest_rule_wins_and_every_rule_is_kept(app, logged_in, study):
    assert _post(logged_in).status_code == 303
    assert _post(logged_in, action="reinstate", reason="bug in catch video").status_code == 303
    assert _post(logged_in, action="exclude", reason="second look").status_code == 303
    assert [r.sequence for r in _rules(app)] == [1, 2, 3]
    with app.app_context():
        row = roster_frame("pilot").set_index("subject_id").loc["P-ok"]
        version = db.session.scalar(sa.select(Study.exclusion_rules_version))
    assert row["manual_reason"] == "second look" and row["excluded"]
    assert version.endswith("+manual.3")


def test_reinstating_lifts_the_rules_verdict_but_not_a_trials_own_reasons(app, logged_in, study,
                                                                         tmp_path):
    assert _post(logged_in, "P-catch", "reinstate", "catch video was broken").status_code == 303
    with app.app_context():
        files = exports.build_export("pilot")
    trials = _read(files, tmp_path)
    mine = trials[trials["subject_id"] == "P-catch"]
    assert mine["exclusion_reasons"].tolist() == [[], ["timeout"]]
    assert mine["excluded"].tolist() == [False, True]
    participants = list(csv.DictReader(io.StringIO(files["participants.csv"].decode())))
    row = next(p for p in participants if p["subject_id"] == "P-catch")
    assert (row["excluded"], row["exclusion_reasons"], row["manual_action"]) == \
        ("False", "[]", "reinstate")


def test_a_manual_exclusion_shows_in_trials_codebook_and_the_reports_flow(app, logged_in, study,
                                                                         tmp_path):
    _post(logged_in)
    with app.app_context():
        files = exports.build_export("pilot")
    trials = _read(files, tmp_path)
    assert trials[trials["subject_id"] == "P-ok"]["exclusion_reasons"].tolist() == \
        [["manual"], ["timeout", "manual"]]
    flow = trial_exclusion_flow(trials).set_index("step")
    assert flow.loc["manual", "n_participants_removed"] == 1
    # the rule is charged after the rules' own reasons: P-catch stays under catch_failed
    assert flow.loc["catch_failed", "n_participants_removed"] == 1
    assert "'manual'" in files["codebook.md"].decode()
    assert json.loads(files["metadata.json"])["exclusion_rules_version"].endswith("+manual.1")


def test_a_viewer_gets_403_and_another_studys_researcher_404(app, client, factory, study):
    factory.study(slug="theirs")
    factory.researcher("vic", role_in={"pilot": "viewer"})
    factory.researcher("eve", role_in={"theirs": "owner"})
    for name, status in (("vic", 403), ("eve", 404)):
        client.post("/auth/logout")
        client.post("/auth/login", data={"username": name, "password": RESEARCHER_PASSWORD})
        assert _post(client).status_code == status, name
    assert _rules(app) == []


def test_an_editor_may_review(app, client, factory, study):
    factory.researcher("ed", role_in={"pilot": "editor"})
    client.post("/auth/logout")
    client.post("/auth/login", data={"username": "ed", "password": RESEARCHER_PASSWORD})
    assert _post(client).status_code == 303
    assert len(_rules(app)) == 1


@pytest.mark.parametrize("reason", [None, "", "   \n "])
def test_a_reason_is_required(app, logged_in, study, reason):
    response = _post(logged_in, reason=reason)
    assert response.status_code == 400
    assert "A reason is required to exclude a participant." in response.get_data(as_text=True)
    assert _rules(app) == []


@pytest.mark.parametrize("data, status", [
    ({"participant": "P-ok", "action": "delete", "reason": "x"}, 400),
    ({"participant": "", "action": "exclude", "reason": "x"}, 400),
    ({"participant": "P-nobody", "action": "exclude", "reason": "x"}, 404),
    ({"participant": "P-ok", "action": "exclude", "reason": "x" * 501}, 400),
])
def test_bad_requests_store_nothing(app, logged_in, study, data, status):
    assert logged_in.post("/researcher/studies/pilot/exclusions", data=data).status_code == status
    assert _rules(app) == []


@pytest.mark.parametrize("participant, reason, status, message", [
    ("P-nobody", "answered at random", 404, "No participant 'P-nobody' in 'pilot'."),
    ("P-ok", "  ", 400, "A reason is required to exclude a participant."),
])
def test_a_refused_rule_shows_its_error_on_the_study_page_with_the_form_kept(
        logged_in, study, participant, reason, status, message):
    response = _post(logged_in, participant, reason=reason)
    page = html.unescape(response.get_data(as_text=True))
    assert response.status_code == status and message in page
    form = page[page.index('id="exclusion-form"'):page.index("</form>", page.index(
        'id="exclusion-form"'))]
    assert f'value="{participant}"' in form and message in form
    assert 'id="participants"' in page  # the rest of the study page is there too


def test_a_double_submit_stores_one_rule(app, logged_in, study):
    assert _post(logged_in).status_code == 303
    second = _post(logged_in, reason="clicked twice")
    assert second.status_code == 303
    assert len(_rules(app)) == 1
    page = logged_in.get("/researcher/studies/pilot").get_data(as_text=True)
    assert "is already excluded by hand" in page


def test_reinstating_someone_never_excluded_is_refused(app, logged_in, study):
    _post(logged_in, "P-ok", "reinstate", "just in case")
    assert _rules(app) == []
    page = logged_in.get("/researcher/studies/pilot").get_data(as_text=True)
    assert "is not excluded; there is nothing to reinstate" in page


def test_a_preview_session_cannot_be_reinstated(app, logged_in, factory, study):
    factory.session(study, subject_id="preview-1", simulated=True, excluded=True,
                    exclusion_reasons=["simulated"], status="completed")
    assert _post(logged_in, "preview-1", "reinstate", "why not").status_code == 400
    assert _rules(app) == []


def test_an_id_with_odd_characters_is_matched_exactly_and_escaped(app, logged_in, study):
    assert _post(logged_in, ODD, reason="<script>alert(1)</script>").status_code == 303
    with app.app_context():
        roster = roster_frame("pilot").set_index("subject_id")
    assert roster.loc[ODD, "excluded"] and not roster.loc["P-ok", "excluded"]
    page = logged_in.get("/researcher/studies/pilot").get_data(as_text=True)
    assert "<script>alert(1)</script>" not in page and "<b>&" not in page


def test_the_form_needs_its_csrf_token(app, study):
    app.config["WTF_CSRF_ENABLED"] = True
    client = app.test_client()
    page = client.get("/auth/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" (?:type="hidden" )?value="([^"]+)"', page).group(1)
    client.post("/auth/login", data={"username": "ada", "password": RESEARCHER_PASSWORD,
                                     "csrf_token": token})
    assert _post(client).status_code == 400
    assert _rules(app) == []
    page = client.get("/researcher/studies/pilot").get_data(as_text=True)
    form = page[page.index('id="exclusion-form"'):]
    token = re.search(r'name="csrf_token" (?:type="hidden" )?value="([^"]+)"', form).group(1)
    response = client.post("/researcher/studies/pilot/exclusions",
                           data={"participant": "P-ok", "action": "exclude", "reason": "r",
                                 "csrf_token": token})
    assert response.status_code == 303 and len(_rules(app)) == 1


def test_a_viewer_sees_no_exclusion_form(app, client, factory, study):
    factory.researcher("vic", role_in={"pilot": "viewer"})
    client.post("/auth/logout")
    client.post("/auth/login", data={"username": "vic", "password": RESEARCHER_PASSWORD})
    page = client.get("/researcher/studies/pilot").get_data(as_text=True)
    assert 'id="exclusion-form"' not in page and 'id="participants"' in page


def test_the_command_line_excludes_and_reinstates(app, runner, study):
    result = runner.invoke(args=["exclusions", "exclude", "pilot", ODD, "--reason", "bot",
                                 "--by", "ada"])
    assert result.exit_code == 0, result.output
    assert "Rule 1 of 'pilot': exclude" in result.output
    again = runner.invoke(args=["exclusions", "exclude", "pilot", ODD, "--reason", "bot"])
    assert again.exit_code == 1 and "already excluded" in again.output
    never = runner.invoke(args=["exclusions", "reinstate", "pilot", "P-ok", "--reason", "x"])
    assert never.exit_code == 1 and "nothing to reinstate" in never.output
    blank = runner.invoke(args=["exclusions", "reinstate", "pilot", ODD, "--reason", " "])
    assert blank.exit_code == 1 and "A reason is required" in blank.output
    missing = runner.invoke(args=["exclusions", "exclude", "pilot", "P-ok"])
    assert missing.exit_code == 2 and "--reason" in missing.output
    nobody = runner.invoke(args=["exclusions", "exclude", "nope", "P-ok", "--reason", "x"])
    assert nobody.exit_code == 1
    ok = runner.invoke(args=["exclusions", "reinstate", "pilot", ODD, "--reason", "human"])
    assert ok.exit_code == 0, ok.output
    listed = runner.invoke(args=["exclusions", "list", "pilot"])
    assert listed.output.splitlines()[0].split("\t")[2:5] == ["reinstate", ODD, "cli:" +
                                                              listed.output.split("cli:")[1].split("\t")[0]]
    assert [r.action for r in _rules(app)] == ["exclude", "reinstate"]


def test_recompute_keeps_the_manual_rules_in_the_version(app, runner, study):
    runner.invoke(args=["exclusions", "exclude", "pilot", "P-ok", "--reason", "bot"])
    result = runner.invoke(args=["exclusions", "recompute", "pilot"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        assert db.session.scalar(sa.select(Study.exclusion_rules_version)).endswith("+manual.1")
        assert roster_frame("pilot").set_index("subject_id").loc["P-ok", "excluded"]


def test_the_report_from_the_database_applies_manual_rules(app, logged_in, study, tmp_path):
    # `manage.py report STUDY` must count the same participants as the export it sits beside.
    _post(logged_in)
    result = app.test_cli_runner().invoke(args=["report", "pilot", "--out", str(tmp_path),
                                                "--n-boot", "20"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["n_participants_included"] == 1  # ODD only: P-ok by hand, P-catch by rule
    flow = (tmp_path / "tables" / "exclusion_flow.csv").read_text()
    assert "manual" in flow


def test_the_reports_flow_counts_who_entered_without_a_trial(app, factory, study, tmp_path):
    factory.session(study, subject_id="P-screened", status="screened_out", excluded=True,
                    exclusion_reasons=["screened_out"])
    result = app.test_cli_runner().invoke(args=["report", "pilot", "--out", str(tmp_path),
                                                "--n-boot", "20"])
    assert result.exit_code == 0, result.output
    with (tmp_path / "tables" / "exclusion_flow.csv").open() as handle:
        flow = {row["step"]: row for row in csv.DictReader(handle)}
    assert flow["entered"]["n_participants_remaining"] == "4"
    assert flow["screened_out"]["n_participants_removed"] == "1"
