"""A pooled psychometric fit's intervals over clusters (participants): leave-one-out
refits, jackknife t intervals of threshold and width (:func:`cluster_intervals`) and a
pointwise band of the curve (:func:`pooled_band`).

The pooled fit's intervals are jackknife t intervals over participants (leave one out, t
with n - 1 degrees of freedom; the width's on the log scale), not a participant bootstrap:
with few participants the percentile bootstrap's spread is sqrt((n - 1) / n) of the real
one and its tails are normal where t tails are due. Coverage of nominal 95% intervals,
threshold / width, for n identical simulated participants without lapses (24 trials a
level; 1,000 simulated studies per cell, so +-1.4%; percentile bootstrap with 1,000
resamples; ``tests/analysis/test_psychometric.py`` reruns n = 6, and with 4% lapses):

=====  ==========================  ==========================
n      bouncing ball (10 levels)   pendulum (7 levels)
       percentile -> jackknife t   percentile -> jackknife t
=====  ==========================  ==========================
6      0.87 / 0.86 -> 0.96 / 0.96  0.86 / 0.83 -> 0.95 / 0.96
12     0.91 / 0.92 -> 0.95 / 0.96  0.90 / 0.90 -> 0.95 / 0.96
24     0.94 / 0.93 -> 0.96 / 0.96  0.93 / 0.94 -> 0.95 / 0.96
=====  ==========================  ==========================

Hesterberg's expanded percentile interval (percentiles at Phi(-+sqrt(n / (n - 1)) t_{n-1}))
was measured too and fell short on the pendulum at n = 6 (width 0.92). Participants who
differ from one another are not covered by this check: there the pooled fit estimates the
curve of the pooled trials, not any one participant's.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis.psychometric_counts import fit_counts
from analysis.sweep_fits import SIGMOIDS, WIDTH_ALPHA


def cluster_counts(x, level_of_row, y, cluster):
    """Per-cluster response sums and trial counts at levels ``x`` (clusters x levels)."""
    codes, uniques = pd.factorize(cluster)
    col = np.searchsorted(x, level_of_row)
    sums, counts = np.zeros((len(uniques), len(x))), np.zeros((len(uniques), len(x)))
    np.add.at(sums, (codes, col), y)
    np.add.at(counts, (codes, col), 1)
    return sums, counts


def jackknife_interval(point, leave_one_out, ci: float = 0.95):
    """Tukey's jackknife t interval: ``point +- t_{n-1}((1 + ci) / 2) SE``, with
    ``SE^2 = (n - 1) / n sum_i (theta_(i) - mean)^2`` over the n leave-one-out estimates
    (axis 0). NaN for fewer than 2 clusters."""
    loo = np.asarray(leave_one_out, float)
    n = loo.shape[0]
    if n < 2:
        return np.full(np.shape(point), np.nan), np.full(np.shape(point), np.nan)
    se = np.sqrt((n - 1) / n * ((loo - loo.mean(0)) ** 2).sum(0))
    half = stats.t.ppf((1 + ci) / 2, n - 1) * se
    return point - half, point + half


def cluster_intervals(x, k, n, est, sums, counts, options, ci):
    """Leave-one-cluster-out refits and jackknife t intervals (width on the log scale, so
    its interval stays positive and follows its skew)."""
    loo = fit_counts(x, k - sums, n - counts, **options)
    threshold = jackknife_interval(est["threshold"][0], loo["threshold"], ci)
    log_width = jackknife_interval(np.log(est["width"][0]), np.log(loo["width"]), ci)
    return {"threshold": threshold, "width": tuple(np.exp(log_width))}, loo


def pooled_band(data: pd.DataFrame, level: str, dv: str, cluster: str, fit, grid,
                ci: float = 0.95, **options) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise jackknife t band over clusters of a pooled fit's curve on ``grid``.

    The interval is taken on the sigmoid's argument ``direction (x - threshold) / s`` (where
    the leave-one-out curves are linear in x) and mapped through the pooled curve, so the
    band stays within its asymptotes. ``fit`` is the pooled row of
    :func:`analysis.psychometric.fit_psychometric`;
    ``options`` the fitting options it was made with where they differ from the row's own
    values (a ``lapse`` grid, so that each leave-one-out fit estimates its lapse afresh).
    """
    lv, y = data[level].to_numpy(float), data[dv].to_numpy(float)
    x = np.unique(lv)
    sums, counts = cluster_counts(x, lv, y, data[cluster].to_numpy())
    options = {o: fit[o] for o in ("sigmoid", "guess", "lapse")} | options
    loo = fit_counts(x, sums.sum(0) - sums, counts.sum(0) - counts, **options)
    quantile = SIGMOIDS[fit["sigmoid"]][2]
    spread = quantile(1 - WIDTH_ALPHA) - quantile(WIDTH_ALPHA)
    eta = lambda t, w, d: d * (np.asarray(grid) - t) * spread / w  # noqa: E731
    point = eta(fit["threshold"], fit["width"], fit["direction"])
    loo_eta = eta(loo["threshold"][:, None], loo["width"][:, None], loo["direction"][:, None])
    lo, hi = jackknife_interval(point, loo_eta, ci)
    curve = lambda e: fit["guess"] + (1 - fit["guess"] - fit["lapse"]) * SIGMOIDS[  # noqa: E731
        fit["sigmoid"]][0](e)
    return curve(lo), curve(hi)
