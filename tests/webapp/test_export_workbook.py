"""The export's tables as one .xlsx workbook: every cell the CSV's, typed, never a formula."""
import csv
import io
from datetime import datetime, timezone

import openpyxl
import pytest

from experiments.designs import DESIGNS, STUDY_CONFIG_KEY
from webapp.researcher import downloads, exports, workbook

RECEIVED = datetime(2030, 1, 15, 23, 30, 5, tzinfo=timezone.utc)
HYPERLINK = '=HYPERLINK("http://x","click")'


@pytest.fixture
def hostile(factory):
    """A Tokyo study whose participants typed formulas into their id and onset method, one of
    them excluded by hand, with a timed-out trial (empty cells) and Japanese text."""
    snapshot = {**DESIGNS["arrow-of-time"].to_dict(),
                STUDY_CONFIG_KEY: {"stimulus_set": "synthetic", "title": "時間の矢",
                                   "time_zone": "Asia/Tokyo"}}
    study = factory.study(slug="tokyo-x", title="時間の矢", design_snapshot=snapshot)
    stimulus = factory.stimulus(factory.clip(clip_key="fall-0"))
    for subject_id in (HYPERLINK, "被験者01", "-2+3"):
        session = factory.session(study, subject_id=subject_id, status="completed",
                                  started_at=RECEIVED, completed_at=RECEIVED,
                                  condition={"key_mapping": {"j": "F", "f": "B"}})
        factory.trial(session, stimulus, response="F", rt_ms=812.25, extra={"key": "j"},
                      onset_method="@SUM(A1:A9)", received_at=RECEIVED)
        factory.trial(session, stimulus, response=None, correct=None, rt_ms=None,
                      extra={"key": None, "timed_out": True}, received_at=RECEIVED)
    return study


def _sheets(data: bytes) -> dict[str, list[list]]:
    book = openpyxl.load_workbook(io.BytesIO(data))
    return {sheet.title: [list(row) for row in sheet.iter_rows()] for sheet in book}


def _expected(text: str, cell) -> bool:
    """Whether workbook ``cell`` holds CSV cell ``text`` (its spreadsheet quote taken off)."""
    text = text[1:] if text.startswith("'") else text
    if cell.value is None:
        return text == ""
    if isinstance(cell.value, bool):
        return str(cell.value) == text
    if isinstance(cell.value, (int, float)):
        return float(text) == cell.value
    return cell.data_type == "s" and cell.value == text


def test_every_cell_of_the_workbook_is_the_csvs_typed(app, hostile):
    with app.app_context():
        files = exports.build_export("tokyo-x", xlsx=True)
    sheets = _sheets(files["tables.xlsx"])
    assert list(sheets) == [name.removesuffix(".csv") for name in workbook.SHEETS
                            if name in files]
    for name in workbook.SHEETS:
        if name not in files:
            continue
        rows = list(csv.reader(io.StringIO(files[name].decode(), newline="")))
        sheet = sheets[name.removesuffix(".csv")]
        assert len(sheet) == len(rows), name
        for n, (row, cells) in enumerate(zip(rows, sheet)):
            for text, cell in zip(row, cells, strict=True):
                assert _expected(text, cell), (name, n, text, cell.value)
    trials = sheets["trials"]
    header = [cell.value for cell in trials[0]]
    first = {column: cell.value for column, cell in zip(header, trials[1])}
    assert first["rt_ms"] == 812.25 and isinstance(first["session_id"], int)
    assert first["correct"] is True
    assert first["received_at_local"] == "2030-01-16T08:30:05+09:00"  # text, with its zone


def test_a_formula_typed_by_a_participant_stays_text(app, hostile):
    with app.app_context():
        data = exports.build_export("tokyo-x", xlsx=True)["tables.xlsx"]
    book = openpyxl.load_workbook(io.BytesIO(data))
    ids = [row[0] for row in book["participants"].iter_rows(min_row=2)]
    assert {cell.value for cell in ids} == {HYPERLINK, "被験者01", "-2+3"}
    assert {cell.data_type for cell in ids} == {"s"}  # "f" would be a live formula
    formulas = [cell.coordinate for sheet in book for row in sheet.iter_rows() for cell in row
                if cell.data_type == "f"]
    assert formulas == []


def test_the_study_page_and_the_cli_give_the_workbook(logged_in, runner, hostile, tmp_path):
    page = logged_in.get("/researcher/studies/tokyo-x").get_data(as_text=True)
    assert 'id="export-xlsx-link"' in page and "export.xlsx" in page
    response = logged_in.get("/researcher/studies/tokyo-x/export.xlsx")
    assert response.status_code == 200
    assert response.mimetype == downloads.XLSX
    assert "tokyo-x-export-" in response.headers["Content-Disposition"]
    assert "participants" in _sheets(response.data)
    result = runner.invoke(args=["export", "tokyo-x", "--out", str(tmp_path), "--xlsx"])
    assert result.exit_code == 0, result.output
    assert "trials" in _sheets((tmp_path / "tables.xlsx").read_bytes())


def test_text_an_xlsx_cannot_hold_is_marked_not_lost_silently():
    data = workbook.workbook({"codebook.csv": b"file,column,type,description\n"
                              b"a,b,string,bell\x07here\n" + b"x,y,string," + b"z" * 40000})
    rows = _sheets(data)["codebook"]
    assert rows[1][3].value == "bell\ufffdhere"
    assert len(rows[2][3].value) == workbook.MAX_CELL_CHARS
    assert rows[2][3].value.endswith(workbook.CUT_NOTE)
