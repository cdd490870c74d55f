"""AoT-PsyPhyBENCH's published results as reference rows, and a table that puts our
measured results beside them.

Every row read from ``data/aot_psyphybench/reference.csv`` is labelled ``source =
"published"`` with its table number and the paper's citation: these numbers were
transcribed from the paper, not measured by Chronoscope.  Scores are in percent, as printed.

Transcription notes
-------------------
* Tables 8-12 repeat Tables 3-7 in the text we worked from; both copies are kept, with
  their own table numbers.  Where the copies or tables disagree the printed values are kept
  and the row's ``note`` says so (Table 7 vs 12 human B. F1 88.0 / 88.1; Table 2 vs 3 GPT-4.1
  zero-shot 62.5/57.4/60.1 vs 62.3/57.4/60.0, Qwen2.5VL-72B B. F1 38.2 vs 38.0).
* ``fps`` is printed only in Tables 7 and 12; elsewhere it is the rate of the sec. 4.6
  protocol for the model's family.
* Table 1 gives human F1 per category on Hanyu et al.'s full 360-clip set; ``n_clips``
  there counts that set's clips per category.
* Figure 5's per-category model scores are printed only as a figure and are not included.

Later papers' results on the benchmark (``data/aot_psyphybench/later_results.csv``,
:func:`later_results`) are published rows too, each with its own citation and no table
number; a row says in its ``note`` how much of the paper could be checked.
"""
from __future__ import annotations

import re

import pandas as pd

from experiments.benchmarks.aot_psyphybench import DATA_DIR
from experiments.benchmarks.protocol import SETTINGS

REFERENCE_CSV = DATA_DIR / "reference.csv"
LATER_CSV = DATA_DIR / "later_results.csv"
PAPER_CITATION = ("Matta, Pereira, Han, Cheng & Kitazawa. Which Way Does Time Flow? "
                  "A Psychophysics-Grounded Evaluation for Vision-Language Models "
                  "(AoT-PsyPhyBENCH).")
PUBLISHED, MEASURED = "published", "measured"
PUBLISHED_LABEL = "published, not measured"
TABLES = tuple(range(1, 13))
SCORE_COLUMNS = ("f1_forward", "f1_backward", "accuracy")
COLUMNS = ("source", "label", "table", "setting", "group", "model", "model_key", "shots",
           "effort", "cot", "train_size", "fps", "category", "n_clips", "f1_forward_pct",
           "f1_backward_pct", "accuracy_pct", "n_trials", "citation", "note")


def published_reference(tables=None) -> pd.DataFrame:
    """The paper's published rows, optionally only some tables.

    Parameters
    ----------
    tables : int or iterable of int, optional
        Table numbers 1-12 (default: all).

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS`; ``source == "published"``, ``label == "published, not measured"``,
        scores in percent (``NaN`` where the paper prints a dash), ``n_trials`` empty.

    Examples
    --------
    >>> row = published_reference(2).query("model == 'GPT-4.1'").iloc[0]
    >>> float(row.f1_forward_pct), float(row.f1_backward_pct), float(row.accuracy_pct)
    (62.5, 57.4, 60.1)
    """
    wanted = _tables(tables)
    data = pd.read_csv(REFERENCE_CSV, dtype={"effort": str, "cot": str, "category": str,
                                             "note": str, "model_key": str})
    data = data[data["table"].isin(wanted)].rename(
        columns={c: f"{c}_pct" for c in SCORE_COLUMNS})
    data.insert(0, "source", PUBLISHED)
    data.insert(1, "label", PUBLISHED_LABEL)
    data["n_trials"] = pd.NA
    data["citation"] = PAPER_CITATION + " Table " + data["table"].astype(str) + "."
    return data.loc[:, list(COLUMNS)].reset_index(drop=True)


def later_results() -> pd.DataFrame:
    """Later papers' published results on AoT-PsyPhyBENCH, as reference rows.

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS` like :func:`published_reference`, with the row's own ``citation``
        and an empty ``table``; scores in percent, empty where the paper gives none.

    Examples
    --------
    >>> row = later_results().iloc[0]
    >>> float(row.accuracy_pct), row.citation.split(" (")[0], row.label
    (98.1, 'Han, Cheng, Pereira, Liu & Kitazawa', 'published, not measured')
    """
    data = pd.read_csv(LATER_CSV, dtype={"note": str, "model_key": str}).rename(
        columns={c: f"{c}_pct" for c in SCORE_COLUMNS})
    data.insert(0, "source", PUBLISHED)
    data.insert(1, "label", PUBLISHED_LABEL)
    for column in COLUMNS:
        if column not in data:
            data[column] = pd.NA
    return data.loc[:, list(COLUMNS)]


def _tables(tables) -> list[int]:
    if tables is None:
        return list(TABLES)
    wanted = [tables] if isinstance(tables, int) else list(tables)
    bad = [t for t in wanted if t not in TABLES]
    if bad or not wanted:
        raise ValueError(f"tables must be among {TABLES[0]}-{TABLES[-1]}, got {bad or wanted}")
    return wanted


def model_key(name: str) -> str:
    """A name that matches our model ids to the paper's spellings.

    ``"Qwen/Qwen2.5-VL-7B-Instruct"``, ``"Qwen2.5VL-7B"`` and ``"Qwen2.5 VL-7B"`` all give
    ``"qwen2.5-vl-7b"``; ``"gpt-4.1-2025-04-14"`` gives ``"gpt-4.1"``.
    """
    key = re.split(r"[/\\]", str(name).strip().rstrip("/\\"))[-1].lower()
    key = re.sub(r"[\s_]+", "-", key)
    key = re.sub(r"-\d{4}-\d{2}-\d{2}$", "", key)  # API snapshot dates
    key = re.sub(r"-instruct$", "", key)
    key = re.sub(r"qwen(2(?:\.5)?)-?vl", r"qwen\1-vl", key)
    return re.sub(r"-{2,}", "-", key)


def _measured_rows(measured: pd.DataFrame) -> pd.DataFrame:
    required = ["model", "setting", *SCORE_COLUMNS]
    absent = [c for c in required if c not in measured.columns]
    if absent:
        raise ValueError(f"measured results need columns {required}; missing {absent}")
    scores = measured[list(SCORE_COLUMNS)].astype(float)
    if ((scores < 0) | (scores > 1)).any().any():
        raise ValueError("measured scores must be proportions in [0, 1] (as analysis.aot "
                         "returns them), not percentages")
    rows = pd.DataFrame({
        "source": MEASURED, "label": MEASURED,
        "setting": measured["setting"].astype(str),
        "model": measured["model"].astype(str),
        "model_key": measured["model"].map(model_key),
        "n_trials": measured["n_trials"] if "n_trials" in measured else pd.NA,
        **{f"{c}_pct": 100 * scores[c] for c in SCORE_COLUMNS},
    })
    for column in COLUMNS:
        if column not in rows:
            rows[column] = measured[column] if column in measured else pd.NA
    return rows.loc[:, list(COLUMNS)]


def reference_beside_measured(measured: pd.DataFrame | None = None, tables=(2, 3, 5),
                              settings=None, later: bool = True) -> pd.DataFrame:
    """Published rows and our measured rows in one table, each model's rows together.

    Parameters
    ----------
    measured : pandas.DataFrame, optional
        One row per model and setting with ``model``, ``setting`` (a protocol setting such
        as ``"zero-shot"``), ``f1_forward``,
        ``f1_backward`` and ``accuracy`` as proportions (the output of
        ``analysis.aot.aot_metrics(trials, by=["model", "setting"])``) and optionally
        ``n_trials``.
    tables : int or iterable of int
        Published tables to include (default: zero-shot, few-shot and CoT: 2, 3, 5).
    settings : iterable of str, optional
        Keep only these settings.
    later : bool
        Also the later papers' rows (:func:`later_results`, default True): the newest
        published anchors.

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS`, scores in percent; ``label`` is ``"published, not measured"`` or
        ``"measured"``.  Sorted by setting (in :data:`protocol.SETTINGS` order), model key,
        then published before measured.
    """
    parts = [published_reference(tables)] + ([later_results()] if later else [])
    if measured is not None and len(measured):
        parts.append(_measured_rows(measured))
    table = pd.concat(parts, ignore_index=True)
    table["table"] = table["table"].astype("Int64")  # later papers' rows have none
    if settings is not None:
        table = table[table["setting"].isin(list(settings))]
    # Protocol settings in the paper's order, then the rest (SFT, the human study).
    rank = {name: i for i, name in enumerate(SETTINGS)}
    keys = table.assign(_setting=table["setting"].map(lambda s: rank.get(s, len(rank))),
                        _source=table["source"].map({PUBLISHED: 0, MEASURED: 1}))
    return (keys.sort_values(["_setting", "setting", "model_key", "_source", "table"],
                             kind="stable")
            .drop(columns=["_setting", "_source"]).reset_index(drop=True))
