"""Text cells that are safe to open in a spreadsheet, for every CSV the project writes, and the
way back for the CSVs it reads.

Excel, LibreOffice and Google Sheets treat a cell that begins with ``=``, ``+``, ``-`` or ``@``
as a formula (a leading tab or carriage return can hide one), so a participant's free text
such as ``=HYPERLINK("http://x","click")`` would become a live link, or worse, in the
researcher's spreadsheet.  As OWASP advises, such a cell gets a single quote in front, which
spreadsheets show as text.  A cell that already begins with a quote gets one too, so that
stripping exactly one leading quote always gives the original text back.  A string that is a
plain number (``-0.5``, ``-3e-2``) is no formula and is left as it is.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

QUOTE = "'"
TRIGGERS = ("=", "+", "-", "@", "\t", "\r", QUOTE)  # QUOTE too: stripping one must be lossless
# What spreadsheets read as a number (ASCII digits only: "-\u0663" would still be a formula).
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def escape_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells (and text column names) are spreadsheet-safe.

    Only strings change; numbers, booleans and missing values are left alone.

    Parameters
    ----------
    frame : pandas.DataFrame
        Any table about to be written as CSV.

    Returns
    -------
    pandas.DataFrame
        The same columns and rows; each string that begins with ``=``, ``+``, ``-``, ``@``,
        tab, carriage return or ``'`` and is not a plain number has ``'`` put in front.

    Examples
    --------
    >>> escape_cells(pd.DataFrame({"x": ['=1+1', "-0.5", "'a", "ok"]}))["x"].tolist()
    ["'=1+1", '-0.5', "''a", 'ok']
    """
    return _each_text_column(frame, _escape)


def unescape_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Undo :func:`escape_cells` on a table read from one of the project's CSVs: strip
    exactly one leading ``'`` from every text cell and column name that has one.

    Examples
    --------
    >>> unescape_cells(pd.DataFrame({"x": ["'=1+1", "''a", "-0.5"]}))["x"].tolist()
    ['=1+1', "'a", '-0.5']
    """
    return _each_text_column(frame, _unescape)


def _escape(text: pd.Series) -> pd.Series:
    return _replace(text, {i: QUOTE + v for i, v in _starting_with(text, TRIGGERS)
                           if not _NUMBER.fullmatch(v)})


def _unescape(text: pd.Series) -> pd.Series:
    return _replace(text, {i: v[1:] for i, v in _starting_with(text, (QUOTE,))})


def _starting_with(text: pd.Series, firsts: tuple[str, ...]) -> list[tuple[int, str]]:
    """(position, string) of the cells that start with one of ``firsts``.  Few do, so they are
    found by their first characters as a NumPy array (some 40 ms per million cells)."""
    values = text.to_numpy(dtype=object)
    first = values.astype("U1")
    hits = np.zeros(len(values), dtype=bool)
    for character in firsts:
        hits |= first == character
    return [(int(i), values[i]) for i in np.flatnonzero(hits) if isinstance(values[i], str)]


def _replace(text: pd.Series, changes: dict[int, str]) -> pd.Series:
    if not changes:
        return text
    values = text.to_numpy(dtype=object, copy=True)
    for i, value in changes.items():
        values[i] = value
    return pd.Series(values, index=text.index, name=text.name)


def _each_text_column(frame: pd.DataFrame, change) -> pd.DataFrame:
    out = frame.copy(deep=False)  # copy-on-write: replacing a column leaves ``frame`` alone
    labels = pd.Series(list(out.columns), dtype=object)
    if _has_text(labels):
        out.columns = change(labels).tolist()
    for i in range(out.shape[1]):
        column = out.iloc[:, i]
        if isinstance(column.dtype, pd.CategoricalDtype):  # its labels are what is written
            column = column.astype(object)
        if _has_text(column):
            changed = change(column)
            if changed is not column:
                out.isetitem(i, changed)
    return out


def _has_text(column: pd.Series) -> bool:
    """Whether the column can hold strings: string dtype, or objects among which are strings
    (a column of only lists, bools or missing values has no text to change)."""
    if isinstance(column.dtype, pd.StringDtype):
        return True
    return column.dtype == object and pd.api.types.infer_dtype(column, skipna=True) in (
        "string", "mixed", "mixed-integer")
