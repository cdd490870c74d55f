"""People's and each model's arrow-of-time metrics with bootstrap CIs, overall and per
motion category; the people-minus-model gaps come from the same bootstrap draws."""
from __future__ import annotations

import pandas as pd

from analysis import aot, bootstrap, loading
from analysis.report import stats


def overall_table(kept: pd.DataFrame, n_boot: int, rng, gaps: list | None = None
                  ) -> pd.DataFrame:
    """Per observer on the full set and the benchmark subset (no Reciprocal), with CIs:
    two-way (participant x clip) for people, clip for models (:mod:`analysis.bootstrap`).
    People-minus-model gaps from the same draws are appended to ``gaps`` when given."""
    parts = []
    for subset, frame in (("full", kept), ("benchmark", loading.benchmark_subset(kept))):
        if loading.aot_trials(frame).empty:
            continue
        metrics = aot.aot_metrics(frame, by="observer")
        draws = bootstrap.bootstrap_draws(frame, by="observer", strata="observer",
                                          n_boot=n_boot, rng=rng)
        ci = stats.few_people_intervals(bootstrap.percentile_table(draws), frame)
        ci = ci.drop(columns=[c for c in bootstrap.DEFAULT_METRICS if c in ci])
        parts.append(metrics.merge(ci, on="observer").assign(subset=subset))
        if gaps is not None:
            gap = stats.few_people_intervals(stats.gap_table(draws), frame)
            gaps.append(gap.assign(subset=subset))
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    return table[["subset", *table.columns.drop("subset")]]  # which set a row is on, first


def category_table(exploded: pd.DataFrame, n_boot: int, rng, gaps: list | None = None
                   ) -> pd.DataFrame:
    """Per observer x category (multi-label counted in each), with CIs as
    :func:`overall_table` (people-minus-model gaps per category appended to ``gaps``)."""
    metrics = aot.aot_metrics(exploded, by=["observer", "category"])
    draws = bootstrap.bootstrap_draws(exploded, by=["observer", "category"],
                                      strata="observer", n_boot=n_boot, rng=rng)
    if gaps is not None:
        gaps.append(stats.few_people_intervals(stats.gap_table(draws), exploded))
    ci = stats.few_people_intervals(bootstrap.percentile_table(draws), exploded)
    ci = ci.drop(columns=[c for c in bootstrap.DEFAULT_METRICS if c in ci])
    return metrics.merge(ci, on=["observer", "category"])
