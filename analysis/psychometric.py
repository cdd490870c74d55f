"""Psychometric functions over a physical sweep, for people, VLMs and self-supervised models.

Three kinds of observer are fitted on one axis of a physical parameter (restitution 0.1-1.0,
damping 0.0-5.0):

* people: binary judgements; P(correct) per level (``guess=0.5``: correct on forward and
  reversed clips, so chance is one half) or P("forward") (``guess=0``), per participant and
  pooled over participants (:func:`psychometric_table`);
* VLMs: P(correct) per clip from P(forward) from logits, the two label orders averaged
  (:func:`vlm_clip_correct`), fitted as fractional responses per model and setting;
* self-supervised models: per-clip TRA, which is not monotonic in the parameter (the TRA paper
  finds a peak at restitution 0.5 and damping 2.0); :func:`tra_peak_table` fits a Gaussian bump.

Why not psignifit 4 (``psignifit`` 4.3 on PyPI, tried here): one fit with its default free
lapse, guess and overdispersion took 8.5 s on this 2-core machine (0.15 s with them fixed), so
a cluster bootstrap over participants and a coverage check of 200 simulated data sets were
out of reach; its intervals are Bayesian credible intervals that treat trials as independent,
which is wrong for a pooled fit where trials cluster in participants; it takes counts, not
the VLMs' per-clip probabilities; and it pulls in matplotlib. The fit here is the binomial
maximum-likelihood fit (Fisher scoring, vectorised over bootstrap resamples: 2,000 refits take
well under a second); with no lapse it equals statsmodels' binomial GLM with a probit or logit
link, which the tests check. psignifit's conventions are kept: ``threshold`` is where the
sigmoid is half way, ``width`` the distance between its 5% and 95% points, and the smallest
width allowed defaults to the smallest spacing of the levels.

Confidence intervals for one observer (a participant, a VLM) are percentile bootstrap
intervals of ``n_boot`` resamples (2,000 by default) of trials or clips within each level.
A resample whose best fit lies on a bound (width at its minimum or maximum, threshold more
than one sweep span outside the sweep) keeps that bound, which widens the interval rather
than narrowing it; ``boot_at_bound`` counts them. Measured coverage of nominal 95% intervals
(200 simulated observers, 10 levels x 30 trials, 200 resamples): threshold 0.925-0.945,
width 0.895 (the ML width is biased low). Where the fit of the data itself lies on a bound
(responses switch from all wrong to all right between two adjacent levels), ``at_bound`` is
True, the threshold is the best point on that bound and the intervals are NaN: no interval
is drawn where the likelihood gives none.

The pooled fit's intervals are jackknife t intervals over participants (leave one out, t
with n - 1 degrees of freedom; the width's on the log scale), not a participant bootstrap:
with few participants the percentile bootstrap's spread is sqrt((n - 1) / n) of the real
one and its tails are normal where t tails are due. Coverage of nominal 95% intervals,
threshold / width, for n identical simulated participants (24 trials a level; 1,000
simulated studies per cell, so +-1.4%; percentile bootstrap with 1,000 resamples; about 5
minutes for the table on this 2-core machine, the refits vectorised over studies;
``tests/analysis/test_psychometric.py`` reruns n = 6):

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

Normalisation for a shared axis (:func:`normalised_curves`, :data:`NORMALISATIONS`), one
fixed rule per kind of observer, never a per-observer rescaling that would stretch a
near-chance curve to [0, 1]: psychometric curves as above-chance accuracy
(P - guess) / (1 - guess), 2 P(correct) - 1 for two-choice accuracy; TRA curves are each
model's level means (the data, not the fitted bump, whose sign flips between bump and dip on
lopsided curves), divided by the largest |level mean| on the sweep of any model whose level
means are distinguishable from 0 by a one-way F test across clips (:func:`tra_level_test`),
and flat at 0, noted "not distinguishable from 0", otherwise.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from analysis import columns as C

WIDTH_ALPHA = 0.05  # width = distance between the sigmoid's 5% and 95% points (psignifit's)
SIGMOIDS = {  # name -> (cdf, pdf, quantile)
    "norm": (special.ndtr, stats.norm.pdf, special.ndtri),
    "logistic": (special.expit, lambda e: special.expit(e) * special.expit(-e), special.logit),
}
INTERVALS = {  # how fit_psychometric's intervals are made, per resampling unit
    "rows": "percentile bootstrap over trials (or clips) within each level",
    "cluster": "jackknife t interval over participants (leave one out, t with n - 1 df)",
}
NORMALISATIONS = {  # the rule per observer kind, stated in the figure caption and the README
    "psychometric": "above-chance accuracy (P - chance) / (1 - chance), i.e. 2 P(correct) - 1 "
                    "at chance 0.5: 0 = chance, 1 = always right, not rescaled per observer",
    "tra": "TRA level means / the largest |level mean| on the sweep of any model whose level "
           "means are distinguishable from 0 (one-way F test that all are 0, p < 0.05); flat "
           "at 0, noted \"not distinguishable from 0\", otherwise; not comparable with the "
           "accuracy scale",
}

# Published, not measured: Vesesook & Yang, Temporal Reversal Asymmetry, V-JEPA 2 (ViT-L, EMA
# target encoder) at context 12 (Table 9); random initialisation: Appendix F, Table 5.
PUBLISHED_TRA_PEAKS = (
    {"model": "V-JEPA 2", "scenario": "bouncing_ball", "parameter": "restitution",
     "peak_location": 0.5, "relation": "equals", "peak_tra_pct": 0.27, "context_frames": 12,
     "reference": "TRA paper, Table 9"},
    {"model": "V-JEPA 2", "scenario": "pendulum", "parameter": "damping",
     "peak_location": 2.0, "relation": "equals", "peak_tra_pct": 0.68, "context_frames": 12,
     "reference": "TRA paper, Table 9"},
    {"model": "V-JEPA 2 (random init)", "scenario": "all", "parameter": "all",
     "peak_location": np.nan, "relation": "below", "peak_tra_pct": 0.01, "context_frames": np.nan,
     "reference": "TRA paper, Appendix F, Table 5"},
)


def published_tra_peaks() -> pd.DataFrame:
    """The TRA paper's peaks as a table with ``source`` = "published" (not measured here)."""
    return pd.DataFrame(PUBLISHED_TRA_PEAKS).assign(source="published")


def _levels(data: pd.DataFrame, level: str, dv: str) -> pd.DataFrame:
    missing = [c for c in (level, dv) if c not in data.columns]
    if missing:
        raise ValueError(f"data lacks column(s): {', '.join(missing)}")
    values = data[[level, dv]].apply(pd.to_numeric, errors="coerce").astype(float)
    if values.isna().any().any() or not np.isfinite(values.to_numpy()).all():
        raise ValueError(f"{level!r} and {dv!r} must be finite numbers (NaN found); drop "
                         "unanswered trials first")
    if ((values[dv] < 0) | (values[dv] > 1)).any():
        raise ValueError(f"{dv!r} must lie in [0, 1]")
    if values[level].nunique() < 3:
        raise ValueError(f"a psychometric fit needs at least 3 levels of {level!r}; "
                         f"got {values[level].nunique()}")
    if values[dv].nunique() < 2:
        raise ValueError(f"{dv!r} does not vary (all {values[dv].iloc[0]:g}): no threshold "
                         "can be estimated from data at ceiling or floor")
    return values


def _bounds(x: np.ndarray, width_min):
    span = x.max() - x.min()
    width_min = np.diff(np.unique(x)).min() if width_min is None else width_min
    return span, width_min, 100 * span  # widest: flat over a hundred sweeps


def ends_at_limit(fit: dict, limits: dict) -> str:
    """The interval ends of ``fit`` (``name_lo``, ``name_hi``) that sit on one of ``limits``
    (name -> (lower, upper)), as "name_lo; name_hi"; "" where none does."""
    ends = []
    for name, bounds in limits.items():
        tol = 1e-6 * max(abs(bounds[1] - bounds[0]), 1e-12)
        for end in ("lo", "hi"):
            value = fit.get(f"{name}_{end}", np.nan)
            if np.isfinite(value) and min(abs(value - b) for b in bounds) <= tol:
                ends.append(f"{name}_{end}")
    return "; ".join(ends)


def fit_status(fit: dict) -> str:
    """"at bound" where a fitted parameter or an interval end sits on a fitting limit, else
    "ok"."""
    return "at bound" if fit.get("at_bound") or fit.get("ends_at_limit") else "ok"


def _start(x, k, n, cdfs, guess, lapse, sign):
    p = (k.sum(0) + 0.5) / (n.sum(0) + 1)
    z = cdfs[2](np.clip((p - guess) / (1 - guess - lapse), 0.02, 0.98))
    w = n.sum(0)
    b1 = max(abs(np.cov(x, z, aweights=w + 1e-9)[0, 1] / np.cov(x, aweights=w + 1e-9)), 0.5)
    b0 = np.average(z, weights=w + 1e-9) - sign * b1 * np.average(x, weights=w + 1e-9)
    return np.full(k.shape[0], b0), np.full(k.shape[0], sign * b1)


def _scores(b0, b1, x, k, n, cdfs, guess, lapse):
    eta = b0[:, None] + b1[:, None] * x
    p = np.clip(guess + (1 - guess - lapse) * cdfs[0](eta), 1e-12, 1 - 1e-12)
    d = (1 - guess - lapse) * cdfs[1](eta)
    u, w = (k - n * p) * d / (p * (1 - p)), n * d * d / (p * (1 - p))
    loglik = (special.xlogy(k, p) + special.xlogy(n - k, 1 - p)).sum(1)
    return (u.sum(1), (u * x).sum(1)), (w.sum(1), (w * x).sum(1), (w * x * x).sum(1)), loglik


def _step(b0, b1, x, k, n, cdfs, guess, lapse, b1_lim, m_lim, sign):
    """One projected Fisher-scoring step; along an active bound, a 1-D step on it."""
    (g0, g1), (i00, i01, i11), _ = _scores(b0, b1, x, k, n, cdfs, guess, lapse)
    det = i00 * i11 - i01 ** 2 + 1e-12
    s0, s1 = (i11 * g0 - i01 * g1) / det, (i00 * g1 - i01 * g0) / det
    on_b1 = (np.abs(b1) >= b1_lim[1] - 1e-12) & (sign * s1 > 0) | \
            (np.abs(b1) <= b1_lim[0] + 1e-12) & (sign * s1 < 0)
    s0, s1 = np.where(on_b1, g0 / (i00 + 1e-12), s0), np.where(on_b1, 0, s1)
    m, m_try = -b0 / b1, -(b0 + s0) / np.where(b1 + s1 == 0, 1e-300, b1 + s1)
    on_m = ((m <= m_lim[0] + 1e-12) & (m_try < m) | (m >= m_lim[1] - 1e-12) & (m_try > m)) & ~on_b1
    s1 = np.where(on_m, (g1 - m * g0) / (m * m * i00 - 2 * m * i01 + i11 + 1e-12), s1)
    s0 = np.where(on_m, -m * s1, s0)
    scale = np.minimum(1, b1_lim[1] / 4 / (np.abs(s0) + np.abs(s1) + 1e-300))  # damped
    new1 = sign * np.clip(sign * (b1 + scale * s1), *b1_lim)
    return -new1 * np.clip(-(b0 + scale * s0) / new1, *m_lim), new1


def _fisher(x, k, n, cdfs, guess, lapse, b1_lim, m_lim, sign, iters=300):
    """ML (b0, b1) per row of k, n on standardised x, with b1 in sign * b1_lim and the
    threshold -b0/b1 in m_lim; rows stop moving once converged."""
    b0, b1 = _start(x, k, n, cdfs, guess, lapse, sign)
    # a start outside the limits is never moved onto them by a step that is not taken
    b1 = sign * np.clip(sign * b1, *b1_lim)
    b0 = -b1 * np.clip(-b0 / b1, *m_lim)
    active = np.arange(len(b0))
    for _ in range(iters):
        a0, a1, ka, na = b0[active], b1[active], k[active], n[active]
        new0, new1 = _step(a0, a1, x, ka, na, cdfs, guess, lapse, b1_lim, m_lim, sign)
        old_ll = _scores(a0, a1, x, ka, na, cdfs, guess, lapse)[2]
        for _ in range(12):  # halve steps that lower the likelihood (the set is convex)
            worse = _scores(new0, new1, x, ka, na, cdfs, guess, lapse)[2] < old_ll - 1e-12
            if not worse.any():
                break
            new0, new1 = np.where(worse, (a0 + new0) / 2, new0), np.where(worse, (a1 + new1) / 2, new1)
        gain = _scores(new0, new1, x, ka, na, cdfs, guess, lapse)[2] - old_ll
        moving = (np.abs(new0 - a0) + np.abs(new1 - a1) > 1e-10) & (gain > 1e-11)
        b0[active], b1[active] = new0, new1
        active = active[moving]
        if not active.size:
            break
    at_bound = (np.abs(b1) >= b1_lim[1] - 1e-9) | (np.abs(b1) <= b1_lim[0] + 1e-9) | \
               (np.abs(-b0 / b1 - np.mean(m_lim)) >= np.diff(m_lim)[0] / 2 - 1e-9)
    return b0, b1, _scores(b0, b1, x, k, n, cdfs, guess, lapse)[2], at_bound


def fit_counts(x, k, n, sigmoid="norm", guess=0.0, lapse=0.0, width_min=None):
    """ML psychometric fits of rows of counts ``k`` of ``n`` (fractional k allowed) at levels
    ``x``: P(x) = guess + (1 - guess - lapse) F((x - threshold) / s).

    Returns a dict of arrays, one value per row: ``threshold``, ``width`` (5%-95% span of F,
    in units of x), ``direction`` (+1 rising, -1 falling), ``loglik``, ``at_bound``.
    """
    x, k, n = np.asarray(x, float), np.atleast_2d(k).astype(float), np.atleast_2d(n).astype(float)
    cdfs = SIGMOIDS[sigmoid]
    span, wmin, wmax = _bounds(x, width_min)
    centre, half = (x.max() + x.min()) / 2, span / 2
    spread = cdfs[2](1 - WIDTH_ALPHA) - cdfs[2](WIDTH_ALPHA)
    b1_lim = (spread * half / wmax, spread * half / wmin)
    z = (x - centre) / half
    fits = [_fisher(z, k, n, cdfs, guess, lapse, b1_lim, (-3.0, 3.0), s) for s in (1, -1)]
    best = np.where(fits[0][2] >= fits[1][2], 0, 1)
    pick = lambda i: np.where(best == 0, fits[0][i], fits[1][i])  # noqa: E731
    b0, b1 = pick(0), pick(1)
    return {"threshold": centre - b0 / b1 * half, "width": spread * half / np.abs(b1),
            "direction": np.sign(b1), "loglik": pick(2), "at_bound": pick(3).astype(bool)}


def _resample_levels(x, level_of_row, y, n_boot, rng):
    """(k, n) for n_boot resamples of rows within each level (n fixed per level)."""
    k = np.empty((n_boot, len(x)))
    for j, lv in enumerate(x):
        ys = y[level_of_row == lv]
        k[:, j] = ys[rng.integers(0, len(ys), (n_boot, len(ys)))].sum(1)
    return k, np.broadcast_to([(level_of_row == lv).sum() for lv in x], k.shape)


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


def _cluster_intervals(x, k, n, est, sums, counts, options, ci):
    """Leave-one-cluster-out refits and jackknife t intervals (width on the log scale, so
    its interval stays positive and follows its skew)."""
    loo = fit_counts(x, k - sums, n - counts, **options)
    threshold = jackknife_interval(est["threshold"][0], loo["threshold"], ci)
    log_width = jackknife_interval(np.log(est["width"][0]), np.log(loo["width"]), ci)
    return {"threshold": threshold, "width": tuple(np.exp(log_width))}, loo


def fit_psychometric(data: pd.DataFrame, level: str, dv: str = "correct", cluster=None, *,
                     rng: np.random.Generator, sigmoid: str = "norm", guess: float = 0.0,
                     lapse: float = 0.0, width_min=None, n_boot: int = 2000,
                     ci: float = 0.95) -> dict:
    """Fit one observer's psychometric function, with intervals for threshold and width.

    Parameters
    ----------
    data : DataFrame, one row per trial (people) or per clip (models).
    level, dv : the sweep column and the response in [0, 1] (0/1 trials, or P(correct)).
    cluster : column of clusters (participants) for a pooled fit, whose intervals are
        jackknife t intervals over clusters; None: percentile bootstrap intervals of
        ``n_boot`` resamples of rows within each level.
    guess, lapse : fixed lower and upper asymptote offsets (0.5 for P(correct) on clips
        shown both ways; 0 for P("forward")).

    Returns
    -------
    dict
        ``n_levels, n_rows, n_clusters, threshold, threshold_lo, threshold_hi, width,
        width_lo, width_hi, direction, at_bound, ends_at_limit, boot_at_bound, level_min, level_max, curve_min,
        curve_max, sigmoid, guess, lapse, n_boot, interval, ci``. ``interval`` names the
        method; ``ends_at_limit`` names the interval ends that sit on a fitting limit
        (threshold one sweep span outside the sweep, smallest or largest width), e.g.
        "threshold_hi; width_lo", "" where none; ``boot_at_bound`` counts refits (resamples or leave-one-out fits) on a bound;
        ``n_boot`` is 0 for a pooled fit (no bootstrap).

    Notes
    -----
    P(x) = guess + (1 - guess - lapse) F((x - threshold) / s), F the normal (``"norm"``) or
    logistic cdf; width = s (F^-1(0.95) - F^-1(0.05)). Raises ValueError for fewer than 3
    levels, NaN, values outside [0, 1] or a response that never varies (all correct).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> x = np.repeat(np.linspace(0.1, 1.0, 10), 40)
    >>> y = rng.random(x.size) < stats.norm.cdf((x - 0.5) / 0.12)
    >>> fit = fit_psychometric(pd.DataFrame({"e": x, "y": y}), "e", "y", rng=rng, n_boot=200)
    >>> bool(fit["threshold_lo"] < 0.5 < fit["threshold_hi"])
    True
    """
    if cluster is not None and cluster not in data.columns:
        raise ValueError(f"data lacks cluster column {cluster!r}")
    values = _levels(data, level, dv)
    lv, y = values[level].to_numpy(float), values[dv].to_numpy(float)
    x = np.unique(lv)
    n = np.array([(lv == v).sum() for v in x], float)
    k = np.array([y[lv == v].sum() for v in x])
    options = dict(sigmoid=sigmoid, guess=guess, lapse=lapse, width_min=width_min)
    est = fit_counts(x, k, n, **options)
    if cluster is None:
        boot = fit_counts(x, *_resample_levels(x, lv, y, n_boot, rng), **options)
        q = [(1 - ci) / 2 * 100, (1 + ci) / 2 * 100]
        intervals = {name: tuple(np.percentile(boot[name], q)) for name in ("threshold", "width")}
    else:
        sums, counts = cluster_counts(x, lv, y, data[cluster].to_numpy())
        intervals, boot = _cluster_intervals(x, k, n, est, sums, counts, options, ci)
    ends = _psychometric_values(est["threshold"][0], est["width"][0], est["direction"][0],
                                np.array([x.min(), x.max()]), sigmoid, guess, lapse)
    out = {"n_levels": len(x), "n_rows": len(y),
           "n_clusters": data[cluster].nunique() if cluster else np.nan}
    for name in ("threshold", "width"):
        out[name] = float(est[name][0])
        lo_hi = intervals[name] if not est["at_bound"][0] else (np.nan, np.nan)
        out[f"{name}_lo"], out[f"{name}_hi"] = (float(v) for v in lo_hi)
    span, wmin, wmax = _bounds(x, width_min)
    limits = {"threshold": (x.min() - span, x.max() + span), "width": (wmin, wmax)}
    return out | {"direction": int(est["direction"][0]), "at_bound": bool(est["at_bound"][0]),
                  "ends_at_limit": ends_at_limit(out, limits),
                  "boot_at_bound": int(boot["at_bound"].sum()),
                  "level_min": x.min(), "level_max": x.max(), "curve_min": ends.min(),
                  "curve_max": ends.max(), "sigmoid": sigmoid, "guess": guess, "lapse": lapse,
                  "n_boot": n_boot if cluster is None else 0,
                  "interval": INTERVALS["cluster" if cluster else "rows"], "ci": ci}


def pooled_band(data: pd.DataFrame, level: str, dv: str, cluster: str, fit, grid,
                ci: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise jackknife t band over clusters of a pooled fit's curve on ``grid``.

    The interval is taken on the sigmoid's argument ``direction (x - threshold) / s`` (where
    the leave-one-out curves are linear in x) and mapped through the curve, so the band stays
    within [guess, 1 - lapse]. ``fit`` is the pooled row of :func:`fit_psychometric`.
    """
    lv, y = data[level].to_numpy(float), data[dv].to_numpy(float)
    x = np.unique(lv)
    sums, counts = cluster_counts(x, lv, y, data[cluster].to_numpy())
    options = {o: fit[o] for o in ("sigmoid", "guess", "lapse")}
    loo = fit_counts(x, sums.sum(0) - sums, counts.sum(0) - counts, **options)
    _, _, quantile = SIGMOIDS[fit["sigmoid"]]
    spread = quantile(1 - WIDTH_ALPHA) - quantile(WIDTH_ALPHA)
    eta = lambda t, w, d: d * (np.asarray(grid) - t) * spread / w  # noqa: E731
    point = eta(fit["threshold"], fit["width"], fit["direction"])
    loo_eta = eta(loo["threshold"][:, None], loo["width"][:, None], loo["direction"][:, None])
    lo, hi = jackknife_interval(point, loo_eta, ci)
    curve = lambda e: fit["guess"] + (1 - fit["guess"] - fit["lapse"]) * SIGMOIDS[  # noqa: E731
        fit["sigmoid"]][0](e)
    return curve(lo), curve(hi)


def _psychometric_values(threshold, width, direction, grid, sigmoid, guess, lapse):
    cdf, _, quantile = SIGMOIDS[sigmoid]
    s = width / (quantile(1 - WIDTH_ALPHA) - quantile(WIDTH_ALPHA))
    return guess + (1 - guess - lapse) * cdf(direction * (grid - threshold) / s)


def psychometric_table(data: pd.DataFrame, level: str, dv: str = "correct", by=("observer",),
                       subject: str | None = None, *, rng: np.random.Generator,
                       **options) -> pd.DataFrame:
    """:func:`fit_psychometric` per group of ``by``; with ``subject``, per subject and one
    pooled row per group (``subject`` = "pooled", participants resampled as clusters).

    Returns the ``by`` columns, ``subject`` (where given), ``status`` ("ok"; "at bound" where
    a parameter or an interval end sits on a fitting limit; or why the row could not be
    fitted, its numbers then NaN) and the columns of :func:`fit_psychometric`.
    """
    by = [c for c in ([by] if isinstance(by, str) else by) if c in data.columns]
    rows = []
    for key, group in (data.groupby(by, sort=True) if by else [((), data)]):
        key = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        parts: list[tuple[Any, pd.DataFrame, str | None]] = (
            [(s, g, None) for s, g in group.groupby(subject)] if subject else [])
        parts.append(("pooled", group, subject) if subject else (None, group, None))
        for name, part, cluster in parts:
            row = key | ({subject: name} if subject else {})
            try:
                fit = fit_psychometric(part, level, dv, cluster, rng=rng, **options)
                row |= {"status": fit_status(fit)} | fit
            except ValueError as err:
                row["status"] = str(err)
            rows.append(row)
    return pd.DataFrame(rows)


def vlm_clip_correct(data: pd.DataFrame, level: str = "parameter_value", by=("observer",),
                     stimulus: str = "stimulus_id") -> pd.DataFrame:
    """P(correct) per clip from a VLM's P(forward), averaged over the two label orders.

    Returns ``by, stimulus, level, direction, p_forward, p_correct, n_label_orders``.
    ``p_correct`` is P(forward) on forward clips and 1 - P(forward) on reversed ones. Rows
    without P(forward) (no logits) are dropped; ``n_label_orders`` says whether a clip kept
    both orders (2) or one (1), so an unbalanced clip is visible, not silently averaged.
    """
    from analysis import loading  # the trial-table reader; only needed for ``extra``

    rows = data.copy()
    for name, key in (("p_forward", C.EXTRA_P_FORWARD), ("label_order", C.EXTRA_LABEL_ORDER)):
        if name not in rows.columns:
            rows[name] = loading.extra_column(rows, key)
    rows["p_forward"] = pd.to_numeric(rows["p_forward"], errors="coerce")
    rows = rows[rows["p_forward"].notna()]
    by = [c for c in ([by] if isinstance(by, str) else by) if c in rows.columns]
    out = (rows.groupby(by + [stimulus, level, "direction"], sort=True)
           .agg(p_forward=("p_forward", "mean"), n_label_orders=("label_order", "nunique"))
           .reset_index())
    forward = out["direction"] == C.FORWARD
    out["p_correct"] = np.where(forward, out["p_forward"], 1 - out["p_forward"])
    return out


def _bump_grid(x, n_mu=201, n_sigma=30):
    span = x.max() - x.min()
    mu, sigma = np.meshgrid(np.linspace(x.min(), x.max(), n_mu),
                            np.geomspace(np.diff(x).min() / 2, span / 2, n_sigma))
    return mu.ravel(), sigma.ravel()


def _fit_bumps(x, means, n, grid):
    """Least-squares Gaussian bump b + h exp(-(x - mu)^2 / 2 sigma^2) for each row of
    ``means`` (level means, weights n): exact in (b, h) for each (mu, sigma) of the grid,
    best grid point kept, i.e. clip-level least squares profiled over the grid."""
    mu, sigma = grid
    g = np.exp(-0.5 * ((x[:, None] - mu) / sigma) ** 2)            # levels x grid
    sw, sg, sgg = n.sum(), n @ g, n @ g ** 2
    det = sw * sgg - sg ** 2
    out = []
    for chunk in np.array_split(means, max(1, len(means) // 200)):
        sy, sgy = chunk @ n, (chunk * n) @ g
        h = (sw * sgy - sg * sy[:, None]) / det
        b = (sy[:, None] - h * sg) / sw
        best = np.argmax(b * sy[:, None] + h * sgy, axis=1)         # = least residual SS
        rows = np.arange(len(chunk))
        out.append(np.c_[mu[best], sigma[best], b[rows, best], h[rows, best]])
    return np.vstack(out)


def fit_tra_peak(values: np.ndarray, levels: np.ndarray, *, rng: np.random.Generator,
                 n_boot: int = 2000, ci: float = 0.95) -> dict:
    """Gaussian-bump fit of per-clip TRA over a sweep, with bootstrap intervals.

    Returns ``n_levels, n_clips, peak_location, peak_location_lo, peak_location_hi,
    peak_height_pct`` (h, the bump above its baseline; negative for a dip) with ``_lo/_hi``,
    ``peak_tra_pct`` (b + h, the curve at its peak, the paper's "peak TRA") with ``_lo/_hi``,
    the columns of :func:`tra_level_test`, ``baseline_pct, sigma, at_bound`` (mu at an end
    of the sweep or sigma at a grid limit), ``ends_at_limit`` (``peak_location_lo`` /
    ``_hi`` on an end of the sweep), ``level_min, level_max, n_boot, ci``.

    Notes
    -----
    TRA(x) = b + h exp(-(x - mu)^2 / (2 sigma^2)), mu within the sweep, sigma from half the
    smallest level spacing to half the span, by least squares over clips. Intervals are
    percentile intervals of ``n_boot`` resamples of clips within each level (no closed form
    exists for mu). A flat curve gives h near 0 with either sign, so its interval holds 0.
    Needs at least 4 levels (4 parameters); raises ValueError otherwise or for NaN.
    """
    values, levels = np.asarray(values, float), np.asarray(levels, float)
    if not (np.isfinite(values).all() and np.isfinite(levels).all()):
        raise ValueError("TRA values and levels must be finite (NaN found)")
    x = np.unique(levels)
    if len(x) < 4:
        raise ValueError(f"a TRA peak fit needs at least 4 levels; got {len(x)}")
    n = np.array([(levels == v).sum() for v in x], float)
    means = np.array([values[levels == v].mean() for v in x])
    boot = np.empty((n_boot, len(x)))
    for j, v in enumerate(x):
        vs = values[levels == v]
        boot[:, j] = vs[rng.integers(0, len(vs), (n_boot, len(vs)))].mean(1)
    grid = _bump_grid(x)
    est, reps = _fit_bumps(x, means[None], n, grid)[0], _fit_bumps(x, boot, n, grid)
    q = [(1 - ci) / 2 * 100, (1 + ci) / 2 * 100]
    out: dict[str, float] = {"n_levels": len(x), "n_clips": len(values)}
    stats_ = {"peak_location": (est[0], reps[:, 0]), "peak_height_pct": (100 * est[3], 100 * reps[:, 3]),
              "peak_tra_pct": (100 * (est[2] + est[3]), 100 * (reps[:, 2] + reps[:, 3]))}
    for name, (point, draws) in stats_.items():
        out[name] = float(point)
        out[f"{name}_lo"], out[f"{name}_hi"] = np.percentile(draws, q)
    mu_lim, sigma_lim = (x.min(), x.max()), (grid[1].min(), grid[1].max())
    at_bound = any(min(abs(v - b) for b in lim) <= 1e-9 for v, lim in
                   ((est[0], mu_lim), (est[1], sigma_lim)))
    return out | tra_level_test(values, levels) | {
        "baseline_pct": 100 * est[2], "sigma": est[1], "at_bound": at_bound,
        "ends_at_limit": ends_at_limit(out, {"peak_location": mu_lim}),
        "level_min": x.min(), "level_max": x.max(), "n_boot": n_boot, "ci": ci}


def tra_level_test(values: np.ndarray, levels: np.ndarray, alpha: float = 0.05) -> dict:
    """The TRA level means and the one-way F test that they are all 0.

    Returns ``level_values`` and ``level_means_pct`` (tuples, one entry per level, TRA in
    percent), ``level_f``, ``level_p`` and ``distinguishable`` (``level_p < alpha``).

    Notes
    -----
    F = sum_j n_j m_j^2 / (L s^2) on (L, N - L) degrees of freedom: m_j the mean over the n_j
    clips of level j, s^2 the pooled within-level variance, L levels, N clips. It tests the
    data, not a fitted bump, so a constant TRA (no peak at all) is distinguishable from 0.
    With one clip per level there is no within-level variance: p is NaN, not distinguishable.
    """
    x = np.unique(levels)
    groups = [values[levels == v] for v in x]
    n = np.array([len(g) for g in groups], float)
    means = np.array([g.mean() for g in groups])
    dof = n.sum() - len(x)
    p_value = np.nan
    f_value = np.nan
    if dof > 0:
        s2 = sum(((g - g.mean()) ** 2).sum() for g in groups) / dof
        with np.errstate(divide="ignore", invalid="ignore"):
            f_value = float((n * means ** 2).sum() / (len(x) * s2))
        p_value = float(stats.f.sf(f_value, len(x), dof)) if not np.isnan(f_value) else 1.0
    return {"level_values": tuple(float(v) for v in x),
            "level_means_pct": tuple(float(v) for v in 100 * means), "level_f": f_value,
            "level_p": p_value, "distinguishable": bool(p_value < alpha)}


def tra_peak_table(data: pd.DataFrame, by=("model", "context_frames", "scenario", "parameter"),
                   level: str = "parameter_value", value: str = "tra", *,
                   rng: np.random.Generator, **options) -> pd.DataFrame:
    """:func:`fit_tra_peak` per group of ``by`` (rows of :data:`analysis.columns.TRA_COLUMNS`
    with a ``parameter``); returns the ``by`` columns, ``status`` (as in
    :func:`psychometric_table`) and its columns."""
    if value not in data.columns and {"loss_forward", "loss_reversed"} <= set(data.columns):
        from analysis.tra import tra_values
        data = data.assign(**{value: tra_values(data["loss_forward"], data["loss_reversed"])})
    data = data[data["parameter"].notna()] if "parameter" in data.columns else data
    by = [c for c in by if c in data.columns]
    rows = []
    for key, group in (data.groupby(by, sort=True) if by else [((), data)]):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        try:
            fit = fit_tra_peak(group[value].to_numpy(float), group[level].to_numpy(float),
                               rng=rng, **options)
            row |= {"status": fit_status(fit)} | fit
        except ValueError as err:
            row["status"] = str(err)
        rows.append(row)
    return pd.DataFrame(rows)


def _psychometric_curve(row: pd.Series, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    curve = _psychometric_values(row["threshold"], row["width"], row["direction"], grid,
                                 row["sigmoid"], row["guess"], row["lapse"])
    return curve, above_chance(curve, row["guess"])


def above_chance(p, guess: float):
    """(P - guess) / (1 - guess): 0 at chance, 1 always right, below 0 worse than chance."""
    return (np.asarray(p, float) - guess) / (1 - guess)


NOT_DISTINGUISHABLE = "not distinguishable from 0"


def normalised_curves(fits: pd.DataFrame, keys=("observer",), n_points: int = 101,
                      scale_by=("scenario", "parameter")) -> pd.DataFrame:
    """Each observer's curve across its sweep, normalised for a shared axis.

    ``fits`` is a :func:`psychometric_table` or :func:`tra_peak_table` result (rows with
    status "ok" or "at bound" are drawn). Returns ``keys`` present, ``level``, ``value`` (P,
    or TRA in percent), ``value_normalised``, ``normalisation`` (the rule, from
    :data:`NORMALISATIONS`) and ``note`` (:data:`NOT_DISTINGUISHABLE` for a TRA curve drawn
    flat, else "").

    Notes
    -----
    Psychometric curves: the fitted curve on ``n_points`` levels through :func:`above_chance`,
    the same fixed map for every observer, so an observer near chance stays near 0 rather
    than being stretched to [0, 1]. TRA curves: the level means themselves (the data, not the
    fitted bump; the constant part is kept), divided by one scale per ``scale_by`` group: the
    largest |level mean| of any row of the group whose level means are distinguishable from 0
    (:func:`tra_level_test`), so models keep their sizes relative to each other; a row not
    distinguishable from 0 is drawn flat at 0 and noted so.
    """
    keys = [c for c in keys if c in fits.columns]
    group = [c for c in scale_by if c in fits.columns]
    drawn = fits[fits["status"].isin(["ok", "at bound"])]
    largest: dict[tuple, float] = {}
    for _, row in drawn.iterrows():
        if _is_tra(row) and row["distinguishable"]:
            where = tuple(row[c] for c in group)
            largest[where] = max(largest.get(where, 0.0),
                                 float(np.abs(row["level_means_pct"]).max()))
    out = []
    for _, row in drawn.iterrows():
        if not _is_tra(row):
            grid = np.linspace(row["level_min"], row["level_max"], n_points)
            curve, norm = _psychometric_curve(row, grid)
            kind, note = "psychometric", ""
        else:
            grid, curve = np.asarray(row["level_values"]), np.asarray(row["level_means_pct"])
            scale = largest.get(tuple(row[c] for c in group), 0.0)
            shown = bool(row["distinguishable"]) and scale > 0
            norm = curve / scale if shown else np.zeros_like(curve)
            kind, note = "tra", "" if shown else NOT_DISTINGUISHABLE
        out.append(pd.DataFrame({**{k: row[k] for k in keys}, "level": grid, "value": curve,
                                 "value_normalised": norm, "normalisation": NORMALISATIONS[kind],
                                 "note": note}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(
        columns=[*keys, "level", "value", "value_normalised", "normalisation", "note"])


def _is_tra(row: pd.Series) -> bool:
    return "level_means_pct" in row and isinstance(row["level_means_pct"], tuple)
