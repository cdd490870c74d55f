"""Model runs on AoT-PsyPhyBENCH items, scored like the paper, beside its published rows."""
from __future__ import annotations

import pandas as pd

from analysis import aot, loading, observers
from analysis import columns as C
from experiments.benchmarks import aot_psyphybench, reference

DEFAULT_SETTING = "zero-shot"  # the paper's protocol setting of a run that names none


def benchmark_reference_table(data: pd.DataFrame, tables=(2, 3, 5)) -> pd.DataFrame:
    """Our models' accuracy and F1 on benchmark items beside the paper's published rows.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical arrow-of-time trials.  Model rows count when ``extra["item_id"]`` is one of
        the 424 published items (``run-models`` writes it for imported benchmark clips).
    tables : iterable of int
        Published tables to show (default: zero-shot, few-shot and chain-of-thought).

    Returns
    -------
    pandas.DataFrame
        :data:`experiments.benchmarks.reference.COLUMNS` with ``observer`` after ``label``
        (:func:`analysis.observers.observer_ids`; empty on published rows), scores in
        percent; published rows are labelled ``"published, not measured"``.  Empty when no
        model ran on the benchmark's items.

    Notes
    -----
    Scores are :func:`analysis.aot.aot_metrics` per observer, the key every table uses
    (model, revision, prompt setting, label order; :mod:`analysis.observers`), so two
    settings or revisions of one model are two rows, never one pooled row: accuracy and
    Forward/Backward F1 as in the paper's sec. 4.5, unparseable answers counted as errors.
    A run without a setting is listed under :data:`DEFAULT_SETTING`.

    Examples
    --------
    >>> import pandas as pd
    >>> trials = pd.DataFrame({"subject_kind": "model", "subject_id": "m", "trial_type": "aot",
    ...     "correct_response": ["F", "B"], "response": ["F", "F"],
    ...     "extra": [{"item_id": "00001", "setting": "zero-shot"},
    ...               {"item_id": "00001_rev", "setting": "zero-shot"}]})
    >>> table = benchmark_reference_table(trials, tables=2)
    >>> table.loc[table.source == "measured", "accuracy_pct"].tolist()
    [50.0]
    """
    empty = pd.DataFrame(columns=[*reference.COLUMNS[:2], "observer", *reference.COLUMNS[2:]])
    if data.empty:
        return empty
    published_ids = {item.item_id for item in aot_psyphybench.read_items()}
    models = data[data["subject_kind"] == C.MODEL]
    on_items = models[loading.extra_column(models, "item_id").isin(published_ids)]
    if on_items.empty:
        return empty
    # One row per observer (model, revision, prompt setting, label order: the key every
    # table uses), so two runs of one model are never pooled into one measured row.
    keys = observers.observer_keys(on_items)
    runs = on_items.assign(observer=observers.observer_column(on_items), model=keys["model"],
                           setting=keys["setting"].fillna(DEFAULT_SETTING))
    measured = aot.aot_metrics(runs, by=["observer", "model", "setting"])
    # The observer rides through the reference table's sort in its (otherwise empty for
    # measured rows) note column, and is then given its own column.
    table = reference.reference_beside_measured(measured.assign(note=measured["observer"]),
                                                tables=tables)
    is_measured = table["source"] == reference.MEASURED
    table.insert(table.columns.get_loc("label") + 1, "observer",
                 table["note"].where(is_measured, pd.NA))
    table.loc[is_measured, "note"] = pd.NA
    return table
