"""Model runs on AoT-PsyPhyBENCH items, scored like the paper, beside its published rows."""
from __future__ import annotations

import pandas as pd

from analysis import aot, loading
from analysis import columns as C
from experiments.benchmarks import aot_psyphybench, reference


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
        :data:`experiments.benchmarks.reference.COLUMNS`, scores in percent; published rows
        are labelled ``"published, not measured"``.  Empty when no model ran on the
        benchmark's items.

    Notes
    -----
    Scores are :func:`analysis.aot.aot_metrics` per model (``subject_id``) and prompt
    setting (``extra["setting"]``): accuracy and Forward/Backward F1 as in the paper's
    sec. 4.5, unparseable answers counted as errors.

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
    if data.empty:
        return pd.DataFrame(columns=list(reference.COLUMNS))
    published_ids = {item.item_id for item in aot_psyphybench.read_items()}
    models = data[data["subject_kind"] == C.MODEL]
    on_items = models[loading.extra_column(models, "item_id").isin(published_ids)]
    if on_items.empty:
        return pd.DataFrame(columns=list(reference.COLUMNS))
    runs = on_items.assign(model=on_items["subject_id"],
                           setting=loading.extra_column(on_items, C.EXTRA_SETTING, "zero-shot"))
    measured = aot.aot_metrics(runs, by=["model", "setting"])
    return reference.reference_beside_measured(measured, tables=tables)
