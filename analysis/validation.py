"""Check a trial table against the codebook before anything is computed from it.

:func:`validate_trials` is the one check for every way a table comes in (an exported CSV,
the database). It is driven by :data:`analysis.columns.COLUMN_RULES` and
:data:`analysis.columns.ANSWER_CODES`: a value outside them would otherwise change results
without a word (lower-case ``f`` answers scored as errors, ``excluded`` as Y/N read as
"included", ``direction`` "reversed" dropped from the accuracy model ...).
"""
from __future__ import annotations

from itertools import repeat
from typing import NamedTuple

import numpy as np
import pandas as pd

from analysis import cell_rules
from analysis import columns as C

MAX_LISTED = 12        # kinds of problem spelled out in the message; the rest are counted
MAX_ROWS_NAMED = 5     # rows named per kind of problem


class Problem(NamedTuple):
    column: str
    value: str          # the bad value as shown (repr)
    allowed: str        # what the column takes there
    positions: np.ndarray  # 0-based row positions in the table


Codes = tuple[np.ndarray, np.ndarray]  # a column's (codes, uniques)


class Rows:
    """Names rows of an in-memory table in messages: ``row 3 (session_id 7, trial_index 2)``."""

    note = "rows count from 1"
    plural = "rows"

    def __init__(self, data: pd.DataFrame):
        self._data = data

    def number(self, position: int) -> int:
        return position + 1

    def label(self, position: int) -> str:
        row = self._data.iloc[position]
        ids = [f"{c} {row[c]}" for c in ("session_id", "trial_index")
               if c in row.index and not cell_rules.blank(row[c])]
        return f"row {position + 1}" + (f" ({', '.join(ids)})" if ids else "")


def validate_trials(data: pd.DataFrame, rows: Rows | None = None) -> dict[str, Codes]:
    """Raise if any cell of a trial table is outside the codebook.

    Parameters
    ----------
    data : pandas.DataFrame
        A trial table as read (strings from a CSV, or Python objects from the database).
        Columns without a rule in :data:`analysis.columns.COLUMN_RULES` are not checked;
        a column that is absent is not checked either (it gets a neutral value later).
    rows : Rows, optional
        How the message names a row; default ``row N (session_id .., trial_index ..)``.

    Returns
    -------
    dict
        Column name -> ``(codes, uniques)`` of the text columns it checked value by value
        (every missing value one unique, None), so that typing them need not hash a
        million cells again (:func:`analysis.loading.normalize_trials`).

    Raises
    ------
    ValueError
        Naming, for each kind of bad value, the first rows (or CSV lines) holding it, the
        column, the value and the values allowed there. Besides each column's own rule,
        ``response`` and ``correct_response`` must use the coding of their row's trial
        type, and on arrow-of-time rows ``correct_response`` must agree with ``direction``.

    Examples
    --------
    >>> table = pd.DataFrame({"subject_id": ["a"], "subject_kind": ["participant"],
    ...                       "trial_type": ["aot"], "direction": ["forward"],
    ...                       "correct_response": ["F"], "response": ["F"]})
    >>> validate_trials(table)
    Traceback (most recent call last):
    ...
    ValueError: the trial table has 1 invalid value (rows count from 1); nothing was analysed:
      row 1, column 'subject_kind': 'participant'; allowed: 'human' or 'model'
    """
    problems: list[Problem] = []
    factorized: dict[str, Codes] = {}
    for name, rule in C.COLUMN_RULES.items():
        if name in data.columns and rule.kind != "answer":
            problems += _column_problems(data[name], name, rule, factorized)
    if {"trial_type", "correct_response"} <= set(data.columns):
        problems += _answer_problems(data)
    if {"correct", "response", "correct_response"} <= set(data.columns):
        problems += _correct_problems(data, factorized)
    if problems:
        raise ValueError(_message(problems, rows or Rows(data)))
    return factorized


# --- one column at a time ---------------------------------------------------------------

def _column_problems(column: pd.Series, name: str, rule: C.ColumnRule,
                     factorized: dict[str, Codes]) -> list[Problem]:
    bad = _numeric_problems(column, rule)
    if bad is None:
        check = cell_rules.CHECKS[rule.kind]
        codes = factorized[name] = _factorize(column.to_numpy(dtype=object))
        bad = _bad_values(codes, lambda v: rule.blank if cell_rules.blank(v) else check(v, rule.allowed)
                          or cell_rules.matches(v, rule.pattern))
    allowed = cell_rules.allowed_text(name, rule)
    return [Problem(name, cell_rules.shown(value), allowed, positions) for value, positions in bad]


def _numeric_problems(column: pd.Series, rule: C.ColumnRule):
    """The bad values of a numeric column, vectorised (a million response times are a
    million distinct values); None where the column is not numeric or the rule is not."""
    if rule.kind not in ("number", "integer", "boolean", "text") \
            or not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return None
    x = column.to_numpy(dtype=float, na_value=np.nan)
    bad = np.isnan(x) if not rule.blank else np.zeros(len(x), dtype=bool)
    finite = np.isfinite(x)
    if rule.kind in ("number", "integer", "boolean"):
        bad |= np.isinf(x)
    if rule.kind == "integer":
        bad |= finite & (x != np.round(x))
    if rule.kind == "boolean":
        bad |= finite & (x != 0) & (x != 1)
    return _grouped(x.astype(object), np.flatnonzero(bad))


def _bad_values(factorized: Codes, ok) -> list[tuple[object, np.ndarray]]:
    """``(value, positions)`` for each distinct value that is not ``ok``, from a column's
    :func:`_factorize`; ``ok`` is called once per distinct value (a big table holds few)."""
    codes, uniques = factorized
    bad = np.array([not ok(v) for v in uniques], dtype=bool)
    if not bad.any():
        return []
    return _grouped(np.asarray(uniques, dtype=object)[codes], np.flatnonzero(bad[codes]))


def _grouped(values: np.ndarray, positions: np.ndarray) -> list[tuple[object, np.ndarray]]:
    """``positions`` grouped by their value in ``values``, first occurrence first."""
    if not len(positions):
        return []
    codes, uniques = _factorize(values[positions])
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(uniques)))[:-1]
    return list(zip(uniques, np.split(positions[order], bounds)))


def _factorize(values: np.ndarray) -> Codes:
    """``(codes, uniques)`` of ``values``, every missing value (None, NaN) as one unique.
    List cells are compared as tuples; dict cells (parsed JSON objects) all as one value,
    :data:`cell_rules.JSON_OBJECT`."""
    try:
        # With the NA sentinel, then NA as one more unique: pandas' use_na_sentinel=False
        # costs twice as much on a column of a million strings.
        codes, uniques = pd.factorize(values)
    except TypeError:  # list or dict cells
        values = values.copy()
        values[np.fromiter(map(isinstance, values, repeat(dict)), bool, len(values))] = cell_rules.JSON_OBJECT
        # Equal rows often share one object (a parsed table, the database): cells are told
        # apart by identity first, and only each distinct object is made a key.
        by_object, objects = pd.factorize(np.fromiter(map(id, values), np.int64, len(values)))
        first = np.empty(len(objects), dtype=np.int64)
        first[by_object[::-1]] = np.arange(len(values))[::-1]
        keys = np.empty(len(objects), dtype=object)
        for i, value in enumerate(values[first]):
            keys[i] = tuple(value) if isinstance(value, list) else value
        codes, uniques = pd.factorize(keys, use_na_sentinel=False)
        return codes[by_object], uniques
    missing = codes < 0
    if missing.any():
        codes = np.where(missing, len(uniques), codes)
        uniques = np.concatenate([np.asarray(uniques, dtype=object), np.array([None])])
    return codes, uniques


# --- answers, by trial type -------------------------------------------------------------

def _answer_problems(data: pd.DataFrame) -> list[Problem]:
    trial_type = data["trial_type"].to_numpy(dtype=object)
    cells = {c: data[c].to_numpy(dtype=object)
             for c in ("correct_response", "response", "direction") if c in data.columns}
    problems = []
    for kind, coding in C.ANSWER_CODES.items():
        at = np.flatnonzero(trial_type == kind)
        if not len(at):
            continue
        where = f" for trial_type {kind!r}"
        for name, blank in (("correct_response", False), ("response", True)):
            if name in cells:
                problems += _coded(name, cells[name][at], at, coding, blank, where)
        if "direction" not in cells:
            continue
        direction = cells["direction"][at]
        if kind not in C.DIRECTIONLESS_TRIAL_TYPES:
            codes, uniques = _factorize(direction)
            empty = np.flatnonzero(np.array([cell_rules.blank(v) for v in uniques], dtype=bool)[codes])
            if len(empty):
                problems.append(Problem("direction", "empty", cell_rules.one_of(C.DIRECTIONS) + where,
                                        at[empty]))
        if kind == C.AOT:
            problems += _direction_disagreements(direction, cells["correct_response"][at], at)
    return problems


def _coded(name: str, values: np.ndarray, at: np.ndarray, coding, blank: bool,
           where: str) -> list[Problem]:
    if coding == C.FRAME_LIST:
        check = _is_frame_order if name == "correct_response" else _is_frame_labels
        allowed = ('a JSON list of the presented frame labels 1..N in true order, e.g. '
                   '"[2, 1, 3]"' if name == "correct_response"
                   else 'a JSON list of presented frame labels, e.g. "[2, 1, 3]"')
        allowed += " or empty" if blank else ""
    else:
        check = lambda value: isinstance(value, str) and value in coding  # noqa: E731
        allowed = cell_rules.one_of([*coding, *(["empty"] if blank else [])], quote=coding)
    bad = _bad_values(_factorize(values), lambda v: blank if cell_rules.blank(v) else check(v))
    return [Problem(name, cell_rules.shown(value), allowed + where, at[pos]) for value, pos in bad]


def _is_frame_labels(value) -> bool:
    labels = cell_rules.parsed_json(value, list)
    return bool(labels) and all(cell_rules.is_int(v) and not isinstance(v, str) and v >= 1
                                for v in labels) and len(set(labels)) == len(labels)


def _is_frame_order(value) -> bool:
    labels = cell_rules.parsed_json(value, list)
    return _is_frame_labels(value) and sorted(labels) == list(range(1, len(labels) + 1))


def _direction_disagreements(direction: np.ndarray, answer: np.ndarray,
                             at: np.ndarray) -> list[Problem]:
    agree = "forward goes with correct_response 'F' and backward with 'B' on trial_type 'aot'"
    problems = []
    for way, right in C.DIRECTION_ANSWERS.items():
        wrong = [a for a in C.DIRECTION_ANSWERS.values() if a != right]
        rows = np.flatnonzero((direction == way) & np.isin(answer, wrong))
        for value, pos in _grouped(answer, rows):
            problems.append(Problem("direction/correct_response", f"{way!r} with {value!r}",
                                    agree, at[pos]))
    return problems


# --- correct, against the responses ----------------------------------------------------------

def _correct_problems(data: pd.DataFrame, factorized: dict[str, Codes]) -> list[Problem]:
    """A given ``correct`` must say what the app writes: ``response == correct_response``,
    and no answer is not a correct one. Frame orders compare as lists (exact match)."""
    factored = [factorized[c] if c in factorized else _factorize(data[c].to_numpy(dtype=object))
                for c in ("correct", "response", "correct_response")]
    sizes = [len(uniques) for _, uniques in factored]
    key = (np.asarray(factored[0][0], dtype=np.int64) * sizes[1]
           + factored[1][0]) * sizes[2] + factored[2][0]
    combos, combo_values = pd.factorize(key)
    found: dict[tuple[str, bool], list[int]] = {}
    for i, combined in enumerate(combo_values):
        rest, a = divmod(int(combined), sizes[2])
        g, r = divmod(rest, sizes[1])
        stated, response = factored[0][1][g], factored[1][1][r]
        if cell_rules.blank(stated) or not cell_rules.is_bool(stated):
            continue  # empty is derived later; a non-boolean is reported by the column rule
        expected = not cell_rules.blank(response) and _same_answer(response, factored[2][1][a])
        if _truth(stated) != expected:
            found.setdefault((cell_rules.shown(stated), expected), []).append(i)
    problems = []
    for (shown, expected), at in found.items():
        why = ("response equals correct_response" if expected else
               "response differs from correct_response or is empty (a non-response is not correct)")
        problems.append(Problem("correct", shown, f"{str(expected).lower()}, as {why}",
                                np.flatnonzero(np.isin(combos, at))))
    return problems


def _truth(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in cell_rules.TRUE_TEXT
    return bool(value)


def _same_answer(response, answer) -> bool:
    if isinstance(response, str) and isinstance(answer, str) and response == answer:
        return True
    given, wanted = cell_rules.parsed_json(response, list), cell_rules.parsed_json(answer, list)
    return given is not None and given == wanted


# --- the message --------------------------------------------------------------------------

def _message(problems: list[Problem], rows: Rows) -> str:
    problems = sorted(problems, key=lambda p: int(p.positions.min()))
    n_cells = sum(len(p.positions) for p in problems)
    head = (f"the trial table has {n_cells} invalid value{'s' if n_cells != 1 else ''} "
            f"({rows.note}); nothing was analysed:")
    lines = [head]
    for problem in problems[:MAX_LISTED]:
        first = np.sort(problem.positions)
        lines.append(f"  {rows.label(int(first[0]))}, column {problem.column!r}: "
                     f"{problem.value}; allowed: {problem.allowed}"
                     + _also(first[1:], rows))
    if len(problems) > MAX_LISTED:
        lines.append(f"  ... and {len(problems) - MAX_LISTED} more kinds of invalid value")
    return "\n".join(lines)


def _also(positions: np.ndarray, rows: Rows) -> str:
    if not len(positions):
        return ""
    named = ", ".join(str(rows.number(int(p))) for p in positions[:MAX_ROWS_NAMED - 1])
    more = len(positions) - (MAX_ROWS_NAMED - 1)
    return f" (also {rows.plural} {named}" + (f" and {more} more" if more > 0 else "") + ")"
