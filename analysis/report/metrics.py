"""metrics.json: the headline numbers of a report, JSON-ready."""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.report import registry as R
from analysis.report.labels import model_labels

HEADLINE = ("n_trials", "accuracy", "f1_forward", "f1_backward", "forward_share", "d_prime",
            "criterion")
# Tables also written to metrics.json, as records.
METRICS_TABLES = tuple(table for table in R.TABLES if table.metrics_json)


def headline(report, data: pd.DataFrame) -> dict:
    """Ns of the exclusion flow, each observer's headline metrics per subset, the notes,
    what each model fit was fitted on, and the tables of :data:`METRICS_TABLES`.

    ``report``: a :class:`analysis.report.build.Report` with its tables built; ``data``: the
    trials it was built from (for the models' labels)."""
    overall = report.tables.get(R.AOT_OVERALL, pd.DataFrame())
    observers: dict[str, dict[str, dict]] = {}
    for _, row in overall.iterrows():
        entry = observers.setdefault(row["observer"], {})
        entry[row["subset"]] = {k: plain(row[k]) for k in HEADLINE}
    flow = report.tables[R.EXCLUSION_FLOW]
    # Every N is the flow's: entered, and remaining = the trials the tables analyse.
    out = {"n_trials_entered": int(flow["n_trials_remaining"].iloc[0]),
           "n_trials_included": int(flow["n_trials_remaining"].iloc[-1]),
           "n_participants_entered": int(flow["n_participants_remaining"].iloc[0]),
           "n_participants_included": int(flow["n_participants_remaining"].iloc[-1]),
           # Without people the flow counts the model subjects (analysis.exclusions).
           "people": bool((data["subject_kind"] == C.HUMAN).any()),
           "sessions": report.sessions,
           "models": sorted(set(model_labels(data).values())),
           "observers": observers, "notes": report.notes}
    out.update(report.fit_info)
    for name in METRICS_TABLES:
        if name in report.tables:
            out[name] = report.tables[name].to_dict("records")
    return plain(out)


def plain(value):
    """JSON-ready: numpy scalars to Python, NaN/inf to None."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.bool_):
        return bool(value)
    return value
