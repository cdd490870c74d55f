"""Load trials into one typed long table, and the small views every metric starts from."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.cell_rules import TRUE_TEXT
from analysis.csv_cells import escape_cells, unescape_cells
from analysis.validation import Codes, Rows, validate_trials


def read_trials(path: str | Path) -> pd.DataFrame:
    """Read an exported trial CSV into the canonical typed frame.

    Parameters
    ----------
    path : str or Path
        A CSV with the canonical columns (see :mod:`analysis.columns`); list and dict
        columns hold JSON, and text cells are quoted as :mod:`analysis.csv_cells` writes
        them (one leading ``'`` is stripped).

    Returns
    -------
    pandas.DataFrame
        The frame returned by :func:`normalize_trials`.

    Raises
    ------
    ValueError
        If the file is missing, empty, not CSV, lacks a required column, or holds a value
        outside the codebook (:func:`analysis.validation.validate_trials`; the message names
        the CSV line, counting the header as line 1).
    """
    return normalize_trials(*read_trial_cells(path))


def read_trial_cells(path: str | Path) -> tuple[pd.DataFrame, CsvLines]:
    """The trial CSV as read, its text cells unquoted, not yet checked or typed; and how
    messages name its lines. :func:`read_trials` is this plus :func:`normalize_trials`."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"trial file not found: {path}")
    try:
        raw = pd.read_csv(path, dtype={"response": object, "correct_response": object,
                                       "subject_id": object, "source_clip_id": object,
                                       "stimulus_id": object, "session_id": object,
                                       "onset_method": object},
                          # Only an empty cell is missing: ids like "NaN", "null" or "NA" are
                          # participants (pandas would merge them all into one blank subject).
                          keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not a readable trial CSV: {exc}") from exc
    return unescape_cells(raw), CsvLines(path)


class CsvLines(Rows):
    """Names rows of a CSV by the line they start on (a quoted cell may span lines)."""

    note = "line numbers count the CSV header as line 1"
    plural = "lines"

    def __init__(self, path: Path):
        self._path = path
        self._starts: list[int] | None = None

    def number(self, position: int) -> int:
        starts = self._starts
        if starts is None:  # read again only when a message needs it
            starts = self._starts = _record_lines(self._path)
        return starts[position]

    def label(self, position: int) -> str:
        return f"line {self.number(position)}"


def _record_lines(path: Path) -> list[int]:
    """The line on which each data record starts; blank lines are skipped, as pandas does."""
    starts, previous = [], 0
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        for record in reader:
            if record:
                starts.append(previous + 1)
            previous = reader.line_num
    return starts[1:]


def normalize_trials(data: pd.DataFrame, rows: Rows | None = None) -> pd.DataFrame:
    """Give a canonical trial frame its types: parsed JSON columns, bools, floats.

    Missing optional columns are added with neutral values, so an export from an older
    study still loads. JSON columns may already hold Python objects (from the database).

    Parameters
    ----------
    data : pandas.DataFrame
        One row per trial with at least :data:`analysis.columns.REQUIRED_COLUMNS`.
    rows : analysis.validation.Rows, optional
        How an error message names a row (CSV lines for :func:`read_trials`).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`analysis.columns.TRIAL_COLUMNS` (plus any extra ones given), with
        ``categories`` a list, ``exclusion_reasons`` a list, ``extra`` a dict (JSON cells
        are shared between equal rows: treat them as read-only), ``excluded`` bool,
        ``correct`` float (1.0 / 0.0 / NaN), ``rt_ms`` float, ids as strings, and
        ``response``, ``correct_response`` and :data:`CATEGORICAL_COLUMNS` as pandas
        categoricals.

    Raises
    ------
    ValueError
        If a required column is missing, or a cell is outside the codebook
        (:func:`analysis.validation.validate_trials`).
    """
    missing = [c for c in C.REQUIRED_COLUMNS if c not in data.columns]
    if missing:
        raise ValueError(f"trial table lacks required column(s): {', '.join(missing)}")
    factorized = validate_trials(data, rows)
    df = data.copy()
    for col in C.TRIAL_COLUMNS:
        if col not in df.columns:
            df[col] = None
    for col, kind in (("categories", list), ("exclusion_reasons", list), ("extra", dict)):
        df[col] = _parse_json_column(df[col], kind, col)
    if df["excluded"].dtype != bool:
        df["excluded"] = _map_unique(df["excluded"], _to_bool, factorized).astype(bool)
    df["rt_ms"] = pd.to_numeric(df["rt_ms"], errors="coerce").astype(float)
    df["session_number"] = pd.to_numeric(df["session_number"], errors="coerce").astype("Int64")
    for col in ("response", "correct_response"):
        df[col] = _map_unique(df[col], _to_text, factorized)
    for col in ("subject_id", "session_id", "stimulus_id", "source_clip_id"):
        df[col] = _map_unique(df[col], _to_id, factorized)
    df["correct"] = _correct_column(df, factorized)
    return _as_categories(df)


def _as_categories(df: pd.DataFrame) -> pd.DataFrame:
    """Low-cardinality text as pandas categoricals: every metric filters on these columns,
    and comparing integer codes is far cheaper than comparing a million Python strings.
    ``response`` and ``correct_response`` share one dtype so they compare with each other."""
    for col in CATEGORICAL_COLUMNS:
        df[col] = df[col].astype("category")
    answers = pd.unique(np.concatenate([df["response"].dropna().to_numpy(object),
                                        df["correct_response"].dropna().to_numpy(object)]))
    dtype = pd.CategoricalDtype(sorted(answers))
    for col in ("response", "correct_response"):
        df[col] = df[col].astype(dtype)
    return df


CATEGORICAL_COLUMNS = ("subject_kind", "session_status", "trial_type", "direction", "block",
                       "experiment", "onset_method")


def _map_unique(col: pd.Series, fn, factorized: dict[str, Codes] | None = None) -> pd.Series:
    """``col.map(fn)``, calling ``fn`` once per distinct value (``None`` for missing ones).

    A million-row table holds a few hundred distinct ids, answers or JSON strings, so this
    is what keeps loading fast. ``factorized`` holds the codes validation computed for the
    unchanged input columns, so these are not hashed twice. Unhashable cells (lists,
    dicts) fall back to a plain map.
    """
    if factorized and col.name in factorized:
        codes, uniques = factorized[str(col.name)]
        mapped = np.empty(len(uniques), dtype=object)
        mapped[:] = [fn(v) for v in uniques]
        return pd.Series(mapped[codes], index=col.index, dtype=object)
    try:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
    except TypeError:
        return col.map(fn).astype(object)
    mapped = np.empty(len(uniques) + 1, dtype=object)
    for i, value in enumerate(uniques):  # one cell at a time: lists must stay whole cells
        mapped[i] = fn(value)
    mapped[-1] = fn(None)  # code -1 (missing) picks the last slot
    return pd.Series(mapped[codes], index=col.index, dtype=object)


def _parse_json_column(col: pd.Series, kind: type, name: str) -> pd.Series:
    """Parsed JSON; equal strings share one parsed object, so treat cells as read-only."""
    if set(map(type, col.to_numpy(dtype=object))) <= {kind}:  # already parsed; C-speed check
        return col.astype(object)

    def parse(value):
        if isinstance(value, kind):
            return value
        if value is None or (isinstance(value, float) and np.isnan(value)) or value == "":
            return kind()
        if not isinstance(value, str):
            raise ValueError(f"column {name!r} holds {value!r}, expected JSON {kind.__name__}")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"column {name!r} holds invalid JSON: {value[:60]!r}") from exc
        if not isinstance(parsed, kind):
            raise ValueError(f"column {name!r} holds {value[:60]!r}, expected {kind.__name__}")
        return parsed

    return _map_unique(col, parse)


def _to_bool(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in TRUE_TEXT
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return False
    return bool(value)


def _to_text(value):
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value))
    return str(value)


def _to_id(value):
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _to_correct(value) -> float:
    if value is None or value == "" or (isinstance(value, float) and np.isnan(value)):
        return np.nan
    return float(_to_bool(value))


def _correct_column(df: pd.DataFrame, factorized: dict[str, Codes]) -> pd.Series:
    """Correctness as float; derived from the responses where the writer left it empty."""
    given = _map_unique(df["correct"], _to_correct, factorized).astype(float)
    derived = (df["response"] == df["correct_response"]).astype(float)
    derived[df["response"].isna() | df["correct_response"].isna()] = np.nan
    timeout = df["response"].isna() & df["correct_response"].notna()
    derived[timeout] = 0.0  # a timeout is an error, not missing data (Hanyu et al. 2023)
    return given.astype(float).fillna(derived)


def included(data: pd.DataFrame) -> pd.DataFrame:
    """Rows that count for metrics: not excluded and not practice."""
    keep = ~data["excluded"].astype(bool) & (data["block"] != C.PRACTICE_BLOCK)
    return data[keep]


def aot_trials(data: pd.DataFrame) -> pd.DataFrame:
    """Arrow-of-time rows: ``trial_type == "aot"``; in a table without trial types (a
    simulation, an example), the rows answered ``"F"`` or ``"B"``.

    Rows are picked by type, never by their answers: other types (catch trials, any type
    coded F/B) have their own analyses.
    """
    keep = (data["trial_type"] == C.AOT if "trial_type" in data.columns
            else data["correct_response"].isin(("F", "B"))).to_numpy(bool)
    # Most callers pass rows that are all arrow of time already: a shallow copy (its own
    # frame, copied on write) instead of copying every column of a million rows again.
    return data.copy(deep=False) if keep.all() else data[keep]


def category_sets(data: pd.DataFrame) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """``(codes, sets)``: each row's category set as a code into a few distinct tuples,
    in order of first appearance."""
    return list_codes(data["categories"].to_numpy(object))


def list_codes(cells: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """``(codes, tuples)``: each list cell as a code into its distinct values (as tuples), in
    order of first appearance.

    Equal rows share one parsed list (normalize_trials), so cells are told apart by
    identity first, and only the few distinct cells are made tuples: building a million
    tuples was the slowest step of every category breakdown.
    """
    by_cell, distinct = pd.factorize(np.fromiter(map(id, cells), np.int64, len(cells)))
    row_of = np.empty(len(distinct), dtype=np.int64)
    row_of[by_cell] = np.arange(len(cells))  # any row of a cell: they hold one object
    by_set, uniques = pd.factorize(pd.Series([tuple(cells[i]) for i in row_of],
                                             dtype=object).to_numpy())
    return by_set[by_cell], list(uniques)


def explode_categories(data: pd.DataFrame, name: str = "category",
                       columns: list[str] | None = None) -> pd.DataFrame:
    """One row per (trial, category) for multi-label breakdowns.

    A trial tagged Fall+Diffusion counts once under Fall and once under Diffusion; trials
    without a category are dropped. The original index is kept so rows can be matched.
    ``columns`` limits the copy to the columns a caller needs (much faster on big tables).
    """
    codes, sets = category_sets(data)
    lengths = np.array([len(s) for s in sets], dtype=np.int64)[codes]
    rows = np.repeat(np.arange(len(data)), lengths)
    # The k-th category of row r is sets[codes[r]][k]: rank within each row's repeat block.
    rank = np.arange(len(rows)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    flat = np.array([c for s in sets for c in s], dtype=object)
    offsets = np.cumsum([0] + [len(s) for s in sets])[:-1]
    out = (data if columns is None else data[columns]).iloc[rows].copy()
    out[name] = flat[offsets[codes[rows]] + rank] if len(rows) else []
    return out


def extra_column(data: pd.DataFrame, key: str, default=None) -> pd.Series:
    """One key of the ``extra`` dicts as a Series (``default`` where absent)."""
    return data["extra"].map(lambda e: e.get(key, default) if isinstance(e, dict) else default)


def benchmark_subset(data: pd.DataFrame) -> pd.DataFrame:
    """Trials of the AoT-PsyPhyBENCH subset: no category in
    :data:`analysis.columns.BENCHMARK_EXCLUDED_CATEGORIES` (Reciprocal)."""
    bad = set(C.BENCHMARK_EXCLUDED_CATEGORIES)
    codes, sets = category_sets(data)
    keep = np.array([not bad.intersection(s) for s in sets], dtype=bool)
    return data[keep[codes]] if len(data) else data


def stimulus_key(trials: pd.DataFrame) -> pd.Series:
    """A stimulus is a clip in one direction; ``stimulus_id`` where the writer gave one."""
    key = trials["stimulus_id"].astype(object)
    missing = key.isna()
    if missing.any():  # build the fallback only where needed: it is a string per row
        rows = trials[missing]
        key[missing] = rows["source_clip_id"].astype(str) + "/" + rows["direction"].astype(str)
    return key


def write_trials_csv(data: pd.DataFrame, path: str | Path) -> None:
    """Write a canonical trial frame as CSV, list/dict columns as JSON and text cells quoted
    against spreadsheet formulas (the export format)."""
    out = data.copy()
    for col in C.JSON_COLUMNS:
        if col in out.columns:
            out[col] = out[col].map(json.dumps)
    escape_cells(out).to_csv(path, index=False)
