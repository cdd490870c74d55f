"""The report's pair-metrics section (:mod:`analysis.pairs`): pair accuracy and pair
consistency beside accuracy, per observer, per motion category and per participant."""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import bootstrap, pairs
from analysis import columns as C
from analysis.report import registry as R
from analysis.report import stats

PAIRS_SEED = 0  # the section's own generator, so that the other tables' draws are unchanged
TABLES = tuple(t for t in R.TABLES if t.section == R.PAIRS)


def add_pair_tables(report, kept: pd.DataFrame, n_boot: int | None = None,
                    rng: np.random.Generator | None = None) -> None:
    """Add :data:`TABLES` (those with rows), their method to ``fit_info["pair_metrics_method"]``
    and a note; nothing when no subject answered both copies of any item. Below
    :data:`analysis.bootstrap.MIN_PARTICIPANTS` people the pooled people's intervals are
    left empty, as in the other sections (:func:`analysis.report.stats.few_people_intervals`);
    each participant's own clip intervals stay.

    ``n_boot`` defaults to the report's (``fit_info["uncertainty"]``, else 1000) and ``rng``
    to ``default_rng(PAIRS_SEED)``."""
    cells = pairs.pair_cells(kept)
    if cells.empty:
        return
    n_boot = n_boot or report.fit_info.get("uncertainty", {}).get("n_boot", 1000)
    seeded = rng is None
    rng = np.random.default_rng(PAIRS_SEED) if seeded else rng
    t = report.tables
    pooled = lambda table: stats.few_people_intervals(table, kept)  # noqa: E731
    t[R.PAIR_METRICS] = pooled(pairs.pair_metrics(None, n_boot=n_boot, rng=rng, cells=cells))
    with_category = cells[cells["categories"].map(lambda c: isinstance(c, list) and len(c) > 0)]
    if len(with_category):
        t[R.PAIR_METRICS_BY_CATEGORY] = pooled(pairs.pair_metrics(
            None, by=["observer", "category"], n_boot=n_boot, rng=rng, cells=with_category))
    people = cells[cells["observer"] == C.HUMAN]
    if len(people):
        t[R.PAIR_METRICS_BY_PARTICIPANT] = pairs.pair_metrics(
            None, by=["observer", "subject_id"], n_boot=n_boot, rng=rng, cells=people)
    report.fit_info["pair_metrics_method"] = {
        "n_boot": int(n_boot), "seed": PAIRS_SEED if seeded else None,
        "people": bootstrap.SCHEME_LABELS["two-way"], "models": "clip",
        "per_participant": "clip", "chance": pairs.CHANCE,
        "tasks": sorted(set(cells["task"])), "tables": [n for n in TABLES if n in t]}
    report.notes.append(_note(t[R.PAIR_METRICS], n_boot))


def _note(table: pd.DataFrame, n_boot: int) -> str:
    tasks = set(table["task"])
    analogue = (" Pair ordering (a clip's two frames shown in both orders, AB and BA) is "
                "scored the same way, as the frame-ordering analogue."
                if C.PAIR_ORDER in tasks else "")
    return ("Pair metrics: a pair is one subject's answers to both copies of an item that "
            "call for opposite answers (a clip forward and reversed). Pair accuracy: both "
            "right (chance 0.25); pair consistency: the two answers differ, right or "
            "consistently backwards (chance 0.5); accuracy is on the same paired trials. "
            "Models pair copies under the same label order. N-frame ordering has no pairs "
            "(each clip is seen once, in one order)." + analogue + " 95% percentile "
            f"intervals from {n_boot} resamples: participants x clips (two-way) for people, "
            "clips for models and for each participant; a clip's two copies are drawn "
            "together.")
