"""The export's tables as one Excel workbook (.xlsx), a sheet per table.

Each sheet holds its CSV file cell for cell, typed by the codebook (one source for what a
column holds): integers, floats and booleans are numbers and booleans, an empty CSV cell is
an empty cell, everything else is text. Times stay ISO 8601 text, UTC and in the study's time
zone as in the CSV: an Excel date has no time zone, so a real date would drop the offset that
says which zone a time is in. Every text cell is written as text, never as a formula, so a
participant's ``=HYPERLINK(...)`` stays the characters they typed (the CSV's leading quote,
:mod:`analysis.csv_cells`, is not needed and is taken off).
"""
import io

import openpyxl
import pandas as pd
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

from analysis.csv_cells import unescape_cells
from webapp.researcher.codebook import codebook

# The export's CSV tables, in sheet order (a file the export left out gets no sheet).
SHEETS = ("trials.csv", "participants.csv", "prolific_decisions.csv",
          "next_session_start_times.csv", "codebook.csv")
MAX_ROWS = 1_048_576  # Excel's rows per sheet, the header included
MAX_CELL_CHARS = 32_767  # Excel's characters per cell
NUMBER_KINDS = {"integer": int, "float": float, "number": float}
CUT_NOTE = " [cut at Excel's 32767 characters per cell; the CSV holds it whole]"
REPLACEMENT = "\ufffd"


def workbook(files: dict[str, bytes]) -> bytes:
    """The .xlsx of the CSV tables among ``files`` (an export, :func:`exports.build_export`).

    Raises
    ------
    ValueError
        If a table has more rows than an Excel sheet holds (the CSV has them all).
    """
    kinds = {(name, column): kind for file, column, kind, _ in codebook()
             for name in file.split(" / ")}
    book = openpyxl.Workbook(write_only=True)
    for name in (name for name in SHEETS if name in files):
        table = unescape_cells(pd.read_csv(io.BytesIO(files[name]), dtype=str, encoding="utf-8-sig",
                                           keep_default_na=False))
        if len(table) + 1 > MAX_ROWS:
            raise ValueError(f"{name} has {len(table)} rows; an Excel sheet holds "
                             f"{MAX_ROWS - 1}: use the CSV files of the export instead")
        sheet = book.create_sheet(name.removesuffix(".csv"))
        sheet.append([_text(sheet, column) for column in table.columns])
        columns = [kinds.get((name, column), "string") for column in table.columns]
        for row in table.itertuples(index=False):
            sheet.append([_cell(sheet, value, kind) for value, kind in zip(row, columns)])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _cell(sheet, value: str, kind: str):
    if value == "":
        return None
    if kind == "boolean" and value in ("True", "False"):
        return value == "True"
    if kind in NUMBER_KINDS:
        try:
            number = float(value)
        except ValueError:
            return _text(sheet, value)  # kept as the CSV has it rather than lost
        return int(number) if NUMBER_KINDS[kind] is int and number.is_integer() else number
    return _text(sheet, value)


def _text(sheet, value: str) -> WriteOnlyCell:
    """A text cell, never a formula; characters an .xlsx cannot hold (control characters
    other than tab and line breaks) become U+FFFD, and a text longer than a cell holds is cut
    with a note saying so."""
    value = ILLEGAL_CHARACTERS_RE.sub(REPLACEMENT, value)
    if len(value) > MAX_CELL_CHARS:
        value = value[:MAX_CELL_CHARS - len(CUT_NOTE)] + CUT_NOTE
    cell = WriteOnlyCell(sheet, value)
    cell.data_type = "s"
    return cell
