"""Exports: every stored trial read back exactly once, codebook, metadata, consistency."""
import csv
import io
import json
import os
import sys
import threading
import uuid
import zipfile
from datetime import datetime, timezone

import pandas as pd
import pytest
import sqlalchemy as sa

from analysis.loading import read_trials
from webapp.extensions import db
from webapp.models import Trial
from webapp.researcher import dashboard, exports
from webapp.researcher.codebook import CODEBOOK
from webapp.researcher.export_tables import TRIAL_FILE_COLUMNS
from webapp.trials import CANONICAL_COLUMNS


@pytest.fixture
def study(factory):
    """Two participants (one excluded), AoT trials with awkward values, one frame-order trial."""
    study = factory.study(slug="pilot")
    other = factory.study(slug="other-study")
    fall = factory.clip(clip_key="fall-0", categories=["Fall", "Diffusion"])
    forward = factory.stimulus(fall, direction="forward")
    backward = factory.stimulus(fall, direction="backward")
    frames = factory.stimulus(fall, kind="frame_set", direction=None, frame_indices=[0, 30, 60, 89])
    kept = factory.session(study, subject_id="P-kept", status="completed")
    dropped = factory.session(study, subject_id="P-dropped", status="failed_attention",
                              excluded=True, exclusion_reasons=["catch_failed"])
    factory.trial(kept, forward, rt_ms=512.3456789012345, extra={"key": "f", "nested": {"a": [1, 2]}})
    factory.trial(kept, backward, response=None, correct=False, rt_ms=None,
                  excluded=True, exclusion_reasons=["timeout"], extra={"timed_out": True})
    factory.trial(kept, backward, response="F", correct=False, rt_ms=0.1 + 0.2, dropped_frames=None)
    factory.trial(kept, frames, trial_type="frame_order", direction=None,
                  correct_response="[3, 1, 4, 2]", response="[3, 1, 2, 4]", correct=False,
                  rt_ms=10234.5, extra={"moves": [{"t_ms": 1.5, "from": 0, "to": 2, "via": "mouse"}]})
    factory.trial(dropped, forward, trial_type="catch", block="main-2", extra={"note": 'comma, "quote"\nnewline'})
    factory.trial(factory.session(other), forward)  # another study's trial stays out
    return study


def _stored(app, slug="pilot"):
    from webapp.models import Session, Study, Subject

    with app.app_context():
        return db.session.execute(
            sa.select(Trial).join(Trial.session).join(Session.subject).join(Subject.study)
            .where(Study.slug == slug)).scalars().all()


def test_the_trial_csv_reads_back_every_stored_trial_exactly_once(app, study, tmp_path):
    with app.app_context():
        files = exports.build_export("pilot")
    (tmp_path / "trials.csv").write_bytes(files["trials.csv"])
    back = read_trials(tmp_path / "trials.csv")
    assert list(back.columns[:len(CANONICAL_COLUMNS)]) == CANONICAL_COLUMNS
    stored = _stored(app)
    keys = list(zip(back["session_id"].astype(int), back["trial_index"]))
    assert sorted(keys) == sorted((t.session_id, t.trial_index) for t in stored)
    assert len(set(keys)) == len(keys) == 5
    by_key = {k: row for k, row in zip(keys, back.to_dict("records"))}
    for trial in stored:
        row = by_key[(trial.session_id, trial.trial_index)]
        for column in ("response", "correct_response", "rt_ms"):  # rt_ms unrounded
            assert _same(row[column], getattr(trial, column)), column
        assert row["extra"] == trial.extra
        assert row["categories"] == ["Fall", "Diffusion"]
        assert row["experiment"] == "pilot"


def _same(read, stored) -> bool:
    return pd.isna(read) if stored is None else read == stored


def test_exclusions_in_the_csv_merge_trial_and_participant_reasons(app, study):
    with app.app_context():
        rows = list(csv.DictReader(io.StringIO(exports.build_export("pilot")["trials.csv"].decode())))
    reasons = {(r["subject_id"], r["trial_index"]): (r["excluded"], json.loads(r["exclusion_reasons"]))
               for r in rows}
    assert reasons[("P-kept", "0")] == ("False", [])
    assert reasons[("P-kept", "1")] == ("True", ["timeout"])
    assert reasons[("P-dropped", "0")] == ("True", ["catch_failed"])
    assert {r["dropped_frames"] for r in rows} == {"0", ""}  # integers stay integers


def test_the_json_export_matches_the_csv(app, study, tmp_path):
    with app.app_context():
        files = exports.build_export("pilot")
    records = json.loads(files["trials.json"])
    (tmp_path / "trials.csv").write_bytes(files["trials.csv"])
    back = read_trials(tmp_path / "trials.csv")
    assert len(records) == len(back) == 5
    assert all(list(r) == TRIAL_FILE_COLUMNS for r in records)
    assert [r["extra"] for r in records] == list(back["extra"])
    kept = [r["rt_ms"] for r in records if r["subject_id"] == "P-kept"]
    assert kept == [512.3456789012345, None, 0.30000000000000004, 10234.5]


def test_the_codebook_describes_every_exported_column(app, study):
    with app.app_context():
        files = exports.build_export("pilot")
    described = {(f, c) for f, c, _, _ in CODEBOOK}
    for name, label in (("trials.csv", "trials.csv / trials.json"), ("participants.csv", "participants.csv")):
        header = next(csv.reader(io.StringIO(files[name].decode())))
        assert {(label, c) for c in header} <= described, name
        assert len(header) == len({c for f, c in described if f == label}), name
    book = list(csv.DictReader(io.StringIO(files["codebook.csv"].decode())))
    assert all(row["description"].strip() for row in book)
    markdown = files["codebook.md"].decode()
    assert all(f"`{c}`" in markdown for _, c, _, _ in CODEBOOK)


def test_participants_csv(app, study):
    with app.app_context():
        rows = list(csv.DictReader(io.StringIO(exports.build_export("pilot")["participants.csv"].decode())))
    by_id = {r["subject_id"]: r for r in rows}
    assert set(by_id) == {"P-kept", "P-dropped"}
    assert by_id["P-kept"]["n_trials_stored"] == "4" and by_id["P-kept"]["n_trials_scheduled"] == "8"
    assert by_id["P-dropped"]["status"] == "failed_attention"
    assert json.loads(by_id["P-dropped"]["exclusion_reasons"]) == ["catch_failed"]
    assert json.loads(by_id["P-kept"]["recruitment"]) == {"PROLIFIC_PID": "P-kept"}
    datetime.fromisoformat(by_id["P-kept"]["started_at"])


def test_metadata(app, study, factory):
    factory.stimulus(factory.clip(stimulus_set="catch"))  # the design's catch videos count
    factory.stimulus(factory.clip(stimulus_set="unrelated"))  # another set does not
    with app.app_context():
        files = exports.build_export("pilot")
        stimuli = db.session.execute(sa.text(
            "SELECT public_id, sha256 FROM stimulus JOIN source_clip ON source_clip.id = "
            "stimulus.source_clip_id WHERE stimulus_set IN ('synthetic', 'catch')")).all()
    meta = json.loads(files["metadata.json"])
    assert meta["study"]["slug"] == "pilot" and meta["study"]["design"] == "arrow-of-time"
    assert meta["design"]["name"] == "arrow-of-time" and meta["design"]["sessions"] == 2
    assert meta["exclusion_rules_version"] == meta["design"]["exclusions"]["version"]
    assert {(s["stimulus_id"], s["sha256"]) for s in meta["stimuli"]} == set(map(tuple, stimuli))
    assert {s["stimulus_set"] for s in meta["stimuli"]} == {"synthetic", "catch"}
    assert meta["software"]["package"] == "chronoscope" and meta["software"]["version"]
    assert "git_commit" in meta["software"]
    assert datetime.fromisoformat(meta["exported_at"]).tzinfo is not None
    assert meta["counts"] == {"trials": 5, "sessions": 2, "subjects": 2}
    import hashlib
    for name, digest in meta["files"].items():
        assert hashlib.sha256(files[name]).hexdigest() == digest


def test_an_empty_study_exports_headers_only(app, factory):
    factory.study(slug="empty")
    with app.app_context():
        files = exports.build_export("empty")
    assert files["trials.csv"].decode().strip() == ",".join(TRIAL_FILE_COLUMNS)
    assert json.loads(files["trials.json"]) == []


def test_unknown_studies_are_refused(app):
    with app.app_context(), pytest.raises(ValueError, match="no study"):
        exports.build_export("nope")


# --- spreadsheet formula injection ----------------------------------------------------------

# Participant text that a spreadsheet would run, and what the CSV must hold instead.  (Tab and
# carriage return cannot start one here: the API refuses control characters; see
# tests/analysis/test_loading_and_exclusions.py for them.)
FORMULAS = {'=HYPERLINK("http://x","click")': '\'=HYPERLINK("http://x","click")',
            "+1+cmd|' /C calc'!A0": "'+1+cmd|' /C calc'!A0", "@SUM(A1:A9)": "'@SUM(A1:A9)",
            "-2+3": "'-2+3", "'quoted": "''quoted", "-0.5": "-0.5", "-3e-2": "-3e-2",
            "rvfc": "rvfc"}
NUMBER = __import__("re").compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


@pytest.fixture
def hostile(factory):
    """A study whose participants typed formulas: into onset_method (free text of the API)
    and into their recruitment id ("-" and "@" may start one, as Prolific-style ids allow)."""
    study = factory.study(slug="hostile")
    stimulus = factory.stimulus(factory.clip())
    for n, subject_id in enumerate(("@evil", "-A1", "'quote-id", "P-plain")):
        session = factory.session(study, subject_id=subject_id)
        for text in list(FORMULAS)[n::4]:
            factory.trial(session, stimulus, onset_method=text, rt_ms=-0.5)
    return study


def _cells(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode(), newline="")))


def test_recruitment_ids_may_start_like_formulas():
    """Why subject ids are escaped too: the entry link accepts ids that begin with - or @."""
    from webapp.participant.entry import recruitment_from

    for text in ("@evil", "-A1", "-2"):
        assert recruitment_from({"participant": text})[0] == text


def test_formulas_in_participant_text_are_quoted_in_the_trials_csv(app, hostile):
    with app.app_context():
        files = exports.build_export("hostile")
    rows = list(csv.DictReader(io.StringIO(files["trials.csv"].decode(), newline="")))
    assert sorted(r["onset_method"] for r in rows) == sorted(FORMULAS.values())
    assert {r["subject_id"] for r in rows} == {"'@evil", "'-A1", "''quote-id", "P-plain"}
    assert {r["rt_ms"] for r in rows} == {"-0.5"}  # a number column stays a number


def test_no_cell_of_any_exported_csv_starts_a_formula(app, hostile):
    with app.app_context():
        files = exports.build_export("hostile")
    people = csv.DictReader(io.StringIO(files["participants.csv"].decode()))
    assert {r["subject_id"] for r in people} == {"'@evil", "'-A1", "''quote-id", "P-plain"}
    for name in ("trials.csv", "participants.csv", "codebook.csv"):
        for row in _cells(files[name]):
            for cell in row:
                assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")) or \
                    NUMBER.fullmatch(cell), (name, cell)


def test_the_trials_csv_reads_back_the_original_text(app, hostile, tmp_path):
    with app.app_context():
        (tmp_path / "trials.csv").write_bytes(exports.build_export("hostile")["trials.csv"])
    back = read_trials(tmp_path / "trials.csv")
    assert sorted(back["onset_method"].astype(str)) == sorted(FORMULAS)
    assert set(back["subject_id"]) == {"@evil", "-A1", "'quote-id", "P-plain"}
    assert (back["rt_ms"] == -0.5).all()


def test_the_codebook_says_how_text_cells_are_quoted():
    from webapp.researcher.codebook import codebook_markdown

    assert "single quote" in codebook_markdown().decode()


# --- consistency while participants keep sending trials ------------------------------------

def test_a_snapshot_does_not_see_commits_made_during_it(any_db_app, factory):
    app = any_db_app
    session = factory.session(factory.study(slug="live"))
    stimulus = factory.stimulus()
    factory.trial(session, stimulus)
    writer = sa.create_engine(app.config["SQLALCHEMY_DATABASE_URI"])
    with app.app_context():
        with exports.snapshot():
            first = db.session.scalar(sa.select(sa.func.count(Trial.id)))
            with writer.begin() as connection:  # a participant's trial lands meanwhile
                connection.execute(sa.insert(Trial).values(
                    session_id=session.id, client_uuid=str(uuid.uuid4()), trial_index=1,
                    trial_type="aot", excluded=False, exclusion_reasons=[], extra={},
                    created_at=datetime.now().astimezone()))
            assert db.session.scalar(sa.select(sa.func.count(Trial.id))) == first == 1
        assert db.session.scalar(sa.select(sa.func.count(Trial.id))) == 2
    writer.dispose()


def test_exports_taken_while_trials_arrive_agree_with_themselves(app, factory):
    """participants.csv counts and trials.csv rows come from one snapshot, under a writer."""
    study = factory.study(slug="live")
    sessions = [factory.session(study) for _ in range(3)]
    stimulus = factory.stimulus()
    stop = threading.Event()

    def participant_traffic():
        with app.app_context():
            index = 0
            while not stop.is_set() and index < 400:
                for session in sessions:
                    db.session.add(Trial(session_id=session.id, client_uuid=str(uuid.uuid4()),
                                         trial_index=index, trial_type="aot", stimulus_id=stimulus.id))
                    db.session.commit()
                index += 1

    thread = threading.Thread(target=participant_traffic)
    thread.start()
    seen = []
    try:
        with app.app_context():
            for _ in range(8):
                files = exports.build_export("live")
                trials = list(csv.DictReader(io.StringIO(files["trials.csv"].decode())))
                people = list(csv.DictReader(io.StringIO(files["participants.csv"].decode())))
                assert sum(int(p["n_trials_stored"]) for p in people) == len(trials)
                assert json.loads(files["metadata.json"])["counts"]["trials"] == len(trials)
                seen.append(len(trials))
    finally:
        stop.set()
        thread.join()
    assert seen[-1] > 0  # the exports really ran beside the writer


# --- CLI and download ----------------------------------------------------------------------

def test_cli_export_writes_the_files(runner, study, tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(args=["export", "pilot", "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == sorted([*exports.FILE_NAMES, "data/study-pilot_data.csv"])
    assert len(read_trials(out / "trials.csv")) == 5
    again = runner.invoke(args=["export", "pilot", "--out", str(out)])
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert runner.invoke(args=["export", "pilot", "--out", str(out), "--overwrite"]).exit_code == 0


def test_cli_export_of_an_unknown_study_is_a_usage_error(runner, tmp_path):
    result = runner.invoke(args=["export", "nope", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "no study 'nope'" in result.output
    assert not (tmp_path / "x").exists()


def test_dashboard_download_is_a_zip_of_the_export(logged_in, study):
    response = logged_in.get("/researcher/studies/pilot/export.zip")
    assert response.status_code == 200
    assert response.mimetype == "application/zip"
    assert "attachment" in response.headers["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(response.data)) as archive:
        names = archive.namelist()
        folder = names[0].split("/")[0]
        assert folder.startswith("pilot-export-")
        assert sorted(n.split("/", 1)[1] for n in names) == \
            sorted([*exports.FILE_NAMES, "data/study-pilot_data.csv"])
        trials = archive.read(f"{folder}/trials.csv").decode()
    assert len(list(csv.DictReader(io.StringIO(trials)))) == 5


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness is Linux's")
def test_researcher_reads_run_at_lower_priority_than_participants(logged_in, study, monkeypatch):
    """Exports and dashboard panels run in a thread at nice +10; the request's own thread,
    which serves participants next, keeps its priority, and errors still reach the client."""
    from webapp import priority

    def niceness():
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    base, seen = niceness(), []
    real_export = exports.export_zip
    monkeypatch.setattr(exports, "export_zip", lambda slug, **options: (seen.append(niceness()), real_export(slug, **options))[1])
    assert logged_in.get("/researcher/studies/pilot/export.zip").status_code == 200
    real_panel = dashboard.study_panel
    monkeypatch.setattr(dashboard, "study_panel", lambda slug: (seen.append(niceness()), real_panel(slug))[1])
    assert logged_in.get("/researcher/studies/pilot/panel").status_code == 200
    assert seen == [min(19, base + priority.NICENESS)] * 2 and niceness() == base
    assert logged_in.get("/researcher/studies/nope/export.zip").status_code == 404


def test_an_unfinished_sessions_completion_time_is_an_empty_cell_not_nat(app, factory):
    # One finished session makes the column datetimes, so pandas turns the other's None into
    # NaT; the codebook promises an empty cell.
    study = factory.study(slug="nat")
    factory.session(study, subject_id="P-done", status="completed",
                    completed_at=datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc))
    factory.session(study, subject_id="P-open", status="in_progress")
    with app.app_context():
        rows = list(csv.DictReader(io.StringIO(exports.build_export("nat")["participants.csv"]
                                               .decode())))
    by_id = {row["subject_id"]: row for row in rows}
    assert by_id["P-open"]["completed_at"] == "" and by_id["P-open"]["manual_at"] == ""
    assert by_id["P-done"]["completed_at"].startswith("2026-11-20T12:00:00")


def test_the_prolific_list_rejects_only_failed_attention_and_manual_exclusions(
        app, factory, logged_in):
    study = factory.study(slug="payday")
    cases = {"P-ok": ("completed", []), "P-catch": ("failed_attention", ["catch_failed"]),
             "P-tech": ("completed", ["too_many_technical"]),
             "P-slow": ("completed", ["too_many_timeouts"]),
             "P-bot": ("completed", []), "P-forgiven": ("failed_attention", ["catch_accuracy"]),
             "P-running": ("in_progress", []), "=HYPERLINK(1)": ("completed", []),
             # Told to return the study: never approved (a client can screen itself out).
             "P-screened": ("screened_out", ["screened_out"]),
             # Left to the researcher (issue 25): a code for declining, a script's session,
             # clicking through, a session of technical trials only (ended screened out), a
             # failed practice (a person who tried, or a script that guessed it at their pace).
             "P-practice": ("failed_practice", ["practice_gate"]),
             "P-declined": ("no_consent", []), "P-script": ("completed", ["implausible_pace"]),
             "P-clicker": ("completed", ["too_little_time"]),
             "P-all-tech": ("screened_out", ["all_technical"]),
             "P-vouched": ("completed", ["implausible_media"])}
    for subject, (status, reasons) in cases.items():
        factory.session(study, subject_id=subject, status=status, excluded=bool(reasons),
                        exclusion_reasons=reasons)
    factory.session(study, subject_id="preview-1", status="completed", simulated=True,
                    excluded=True, exclusion_reasons=["simulated"])
    for subject, action in (("P-bot", "exclude"), ("P-forgiven", "reinstate"),
                            ("P-vouched", "reinstate")):
        logged_in.post("/researcher/studies/payday/exclusions",
                       data={"participant": subject, "action": action, "reason": "pasted text"})
    response = logged_in.get("/researcher/studies/payday/prolific.csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert list(rows[0]) == ["participant_id", "decision", "reason"]
    decisions = {row["participant_id"]: (row["decision"], row["reason"]) for row in rows}
    assert decisions.pop("P-catch") == ("REJECT", "Failed attention checks.")
    assert decisions.pop("P-bot") == ("REJECT", "Excluded by the researchers: pasted text")
    assert decisions.pop("'=HYPERLINK(1)") == ("APPROVE", "")  # quoted, never a formula
    # Too many fullscreen exits: a broken browser or trials dodged; the researcher decides
    # (a session of nothing but exits was approved).
    assert decisions == {s: ("APPROVE", "") for s in
                         ("P-ok", "P-slow", "P-forgiven", "P-vouched")}
    with app.app_context():
        files = exports.build_export("payday")
    assert files["prolific_decisions.csv"] == response.get_data()
    assert "prolific_decisions.csv" in files["codebook.md"].decode()


def test_another_studys_researcher_cannot_download_the_prolific_list(app, client, factory):
    factory.study(slug="secret", owner=None)
    factory.researcher("eve")
    client.post("/auth/login", data={"username": "eve", "password": "correct horse battery"})
    assert client.get("/researcher/studies/secret/prolific.csv").status_code == 404


def test_manage_py_export_writes_the_prolific_list(app, runner, factory, tmp_path):
    factory.session(factory.study(slug="cli-study"), subject_id="P1", status="completed")
    result = runner.invoke(args=["export", "cli-study", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "prolific_decisions.csv").read_text() == \
        "participant_id,decision,reason\nP1,APPROVE,\n"


def test_every_per_trial_export_says_which_session_of_the_design_a_trial_is_in(app, factory):
    # Issue 28: trials.csv had no session_number, so a two-day study's days were told apart
    # only by joining participants.csv.
    study = factory.study(slug="two-day")
    first = factory.session(study, subject_id="P1", session_number=1, status="completed")
    second = factory.session(study, subject=first.subject, session_number=2)
    factory.trial(first)
    factory.trial(second)
    with app.app_context():
        files = exports.build_export("two-day")
    rows = list(csv.DictReader(io.StringIO(files["trials.csv"].decode())))
    assert {(r["session_id"], r["session_number"]) for r in rows} == {
        (str(first.id), "1"), (str(second.id), "2")}
    assert sorted(r["session_number"] for r in json.loads(files["trials.json"])) == [1, 2]
