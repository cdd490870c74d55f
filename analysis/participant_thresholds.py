"""What a sweep's fits over participants may claim: each participant's accuracy above chance
(:func:`mark_chance`), and for adaptive sessions the median of participants' thresholds in
place of the pooled fit (:func:`adaptive_pooled`).

A participant at chance has no threshold within or near the sweep: the fit puts one far past
its easiest level with a width of tens of sweeps, and under QUEST+ the trials pile at the
easiest level, where a posterior looks precise. A one-sided binomial test of the analysed
trials of that sweep against chance (alpha :data:`ALPHA`) says whether there is anything to
fit; where there is not, the row's status is :data:`NOT_ABOVE_CHANCE` and it has no interval.

Pooling the trials of an adaptive design is biased: each participant's levels sit around
their own threshold, so the pooled trials mix curves at different places and the pooled curve
flattens (16 simulated people with thresholds 0.3-0.8 and width 0.5: pooled width 1.99 where
the average of their curves has 0.77), and one participant at chance at the easiest level
can turn it over. A likelihood fit does not depend on how levels were chosen per participant
only. So an adaptive sweep's "pooled" row is the median of participants' thresholds, with the
distribution-free order-statistic interval of a median over participants.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis import columns as C
from analysis.loading import extra_column
from analysis.sweep_fits import is_drawn

ALPHA = 0.05
NOT_ABOVE_CHANCE = "not above chance"
MEDIAN = "median of participants"
MEDIAN_BEYOND = "median beyond the sweep"
NO_THRESHOLD = "no participant with a threshold"
CI = 0.95
INTERVALS = ("threshold_lo", "threshold_hi", "width_lo", "width_hi")
POOLED_CURVE = ("width", "width_lo", "width_hi", "lapse", "curve_min", "curve_max")


def p_above_chance(k: int, n: int, chance: float) -> float:
    """One-sided binomial p value of ``k`` correct of ``n`` against ``chance``."""
    return float(stats.binomtest(int(k), int(n), chance, alternative="greater").pvalue) \
        if n else 1.0


def mark_chance(fits: pd.DataFrame, humans: pd.DataFrame, subject: str, by: list[str],
                chance: float) -> pd.DataFrame:
    """``fits`` with each participant's ``p_above_chance`` over their analysed trials of the
    sweep, and status :data:`NOT_ABOVE_CHANCE` (intervals NaN) where it is ``ALPHA`` or more."""
    counts = humans.groupby([*by, subject])["correct"].agg(["sum", "size"]).reset_index()
    counts["p_above_chance"] = [p_above_chance(k, n, chance)
                                for k, n in zip(counts["sum"], counts["size"])]
    out = fits.merge(counts[[*by, subject, "p_above_chance"]], on=[*by, subject], how="left")
    fails = out["p_above_chance"] >= ALPHA
    out.loc[fails, "status"] = NOT_ABOVE_CHANCE
    out.loc[fails, [c for c in INTERVALS if c in out]] = np.nan
    return out


def is_adaptive(trials: pd.DataFrame) -> pd.Series:
    """Whether each trial's level was placed by QUEST+ (``extra["adaptive"]``)."""
    if trials.empty or "extra" not in trials:
        return pd.Series(False, index=trials.index)
    return extra_column(trials, "adaptive").map(lambda a: isinstance(a, dict) and "level" in a)


def median_interval(values: np.ndarray, ci: float = CI) -> tuple[float, float, float]:
    """The median of ``values`` and the order-statistic interval [x_(j), x_(n+1-j)], j the
    largest with P(Binomial(n, 1/2) < j) <= (1 - ci) / 2 (coverage at least ``ci`` for any
    continuous distribution); NaN ends for fewer than 6 values (none reaches 95%)."""
    x = np.sort(np.asarray(values, float))
    n = x.size
    j = 0
    while stats.binom.cdf(j, n, 0.5) <= (1 - ci) / 2:
        j += 1
    lo, hi = (x[j - 1], x[n - j]) if j >= 1 else (np.nan, np.nan)
    return float(np.median(x)), float(lo), float(hi)


def adaptive_pooled(fits: pd.DataFrame, adaptive_sweeps, pooled: str, subject: str,
                    sweep: str, direction) -> pd.DataFrame:
    """``fits`` with the pooled row of every sweep in ``adaptive_sweeps`` replaced by the
    median of its participants' thresholds and its interval; a participant not above chance
    counts as a threshold past the easiest level (``direction(sweep)``: +1 rising)."""
    out = fits.copy()
    for name in adaptive_sweeps:
        rows = out[(out[sweep] == name) & (out[subject] != pooled)]
        place = direction(name)
        at_chance = rows["status"] == NOT_ABOVE_CHANCE
        fitted = rows.get("threshold", pd.Series(np.nan, index=rows.index))
        values = fitted[~at_chance & fitted.notna()].to_numpy(float)
        if place is not None:
            values = np.r_[values, np.full(int(at_chance.sum()), place * np.inf)]
        left_out = len(rows) - values.size
        where = (out[sweep] == name) & (out[subject] == pooled)
        if values.size == 0:  # the pooled row's own failure says why (e.g. all right)
            out.loc[where, [c for c in out if c.startswith(("threshold", "width"))]] = np.nan
            out.loc[where & out["status"].map(is_drawn), "status"] = NO_THRESHOLD
            continue
        median, lo, hi = median_interval(values)
        # nothing of the pooled trials' curve is kept: a median has no width or asymptote
        out.loc[where, [c for c in POOLED_CURVE if c in out]] = np.nan
        out.loc[where, "ends_at_limit"] = ""
        out.loc[where, ["threshold", "threshold_lo", "threshold_hi"]] = [
            v if np.isfinite(v) else np.nan for v in (median, lo, hi)]
        out.loc[where, ["at_bound", "at_step"]] = False
        out.loc[where, "n_clusters"] = values.size
        out.loc[where, "status"] = MEDIAN if np.isfinite(median) else MEDIAN_BEYOND
        out.loc[where, "interval"] = (
            f"order-statistic interval of the median over {values.size} participants "
            f"(at least {CI:.0%}; empty end: beyond the sweep); {int(at_chance.sum())} not "
            f"above chance counted past the easiest level"
            + (f"; {left_out} without a threshold left out" if left_out else "")
            + "; adaptive levels: the pooled trials' curve is not a population estimate")
    return out


def human_answers(trials: pd.DataFrame) -> pd.DataFrame:
    """People's answered trials, ``correct`` numeric."""
    humans = trials[trials["subject_kind"] == C.HUMAN]
    humans = humans.assign(correct=pd.to_numeric(humans["correct"], errors="coerce"))
    return humans[humans["correct"].notna()]
