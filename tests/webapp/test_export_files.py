"""Exports a lab can open and share: Excel's byte order mark, the study's time zone beside
UTC, the pressed key and the key mapping as columns, no empty file, and a valid Psych-DS
dataset (checked against the specification's rules, tests/psychds_rules.py)."""
import csv
import io
import json
import zipfile
from datetime import datetime, timezone

import pytest

from experiments.designs import DESIGNS, STUDY_CONFIG_KEY
from tests import psychds_rules
from webapp.researcher import exports
from webapp.researcher.codebook import CODEBOOK

BOM = b"\xef\xbb\xbf"
RECEIVED = datetime(2030, 1, 15, 23, 30, 5, tzinfo=timezone.utc)


@pytest.fixture
def tokyo(factory):
    """A study run from Tokyo: one participant (f = backward), two answered trials and a
    timeout, and a Japanese title."""
    snapshot = {**DESIGNS["arrow-of-time"].to_dict(),
                STUDY_CONFIG_KEY: {"stimulus_set": "synthetic", "title": "時間の矢",
                                   "time_zone": "Asia/Tokyo"}}
    study = factory.study(slug="tokyo-1", title="時間の矢", design_snapshot=snapshot)
    clip = factory.clip(clip_key="fall-0")
    forward = factory.stimulus(clip, direction="forward")
    session = factory.session(study, subject_id="被験者01", status="completed",
                              started_at=RECEIVED, completed_at=RECEIVED,
                              condition={"key_mapping": {"j": "F", "f": "B"}})
    factory.trial(session, forward, response="F", extra={"key": "j"}, received_at=RECEIVED)
    factory.trial(session, forward, response="B", correct=False, extra={"key": "f"},
                  received_at=RECEIVED)
    factory.trial(session, forward, response=None, correct=None, rt_ms=None,
                  extra={"key": None, "timed_out": True}, received_at=RECEIVED)
    return study


def _rows(data: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))


def test_times_are_given_in_the_studys_time_zone_beside_utc(app, tokyo):
    with app.app_context():
        files = exports.build_export("tokyo-1")
    trial = _rows(files["trials.csv"])[0]
    assert datetime.fromisoformat(trial["received_at"]) == RECEIVED
    assert trial["received_at_local"] == "2030-01-16T08:30:05+09:00"
    person = _rows(files["participants.csv"])[0]
    assert person["started_at_local"] == person["completed_at_local"] == "2030-01-16T08:30:05+09:00"
    assert person["manual_at_local"] == ""
    assert json.loads(files["metadata.json"])["study"]["time_zone"] == "Asia/Tokyo"
    due = _rows(files["next_session_start_times.csv"])[0]
    assert datetime.fromisoformat(due["earliest_start_local"]) == \
        datetime.fromisoformat(due["earliest_start_utc"])
    assert due["earliest_start_local"].endswith("+09:00")


def test_a_study_without_a_time_zone_gives_utc_twice(app, factory):
    session = factory.session(factory.study(slug="plain"), status="completed")
    factory.trial(session, received_at=RECEIVED)
    with app.app_context():
        trial = _rows(exports.build_export("plain")["trials.csv"])[0]
    assert trial["received_at_local"] == "2030-01-15T23:30:05+00:00"


def test_the_pressed_key_and_the_key_mapping_are_columns(app, tokyo):
    with app.app_context():
        rows = _rows(exports.build_export("tokyo-1")["trials.csv"])
    assert [(r["response"], r["response_key"]) for r in rows] == [("F", "j"), ("B", "f"), ("", "")]
    assert {(r["forward_key"], r["backward_key"]) for r in rows} == {("j", "f")}


def test_the_excel_export_starts_its_tables_with_a_byte_order_mark(app, tokyo):
    with app.app_context():
        plain = exports.build_export("tokyo-1", now=RECEIVED)
        excel = exports.build_export("tokyo-1", now=RECEIVED, excel=True)
    for name in ("trials.csv", "participants.csv", "codebook.csv"):
        assert excel[name] == BOM + plain[name], name
    assert "被験者01" in excel["participants.csv"].decode("utf-8-sig")
    # Prolific reads its files as given, and the Psych-DS data file is for machines.
    for name in ("prolific_decisions.csv", "data/study-tokyo1_data.csv"):
        assert not excel[name].startswith(BOM) and excel[name] == plain[name], name


def test_the_dashboard_offers_the_excel_export(logged_in, tokyo):
    page = logged_in.get("/researcher/studies/tokyo-1").get_data(as_text=True)
    assert "export.zip?excel=1" in page
    response = logged_in.get("/researcher/studies/tokyo-1/export.zip?excel=1")
    with zipfile.ZipFile(io.BytesIO(response.data)) as archive:
        trials = next(n for n in archive.namelist() if n.endswith("/trials.csv"))
        assert archive.read(trials).startswith(BOM)


def test_cli_export_for_excel(runner, tokyo, tmp_path):
    result = runner.invoke(args=["export", "tokyo-1", "--out", str(tmp_path), "--excel"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "trials.csv").read_bytes().startswith(BOM)
    assert (tmp_path / "data" / "study-tokyo1_data.csv").is_file()


def test_no_exported_file_is_empty_and_every_table_has_its_header(app, factory):
    factory.study(slug="empty")
    with app.app_context():
        files = exports.build_export("empty")
    assert all(data for data in files.values()), [n for n, d in files.items() if not d]
    described = {}
    for file, column, _, _ in CODEBOOK:
        for name in file.split(" / "):
            described.setdefault(name, []).append(column)
    for name, data in files.items():
        if name.endswith(".csv") and name in described:
            assert next(csv.reader(io.StringIO(data.decode()))) == described[name], name


def test_an_overwritten_export_keeps_no_stale_file(app, runner, factory, tmp_path):
    (tmp_path / "next_session_allowlist.csv").write_text("P-old\n")
    factory.study(slug="empty")
    result = runner.invoke(args=["export", "empty", "--out", str(tmp_path), "--overwrite"])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "next_session_allowlist.csv").exists()


def test_the_export_is_a_valid_psych_ds_dataset(app, tokyo):
    with app.app_context():
        files = exports.build_export("tokyo-1")
    assert psychds_rules.problems(files) == []
    assert psychds_rules.unofficial_keywords("data/study-tokyo1_data.csv") == []
    description = json.loads(files["dataset_description.json"])
    assert description["name"] == "時間の矢"
    header = next(csv.reader(io.StringIO(files["data/study-tokyo1_data.csv"].decode())))
    assert [v["name"] for v in description["variableMeasured"]] == header
    assert all(v["description"] for v in description["variableMeasured"])
    assert files["data/study-tokyo1_data.csv"] == files["trials.csv"]


def test_an_empty_study_is_a_valid_psych_ds_dataset_too(app, factory):
    factory.study(slug="empty", title="")
    with app.app_context():
        assert psychds_rules.problems(exports.build_export("empty")) == []


def test_the_psych_ds_rules_catch_what_they_vendor():
    """The vendored rules are not vacuous: each breach is named."""
    good = {"dataset_description.json": json.dumps({
        "@context": "https://schema.org/", "@type": "Dataset", "name": "x", "description": "y",
        "variableMeasured": [{"@type": "PropertyValue", "name": "a"}]}).encode(),
        "data/study-x_data.csv": b"a\n1\n"}
    assert psychds_rules.problems(good) == []
    broken = {**good, "data/study-x_data.csv": b"a,b\n1\n", "data/trials.csv": b"a\n"}
    codes = [p.split(":")[0] for p in psychds_rules.problems(broken)]
    assert sorted(codes) == ["CSVHeaderLengthMismatch", "CsvColumnMissingFromMetadata",
                             "FILENAME_KEYWORD_FORMATTING_ERROR"]
    untyped = json.loads(good["dataset_description.json"])
    untyped["variableMeasured"] = [{"name": "a"}]
    del untyped["@type"]
    codes = [p.split(":")[0] for p in psychds_rules.problems(
        {**good, "dataset_description.json": json.dumps(untyped).encode()})]
    assert sorted(codes) == ["MissingDatasetType", "ObjectTypeMissing"]


def test_the_downloaded_zip_is_a_psych_ds_dataset_in_its_folder(logged_in, tokyo):
    response = logged_in.get("/researcher/studies/tokyo-1/export.zip")
    with zipfile.ZipFile(io.BytesIO(response.data)) as archive:
        files = {name.split("/", 1)[1]: archive.read(name) for name in archive.namelist()}
    assert "data/study-tokyo1_data.csv" in files
    assert psychds_rules.problems(files) == []
