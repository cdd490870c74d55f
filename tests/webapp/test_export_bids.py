"""The optional BIDS layout of the export, checked against the BIDS rules that need no network:
file names and their entities, required fields, TSV cells (n/a for missing, no quoting, one
field per column), a sidecar key for every column and participants.tsv matching the folders.
(BIDS specification 1.10: "Common principles" and "Behavioral experiments".)"""
import io
import json
import re
import zipfile

import pytest

from webapp.researcher import bids, exports

BEH = re.compile(r"sub-(?P<sub>[A-Za-z0-9]+)/(?:ses-(?P<ses>[A-Za-z0-9]+)/)?beh/"
                 r"sub-(?P=sub)_(?:ses-(?P=ses)_)?task-[A-Za-z0-9]+(?:_run-[0-9]+)?"
                 r"_beh\.(?:tsv|json)")
TOP = {"dataset_description.json", "README.md", "participants.tsv", "participants.json"}


def _tsv(data: bytes) -> list[list[str]]:
    text = data.decode()
    assert text.endswith("\n") and "\r" not in text
    return [line.split("\t") for line in text[:-1].split("\n")]


def bids_problems(files: dict[str, bytes]) -> list[str]:
    """What breaks a BIDS rule that can be checked offline; [] for a valid dataset."""
    problems = []
    for name in files:
        if name not in TOP and not name.startswith("sourcedata/") and not BEH.fullmatch(name):
            problems.append(f"{name}: not a BIDS file name")
    description = json.loads(files["dataset_description.json"])
    problems += [f"dataset_description.json: no {key}" for key in ("Name", "BIDSVersion")
                 if not isinstance(description.get(key), str) or not description[key]]
    for name, data in files.items():
        if not name.endswith(".tsv"):
            continue
        rows = _tsv(data)
        for n, row in enumerate(rows):
            if len(row) != len(rows[0]):
                problems.append(f"{name} line {n + 1}: {len(row)} fields, header {len(rows[0])}")
            if any(cell == "" or cell != cell.strip() or cell.startswith('"') for cell in row):
                problems.append(f"{name} line {n + 1}: an empty, padded or quoted cell")
        sidecar = name.removesuffix(".tsv") + ".json"
        if BEH.fullmatch(name) or name == "participants.tsv":
            if sidecar not in files:
                problems.append(f"{name}: no sidecar")
                continue
            documented = json.loads(files[sidecar])
            problems += [f"{sidecar}: no Description of {column}" for column in rows[0]
                         if not documented.get(column, {}).get("Description")]
    people = _tsv(files["participants.tsv"])
    if people[0][0] != "participant_id":
        problems.append("participants.tsv: participant_id is not its first column")
    folders = {name.split("/")[0] for name in files if BEH.fullmatch(name)}
    if {row[0] for row in people[1:]} != folders:
        problems.append("participants.tsv: its participant_id are not the sub- folders")
    sessions = {bool(BEH.fullmatch(name)["ses"]) for name in files if BEH.fullmatch(name)}
    if len(sessions) > 1:
        problems.append("some subjects have ses- folders and some do not")
    return problems


@pytest.fixture
def two_sessions(factory):
    """The two-session arrow-of-time design: 'P-1' in both sessions (a timeout in the
    second), 'P1' (the same label once its hyphen goes), a Japanese id and a model."""
    study = factory.study(slug="bids-1", title="Arrow", design="arrow-of-time")
    stimulus = factory.stimulus(factory.clip())
    first = factory.session(study, subject_id="P-1", session_number=1, status="completed")
    factory.trial(first, stimulus)
    second = factory.session(study, subject=first.subject, session_number=2)
    factory.trial(second, stimulus, response=None, correct=None, rt_ms=None,
                  extra={"key": None, "timed_out": True})
    for subject_id in ("P1", "被験者01"):
        factory.trial(factory.session(study, subject_id=subject_id), stimulus)
    factory.trial(factory.session(study, subject_id="qwen/Qwen2-VL", kind="model"), stimulus,
                  block=None, onset_method=None)
    return study


P_1 = bids.subject_label("human", "P-1")


def test_the_bids_layout_is_valid_and_keeps_its_labels(app, two_sessions):
    with app.app_context():
        files = exports.build_bids("bids-1")
    assert bids_problems(files) == []
    labels = {row[2]: row[0] for row in _tsv(files["sourcedata/participant_labels.tsv"])[1:]}
    assert labels == {"P-1": f"sub-{P_1}", "P1": f"sub-{bids.subject_label('human', 'P1')}",
                      "被験者01": f"sub-{bids.subject_label('human', '被験者01')}",
                      "qwen/Qwen2-VL": f"sub-{bids.subject_label('model', 'qwen/Qwen2-VL')}"}
    assert len(set(labels.values())) == 4
    assert labels["被験者01"].startswith("sub-01") and labels["P1"].startswith("sub-P1")
    assert f"sub-{P_1}/ses-1/beh/sub-{P_1}_ses-1_task-aot_beh.tsv" in files
    second = _tsv(files[f"sub-{P_1}/ses-2/beh/sub-{P_1}_ses-2_task-aot_beh.tsv"])
    row = dict(zip(second[0], second[1]))
    assert row["response"] == "n/a" and row["rt_ms"] == "n/a" and row["correct"] == "n/a"
    assert "subject_id" not in second[0]  # the recruitment id stays in sourcedata/
    sidecar = json.loads(files[f"sub-{P_1}/ses-1/beh/sub-{P_1}_ses-1_task-aot_beh.json"])
    assert sidecar["rt_ms"]["Units"] == "ms" and sidecar["TaskName"] == "aot"


def test_a_one_session_design_has_no_session_folders(app, factory):
    study = factory.study(slug="bids-2", design="frame-ordering")
    stimulus = factory.stimulus(factory.clip())
    for subject_id in ("gpt", "p9"):
        factory.trial(factory.session(study, subject_id=subject_id), stimulus)
    with app.app_context():
        files = exports.build_bids("bids-2")
    assert bids_problems(files) == []
    assert {name for name in files if name.endswith("_beh.tsv")} == {
        "sub-gpt/beh/sub-gpt_task-frameorder_beh.tsv", "sub-p9/beh/sub-p9_task-frameorder_beh.tsv"}


def test_the_rules_catch_what_they_check():
    files = {"dataset_description.json": b'{"Name": "x"}',
             "participants.tsv": b"participant_id\nsub-a\n",
             "participants.json": b"{}",
             "sub-a/beh/sub-b_task-x_beh.tsv": b"onset\n\n",
             "sub-a/beh/sub-a_task-x_beh.tsv": b'onset\tduration\n"1"\n'}
    problems = bids_problems(files)
    assert any("sub-b_task-x_beh.tsv: not a BIDS file name" in p for p in problems)
    assert any("no BIDSVersion" in p for p in problems)
    assert any("1 fields, header 2" in p for p in problems)
    assert any("quoted cell" in p for p in problems)
    assert any("no sidecar" in p for p in problems)
    assert any("no Description of participant_id" in p for p in problems)


def test_labels_are_letters_and_digits_unique_and_each_subject_s_own():
    """A label depends on its subject alone: another participant joining changes nobody's
    (it used to: 'a.b' was 'ab' alone and 'abdup3' once 'AB' and 'a-b' had joined)."""
    alone = bids.labels([("human", "a.b")])
    crowd = [("human", "a.b"), ("human", "AB"), ("human", "a-b"), ("human", "ab"),
             ("human", "!!"), ("model", "ab"), ("human", "x" * 5000), ("human", "x" * 5001)]
    every = bids.labels(crowd)
    assert every[("human", "a.b")] == alone[("human", "a.b")]
    assert every == {subject: bids.labels([subject])[subject] for subject in crowd}
    assert len({name.lower() for name in every.values()}) == len(crowd)  # case-insensitive too
    assert every[("human", "ab")] == "ab"  # a lower-case alphanumeric id is its own label
    for name in every.values():
        assert re.fullmatch(r"[A-Za-z0-9]{1,40}", name), name
    # The longest path a session's file gets stays well under Windows' 260 characters.
    longest = bids._stem(every[("human", "x" * 5000)], 99, "frameorder", True)
    assert len(longest) + len("_beh.json") < 150


def test_tsv_cells_are_formula_safe_as_the_csvs_are(app, factory):
    """A participant's free text in a BIDS TSV is escaped exactly as in the CSVs: a spreadsheet
    would have run '=1+1' or '=HYPERLINK(...)' (the onset method was a free string)."""
    study = factory.study(slug="bids-3", design="frame-ordering")
    stimulus = factory.stimulus(factory.clip())
    for subject_id, method in (("p1", "=1+1"), ("p2", '=HYPERLINK("http://x","y")')):
        factory.trial(factory.session(study, subject_id=subject_id), stimulus,
                      onset_method=method, rt_ms=-0.5)
    with app.app_context():
        files = exports.build_bids("bids-3")
    assert bids_problems(files) == []
    tables = [_tsv(files[f"sub-{s}/beh/sub-{s}_task-frameorder_beh.tsv"]) for s in ("p1", "p2")]
    rows = [dict(zip(header, row)) for header, row in tables]
    assert [row["onset_method"] for row in rows] == ["'=1+1", "'=HYPERLINK(\"http://x\",\"y\")"]
    assert rows[0]["rt_ms"] == "-0.5"  # a plain number is left alone
    assert "remove one leading '" in files["README.md"].decode()


def test_cli_and_download_give_the_bids_layout(logged_in, runner, two_sessions, tmp_path):
    result = runner.invoke(args=["export", "bids-1", "--out", str(tmp_path), "--bids"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / f"sub-{P_1}" / "ses-2" / "beh").is_dir()
    again = runner.invoke(args=["export", "bids-1", "--out", str(tmp_path), "--bids"])
    assert again.exit_code != 0 and "--overwrite" in again.output
    both = runner.invoke(args=["export", "bids-1", "--out", str(tmp_path), "--bids", "--xlsx"])
    assert both.exit_code != 0 and "one or the other" in both.output
    page = logged_in.get("/researcher/studies/bids-1").get_data(as_text=True)
    assert "export.zip?layout=bids" in page
    response = logged_in.get("/researcher/studies/bids-1/export.zip?layout=bids")
    with zipfile.ZipFile(io.BytesIO(response.data)) as archive:
        names = archive.namelist()
    assert all(re.match(r"bids-1-bids-\d{8}T\d{6}/", name) for name in names)
    assert any(name.endswith("/participants.tsv") for name in names)
