"""Psychometric functions over a physical sweep (restitution 0.1-1.0, damping 0.0-5.0), for
people and VLMs; self-supervised models' TRA curves are in ``analysis.tra_peak``.

* people: binary answers, P(correct) per level (``guess=0.5``: each clip is shown both ways,
  so chance is one half) or P("forward") (``guess=0``), per participant and pooled over
  participants (:func:`fit_psychometric`, :func:`psychometric_table`), by binomial maximum
  likelihood with the lapse rate estimated on a grid;
* VLMs: P(correct) per clip from P(forward) from logits, the two label orders averaged
  (:func:`vlm_clip_correct`), fitted by least squares with both asymptotes free
  (:func:`fit_probability_curve`): a model may sit below chance, level off at 0.7 or fall.

Why not psignifit 4 (``psignifit`` 4.3 on PyPI, tried here): one fit with its default free
lapse, guess and overdispersion took 8.5 s on this 2-core machine (0.15 s with them fixed), so
a bootstrap over resamples and a coverage check of 200 simulated data sets were out of reach;
its intervals are Bayesian credible intervals that treat trials as independent, which is
wrong for a pooled fit where trials cluster in participants; it takes counts, not the VLMs'
per-clip probabilities; and it pulls in matplotlib. The binomial fit here is maximum
likelihood by Newton steps (Fisher scoring where the observed information is not positive
definite), vectorised over bootstrap resamples; with no lapse it equals statsmodels'
binomial GLM with a probit or logit link, which the tests check. psignifit's conventions
are kept: ``threshold`` is where the sigmoid is half way, ``width`` the distance between its
5% and 95% points, and the smallest width allowed defaults to the smallest spacing of the
levels. People's lapse rate is estimated in Wichmann & Hill's (2001) range, [0, 0.06]. A
fixed lapse of 0 drags the curve down to the lapsed answers: with 4% lapses the pooled
intervals of 6 participants covered the threshold in 0.68 and the width in 0.02 of
simulated studies; estimated, 0.95 and 0.96 (``tests/analysis/test_psychometric.py``).
A participant who lapses more than 6% of the time gets a biased threshold; "lapse" in
``ends_at_limit`` marks one where a likelihood-ratio test shows it, which at 24 trials a
level catches a fifth of those lapsing 20% (a shallower curve without lapses fits such data
as well) and marks 2% of those lapsing 5%.

Confidence intervals for one observer (a participant, a VLM) are percentile bootstrap
intervals of ``n_boot`` resamples (2,000 by default) within each level, of source clips
(``block``: a clip's forward and reversed copies together, since a label bias moves their
P(correct) in opposite directions; resampled apart, a simulated VLM's threshold interval was
3.1 times as wide and covered 1.00 where 0.95 is due, together 0.93), where every level has
at least :data:`MIN_BLOCKS` source clips, or else of single rows (the built-in set has one
clip a level). With 4 clips a level a VLM's threshold interval covered 0.87, and a label
bias that pushes P(forward) against 0 or 1 does not average out over the two copies, which
moves the curve itself (an outside review's simulations). A
resample whose best fit lies on a bound (width at its minimum or maximum, threshold more
than one sweep span outside the sweep) keeps that bound, which
widens the interval rather than narrowing it; ``boot_at_bound`` counts them. Measured
coverage of nominal 95% intervals (200 simulated observers, 10 levels x 30 trials, 200
resamples): threshold 0.925-0.945, width 0.895 (the ML width is biased low). Where the fit
of the data itself lies on a bound (responses switch from all wrong to all right between
two adjacent levels), ``at_bound`` is True, the threshold is the best point on that bound
and the intervals are NaN: no interval is drawn where the likelihood gives none.

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

from typing import Any, Callable

import numpy as np
import pandas as pd
from scipy import special, stats

from analysis import columns as C

WIDTH_ALPHA = 0.05  # width = distance between the sigmoid's 5% and 95% points (psignifit's)
MIN_BLOCKS = 5  # source clips every level needs before they are resampled as blocks
_norm_pdf = lambda e: np.exp(-0.5 * e * e) / np.sqrt(2 * np.pi)  # noqa: E731
SIGMOIDS = {  # name -> (cdf, pdf, quantile, derivative of the pdf)
    "norm": (special.ndtr, _norm_pdf, special.ndtri, lambda e: -e * _norm_pdf(e)),
    "logistic": (special.expit, lambda e: special.expit(e) * special.expit(-e), special.logit,
                 lambda e: special.expit(e) * special.expit(-e) * (1 - 2 * special.expit(e))),
}
INTERVALS = {  # how a fit's intervals are made, per resampling unit
    "rows": "percentile bootstrap over trials (or clips) within each level",
    "blocks": "percentile bootstrap over source clips (both copies together) within each level",
    "mixed": "percentile bootstrap within each level over source clips (both copies together) "
             "where a level has at least 5, else over trials (or clips)",
    "cluster": "jackknife t interval over participants (leave one out, t with n - 1 df)",
}
def _levels(data: pd.DataFrame, level: str, dv: str, min_levels: int = 3,
            must_vary: bool = True) -> pd.DataFrame:
    missing = [c for c in (level, dv) if c not in data.columns]
    if missing:
        raise ValueError(f"data lacks column(s): {', '.join(missing)}")
    values = data[[level, dv]].apply(pd.to_numeric, errors="coerce").astype(float)
    if not np.isfinite(values.to_numpy()).all():
        raise ValueError(f"{level!r} and {dv!r} must be finite numbers (NaN or infinity "
                         "found); drop unanswered trials first")
    if ((values[dv] < 0) | (values[dv] > 1)).any():
        raise ValueError(f"{dv!r} must lie in [0, 1]")
    if values[level].nunique() < min_levels:
        raise ValueError(f"this fit needs at least {min_levels} levels of {level!r}; "
                         f"got {values[level].nunique()}")
    if must_vary and values[dv].nunique() < 2:
        raise ValueError(f"{dv!r} does not vary (all {values[dv].iloc[0]:g}): no threshold "
                         "can be estimated from data at ceiling or floor")
    return values


def _blocks(data: pd.DataFrame, block: str | None):
    """The block label of each row, or None."""
    if block is None:
        return None
    if block not in data.columns:
        raise ValueError(f"data lacks block column {block!r}")
    return data[block].to_numpy()


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
    """"flat" for a curve without a threshold; "at bound" where the fit itself lies on a
    fitting limit (no interval); "at limit: <ends>" where an interval end, or the lapse rate,
    sits on one (``ends_at_limit``: the truth may lie beyond it); else "ok"."""
    if fit.get("flat"):
        return "flat"
    if fit.get("at_bound"):
        return "at bound"
    return f"at limit: {fit['ends_at_limit']}" if fit.get("ends_at_limit") else "ok"


def is_drawn(status: str) -> bool:
    """Whether a fit of that status has a curve to draw (a row that failed has none)."""
    return status in ("ok", "at bound", "flat") or status.startswith("at limit")


def _start(x, k, n, cdfs, guess, lapse, sign):
    p = (k.sum(0) + 0.5) / (n.sum(0) + 1)
    z = cdfs[2](np.clip((p - guess) / (1 - guess - lapse), 0.02, 0.98))
    w = n.sum(0)
    b1 = max(abs(np.cov(x, z, aweights=w + 1e-9)[0, 1] / np.cov(x, aweights=w + 1e-9)), 0.5)
    b0 = np.average(z, weights=w + 1e-9) - sign * b1 * np.average(x, weights=w + 1e-9)
    return np.full(k.shape[0], b0), np.full(k.shape[0], sign * b1)


def _scores(b0, b1, x, k, n, cdfs, guess, lapse):
    """Per row of (b0, b1): the score, the expected and the observed information (each as
    (i00, i01, i11)), and the log-likelihood."""
    eta = b0[:, None] + b1[:, None] * x
    p = np.clip(guess + (1 - guess - lapse) * cdfs[0](eta), 1e-12, 1 - 1e-12)
    d = (1 - guess - lapse) * cdfs[1](eta)
    v = p * (1 - p)
    u, w = (k - n * p) * d / v, n * d * d / v
    curvature = (1 - guess - lapse) * cdfs[3](eta) / v - d * d * (1 - 2 * p) / v ** 2
    w_obs = w - (k - n * p) * curvature
    expected, observed = ((a.sum(1), (a * x).sum(1), (a * x * x).sum(1)) for a in (w, w_obs))
    loglik = (special.xlogy(k, p) + special.xlogy(n - k, 1 - p)).sum(1)
    return (u.sum(1), (u * x).sum(1)), expected, observed, loglik


def _step(b0, b1, x, k, n, cdfs, guess, lapse, b1_lim, m_lim, sign, newton):
    """One projected step: Newton's where ``newton`` and the observed information is positive
    definite, else Fisher scoring's; along an active bound, a 1-D step on it."""
    (g0, g1), expected, observed, _ = _scores(b0, b1, x, k, n, cdfs, guess, lapse)
    definite = newton & (observed[0] > 0) & (observed[0] * observed[2] - observed[1] ** 2 > 0)
    i00, i01, i11 = (np.where(definite, o, e) for o, e in zip(observed, expected))
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
    s0, s1 = scale * s0, scale * s1
    # a step past a slope limit is shortened to end on it, keeping its direction (clipping
    # the slope alone can turn an ascent direction into a descent one)
    on_limit = sign * np.clip(sign * (b1 + s1), *b1_lim)
    shorten = np.clip((on_limit - b1) / np.where(s1 == 0, 1, s1), 0, 1)
    shorten = np.where(s1 == 0, 1, shorten)
    new1 = sign * np.clip(sign * (b1 + shorten * s1), *b1_lim)
    return -new1 * np.clip(-(b0 + shorten * s0) / new1, *m_lim), new1


def _fisher(x, k, n, cdfs, guess, lapse, b1_lim, m_lim, sign, start=None, iters=300):
    """ML (b0, b1) per row of k, n on standardised x, with b1 in sign * b1_lim and the
    threshold -b0/b1 in m_lim, from ``start`` (b0, b1) or a moment estimate; rows stop
    moving once converged.

    Each iteration tries a Newton step and, where that finds no gain, a Fisher-scoring one:
    with a guess or lapse rate Fisher scoring alone converges linearly (hundreds of steps for
    some resamples), Newton quadratically once near the optimum."""
    b0, b1 = _start(x, k, n, cdfs, guess, lapse, sign) if start is None else \
        (start[0].copy(), start[1].copy())
    # a start outside the limits is never moved onto them by a step that is not taken
    b1 = sign * np.clip(sign * b1, *b1_lim)
    b0 = -b1 * np.clip(-b0 / b1, *m_lim)
    loglik = lambda c0, c1, kk, nn: _scores(c0, c1, x, kk, nn, cdfs, guess, lapse)[3]  # noqa: E731
    active = np.arange(len(b0))
    for _ in range(iters):
        a0, a1, ka, na = b0[active], b1[active], k[active], n[active]
        old_ll = loglik(a0, a1, ka, na)
        best0, best1, best_gain = a0, a1, np.zeros(len(a0))
        for newton in (True, False):
            new0, new1 = _step(a0, a1, x, ka, na, cdfs, guess, lapse, b1_lim, m_lim, sign, newton)
            for _ in range(12):  # halve steps that lower the likelihood (the set is convex)
                worse = loglik(new0, new1, ka, na) < old_ll - 1e-12
                if not worse.any():
                    break
                new0 = np.where(worse, (a0 + new0) / 2, new0)
                new1 = np.where(worse, (a1 + new1) / 2, new1)
            gain = loglik(new0, new1, ka, na) - old_ll
            better = gain > best_gain
            best0, best1 = np.where(better, new0, best0), np.where(better, new1, best1)
            best_gain = np.maximum(gain, best_gain)
            if (best_gain > 1e-11).all():
                break
        moving = (np.abs(best0 - a0) + np.abs(best1 - a1) > 1e-10) & (best_gain > 1e-11)
        b0[active], b1[active] = best0, best1
        active = active[moving]
        if not active.size:
            break
    at_bound = (np.abs(b1) >= b1_lim[1] - 1e-9) | (np.abs(b1) <= b1_lim[0] + 1e-9) | \
               (np.abs(-b0 / b1 - np.mean(m_lim)) >= np.diff(m_lim)[0] / 2 - 1e-9)
    return b0, b1, loglik(b0, b1, k, n), at_bound


def candidates(lapse) -> np.ndarray:
    """A lapse rate as the values a fit profiles over: one fixed value, or a grid."""
    return np.atleast_1d(np.asarray(lapse, float))


def fit_counts(x, k, n, sigmoid="norm", guess=0.0, lapse=0.0, width_min=None):
    """ML psychometric fits of rows of counts ``k`` of ``n`` (fractional k allowed) at levels
    ``x``: P(x) = guess + (1 - guess - lapse) F((x - threshold) / s).

    ``lapse`` is a fixed rate or a grid of candidate rates (a sequence), over which each row's
    fit is profiled, keeping its most likely rate.

    Returns a dict of arrays, one value per row: ``threshold``, ``width`` (5%-95% span of F,
    in units of x), ``direction`` (+1 rising, -1 falling), ``lapse``, ``loglik``,
    ``at_bound``.
    """
    x, k, n = np.asarray(x, float), np.atleast_2d(k).astype(float), np.atleast_2d(n).astype(float)
    cdfs = SIGMOIDS[sigmoid]
    span, wmin, wmax = _bounds(x, width_min)
    centre, half = (x.max() + x.min()) / 2, span / 2
    spread = cdfs[2](1 - WIDTH_ALPHA) - cdfs[2](WIDTH_ALPHA)
    b1_lim = (spread * half / wmax, spread * half / wmin)
    z = (x - centre) / half
    best: dict[str, np.ndarray] = {}
    previous: dict[int, tuple] = {}  # per direction, the last rate's fit: a warm start
    for rate in candidates(lapse):
        if not 0 <= rate < 1 - guess:
            raise ValueError(f"a lapse rate must lie in [0, 1 - guess); got {rate:g}")
        for sign in (1, -1):
            b0, b1, loglik, at_bound = _fisher(z, k, n, cdfs, guess, rate, b1_lim, (-3.0, 3.0),
                                               sign, previous.get(sign))
            previous[sign] = (b0, b1)
            fit = {"b0": b0, "b1": b1, "loglik": loglik, "at_bound": at_bound,
                   "lapse": np.full(len(b0), rate)}
            # ties keep the earlier candidate: with a fixed rate, the rising curve
            better = fit["loglik"] > best["loglik"] if best else np.ones(len(b0), bool)
            best = {name: np.where(better, fit[name], best.get(name, fit[name])) for name in fit}
    b0, b1 = best["b0"], best["b1"]
    return {"threshold": centre - b0 / b1 * half, "width": spread * half / np.abs(b1),
            "direction": np.sign(b1), "lapse": best["lapse"], "loglik": best["loglik"],
            "at_bound": best["at_bound"].astype(bool)}


def _resample_levels(x, level_of_row, y, n_boot, rng, block=None):
    """(k, n) for n_boot resamples within each level, and how many levels were resampled by
    blocks: of whole blocks of rows (``block``: a label per row, e.g. a clip's source,
    whose forward and reversed copies then stay together; n then varies with the blocks
    drawn) in a level with at least :data:`MIN_BLOCKS` of them, else of rows one by one
    (with one source clip a level, as in the built-in set, every resample of blocks would be
    the data itself, an interval of width 0)."""
    k, n = np.empty((n_boot, len(x))), np.empty((n_boot, len(x)))
    by_blocks = 0
    for j, lv in enumerate(x):
        at = level_of_row == lv
        labels = np.arange(at.sum()) if block is None else pd.factorize(block[at])[0]
        if block is not None and labels.max() + 1 >= MIN_BLOCKS:
            by_blocks += 1
        else:
            labels = np.arange(at.sum())
        sums = np.bincount(labels, weights=y[at])
        sizes = np.bincount(labels).astype(float)
        draw = rng.integers(0, len(sums), (n_boot, len(sums)))
        k[:, j], n[:, j] = sums[draw].sum(1), sizes[draw].sum(1)
    return k, n, by_blocks


def _interval(by_blocks: int, n_levels: int) -> str:
    """The name of a bootstrap interval's method, from how many levels used blocks."""
    return INTERVALS["rows" if by_blocks == 0 else "blocks" if by_blocks == n_levels
                     else "mixed"]


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
                     lapse=0.0, block: str | None = None, width_min=None, n_boot: int = 2000,
                     ci: float = 0.95) -> dict:
    """Fit one observer's psychometric function to binary answers, with intervals for
    threshold and width.

    Parameters
    ----------
    data : DataFrame, one row per trial.
    level, dv : the sweep column and the answer (0/1).
    cluster : column of clusters (participants) for a pooled fit, whose intervals are
        jackknife t intervals over clusters; None: percentile bootstrap intervals of
        ``n_boot`` resamples within each level.
    guess : the fixed lower asymptote and the chance level (0.5 for P(correct) on clips shown
        both ways; 0 for P("forward")).
    lapse : the upper asymptote's offset: a fixed rate, or a grid of candidate rates
        estimated with the rest (:func:`fit_counts`), afresh in every resample and
        leave-one-out fit.
    block : column whose rows are resampled together within a level (a source clip's two
        copies, whose answers are not independent), where every level has at least
        :data:`MIN_BLOCKS` of them; otherwise, or None, rows one by one.

    Returns
    -------
    dict
        ``n_levels, n_rows, n_clusters, threshold, threshold_lo, threshold_hi, width,
        width_lo, width_hi, direction, guess, lapse, asymptotes, chance, at_bound,
        ends_at_limit, boot_at_bound, level_min, level_max, curve_min, curve_max, sigmoid,
        flat, n_boot, interval, ci``. ``lapse`` is the fitted rate and ``asymptotes`` says
        how the asymptotes were set; ``interval`` names the method; ``ends_at_limit`` names
        the interval ends that sit on a fitting limit (threshold one sweep span outside the
        sweep, smallest or largest width), and "lapse" where the fitted lapse rate is the
        largest allowed, e.g. "threshold_hi; width_lo", "" where none;
        ``boot_at_bound`` counts refits (resamples or leave-one-out fits) on a bound;
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
        *counts, by_blocks = _resample_levels(x, lv, y, n_boot, rng, _blocks(data, block))
        boot = fit_counts(x, *counts, **options)
        intervals, method = _percentiles(boot, ("threshold", "width"), ci), \
            _interval(by_blocks, len(x))
    else:
        sums, counts = cluster_counts(x, lv, y, data[cluster].to_numpy())
        intervals, boot = _cluster_intervals(x, k, n, est, sums, counts, options, ci)
        method = INTERVALS["cluster"]
    rates = candidates(lapse)
    said = f"lapse {rates[0]:g}" if len(rates) == 1 else \
        f"lapse estimated in [{rates.min():g}, {rates.max():g}]"
    fit = {"threshold": est["threshold"][0], "width": est["width"][0],
           "direction": est["direction"][0], "guess": guess, "lapse": est["lapse"][0],
           "at_bound": est["at_bound"][0]}
    out = _fit_row(fit, intervals, x, width_min, sigmoid, boot)
    if len(rates) > 1 and _wants_more_lapses(x, k, n, est["loglik"][0], rates, options):
        out["ends_at_limit"] = "; ".join(filter(None, [out["ends_at_limit"], "lapse"]))
    return out | {
        "flat": False, "n_rows": len(y),
        "n_clusters": data[cluster].nunique() if cluster else np.nan,
        "asymptotes": f"guess {guess:g}; {said}", "chance": guess,
        "n_boot": n_boot if cluster is None else 0, "interval": method, "ci": ci}


def _wants_more_lapses(x, k, n, loglik, rates, options) -> bool:
    """Whether the data call for more lapses than ``rates`` allow: a fit with the lapse rate
    free up to three times the largest is better by a likelihood-ratio test at 5%. (A point
    estimate on the largest rate alone says little: a participant who truly lapses 5% of the
    time lands on 0.06 in a quarter of simulated sessions.)"""
    wider = np.linspace(rates.max(), min(3 * rates.max(), 1 - options["guess"] - 0.05), 13)
    more = fit_counts(x, k, n, **(options | {"lapse": wider}))
    return bool(2 * (more["loglik"][0] - loglik) > stats.chi2.ppf(0.95, 1))


def _percentiles(draws: dict, names, ci: float) -> dict:
    q = [(1 - ci) / 2 * 100, (1 + ci) / 2 * 100]
    return {name: tuple(np.percentile(draws[name], q)) for name in names}


def _fit_row(fit: dict, intervals: dict, x, width_min, sigmoid, boot) -> dict:
    """The columns one fitted curve shares, whichever way it was fitted: the estimates, their
    intervals (NaN where the fit itself lies on a bound), the limits, the curve's range."""
    out: dict[str, Any] = {"n_levels": len(x)}
    for name in ("threshold", "width"):
        out[name] = float(fit[name])
        lo_hi = intervals[name] if not fit["at_bound"] else (np.nan, np.nan)
        out[f"{name}_lo"], out[f"{name}_hi"] = (float(v) for v in lo_hi)
    span, wmin, wmax = _bounds(x, width_min)
    limits = {"threshold": (x.min() - span, x.max() + span), "width": (wmin, wmax)}
    ends = psychometric_values(fit["threshold"], fit["width"], fit["direction"],
                                np.array([x.min(), x.max()]), sigmoid, fit["guess"],
                                fit["lapse"])
    return out | {"direction": int(fit["direction"]), "guess": float(fit["guess"]),
                  "lapse": float(fit["lapse"]), "at_bound": bool(fit["at_bound"]),
                  "ends_at_limit": ends_at_limit(out, limits),
                  "boot_at_bound": int(np.sum(boot["at_bound"])), "level_min": x.min(),
                  "level_max": x.max(), "curve_min": ends.min(), "curve_max": ends.max(),
                  "sigmoid": sigmoid}


def profiled_least_squares(means: np.ndarray, n: np.ndarray, basis: np.ndarray, limits=None):
    """Weighted least squares of ``b + h basis[:, g]`` through each row of level ``means``
    (weights ``n``: rows x levels, or one row for all), exact in (b, h) for every column g of
    ``basis`` (levels x grid, or rows x levels x grid: a grid of each row's own), the best
    column kept per row.

    ``limits`` (lower, upper), where given, clip both ends of the curve, b and b + h, before
    columns are compared, so the column kept is the best one as drawn. Returns (index of the
    best column, b, h), one per row. Equals least squares over the observations themselves:
    the scatter within a level does not depend on the curve.
    """
    out = []
    n = np.broadcast_to(n, means.shape)
    for rows in np.array_split(np.arange(len(means)), max(1, len(means) // 100)):
        m, w = means[rows], n[rows]
        if basis.ndim == 2:
            sg, sgg, sgy = w @ basis, w @ basis ** 2, (w * m) @ basis
        else:
            own = basis[rows]
            sg, sgg, sgy = (np.einsum("rl,rlg->rg", a, g) for a, g in
                            ((w, own), (w, own ** 2), (w * m, own)))
        sw, sy = w.sum(1)[:, None], (w * m).sum(1)[:, None]
        det = sw * sgg - sg ** 2
        with np.errstate(divide="ignore", invalid="ignore"):  # a flat column: h = 0
            h = np.where(det > 1e-12 * sw * sgg, (sw * sgy - sg * sy) / det, 0.0)
        b = (sy - h * sg) / sw
        if limits is not None:
            b, top = np.clip(b, *limits), np.clip(b + h, *limits)
            h = top - b
        # the residual sum of squares, less its constant part
        rss = b * b * sw + 2 * b * h * sg + h * h * sgg - 2 * b * sy - 2 * h * sgy
        best = np.argmin(rss, axis=1)
        at = np.arange(len(rows))
        out.append(np.c_[best, b[at, best], h[at, best]])
    found = np.vstack(out)
    return found[:, 0].astype(int), found[:, 1], found[:, 2]


N_THRESHOLDS, N_WIDTHS, N_FINE = 301, 60, 21  # the coarse grid, then a finer one around its best


def _sigmoid_basis(x, threshold, width, sigmoid):
    cdf, _, quantile, _ = SIGMOIDS[sigmoid]
    s = width / (quantile(1 - WIDTH_ALPHA) - quantile(WIDTH_ALPHA))
    return cdf((x[..., :, None] - threshold[..., None, :]) / s[..., None, :])


def _sigmoid_least_squares(x, means, n, width_min, sigmoid):
    """(threshold, width, lower end, upper end, on the grid's edge) per row of ``means``:
    the clipped least-squares sigmoid on a coarse grid of thresholds (over the sweep and one
    span either side, 1% of the span apart) x widths (log scale, between the limits people
    have), then on a grid 10 times finer around each row's best point."""
    span, wmin, wmax = _bounds(x, width_min)
    t_step, w_ratio = 3 * span / (N_THRESHOLDS - 1), (wmax / wmin) ** (1 / (N_WIDTHS - 1))
    threshold, width = (a.ravel() for a in np.meshgrid(
        np.linspace(x.min() - span, x.max() + span, N_THRESHOLDS),
        np.geomspace(wmin, wmax, N_WIDTHS)))
    best, _, _ = profiled_least_squares(means, n, _sigmoid_basis(x, threshold, width, sigmoid),
                                        limits=(0.0, 1.0))
    fine = np.linspace(-1, 1, N_FINE)
    t_fine, w_fine = (a.reshape(1, -1) for a in np.meshgrid(fine * t_step, w_ratio ** fine))
    threshold = np.clip(threshold[best, None] + t_fine, x.min() - span, x.max() + span)
    width = np.clip(width[best, None] * w_fine, wmin, wmax)
    best, low, rise = profiled_least_squares(
        means, n, _sigmoid_basis(x, threshold, width, sigmoid), limits=(0.0, 1.0))
    at = np.arange(len(means))
    t, w = threshold[at, best], width[at, best]
    edge = (np.isclose(t, x.min() - span) | np.isclose(t, x.max() + span)
            | np.isclose(w, wmin) | np.isclose(w, wmax))
    return t, w, low, low + rise, edge


def fit_probability_curve(data: pd.DataFrame, level: str, dv: str, *,
                          rng: np.random.Generator, block: str | None = None,
                          chance: float = 0.5, sigmoid: str = "norm", width_min=None,
                          n_boot: int = 2000, ci: float = 0.95) -> dict:
    """A sigmoid with both asymptotes free through probabilities (a VLM's P(correct) per
    clip), by least squares, with percentile bootstrap intervals.

    P(x) = a + (c - a) F((x - threshold) / s): the curve runs from a at the low end of the
    sweep to c at the high end, anywhere in [0, 1], so a model below chance, one that levels
    off at 0.7 and one that falls are drawn as they are. The fit is exact in (a, c), clipped
    to [0, 1], on a grid of (threshold, width), refined around its best point
    (:func:`_sigmoid_least_squares`: thresholds to 0.1% of the sweep's span, widths to 1.2%).
    Returned with the columns of :func:`fit_psychometric` (``guess`` and ``lapse`` are the
    lower asymptote and 1 - the upper one; ``direction`` -1 where c < a), ``chance`` as
    given. ``block``, ``ci`` and ``n_boot`` as in :func:`fit_psychometric`; a resample's
    best fit on the grid's edge counts in ``boot_at_bound``, and the fit's own on the edge
    sets ``at_bound``. Where the percentile interval of the curve's rise, c - a, holds 0 (a
    model at one level everywhere, e.g. 0.7), the curve has no threshold: ``flat`` is True,
    threshold, width, ``guess`` and ``lapse`` are NaN, ``direction`` 0, and ``curve_min`` =
    ``curve_max`` is its mean level, at which it is drawn. Needs at least 5 levels (4
    parameters); raises ValueError otherwise.
    """
    # four parameters: at least one level more, or any curve through the means fits exactly
    values = _levels(data, level, dv, min_levels=5, must_vary=False)
    lv, y = values[level].to_numpy(float), values[dv].to_numpy(float)
    x = np.unique(lv)
    n = np.array([(lv == v).sum() for v in x], float)
    means = np.array([y[lv == v].mean() for v in x])
    sums, counts, by_blocks = _resample_levels(x, lv, y, n_boot, rng, _blocks(data, block))

    def curves(m, w) -> dict:
        t, wd, low, high, edge = _sigmoid_least_squares(x, m, w, width_min, sigmoid)
        return {"threshold": t, "width": wd, "direction": np.where(high >= low, 1, -1),
                "guess": np.minimum(low, high), "lapse": 1 - np.maximum(low, high),
                "rise": high - low, "at_bound": edge}

    est = {name: v[0] for name, v in curves(means[None], n).items()}
    boot = curves(sums / counts, counts)
    out = _fit_row(est, _percentiles(boot, ("threshold", "width"), ci), x, width_min,
                   sigmoid, boot) | {"flat": False, "asymptotes": "both estimated (least squares)",
                                     "interval": _interval(by_blocks, len(x))}
    rise_lo, rise_hi = _percentiles(boot, ("rise",), ci)["rise"]
    if rise_lo <= 0 <= rise_hi:  # the curve's rise cannot be told from none: no threshold
        level_ = float(np.average(means, weights=n))
        out |= {name: np.nan for name in ("threshold", "threshold_lo", "threshold_hi", "width",
                                          "width_lo", "width_hi", "guess", "lapse",
                                          "boot_at_bound")}
        out |= {"flat": True, "direction": 0, "at_bound": False, "ends_at_limit": "",
                "curve_min": level_, "curve_max": level_, "asymptotes": "none: flat",
                "interval": "none: flat"}
    return out | {"n_rows": len(y), "n_clusters": np.nan, "chance": chance, "n_boot": n_boot,
                  "ci": ci}


def pooled_band(data: pd.DataFrame, level: str, dv: str, cluster: str, fit, grid,
                ci: float = 0.95, **options) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise jackknife t band over clusters of a pooled fit's curve on ``grid``.

    The interval is taken on the sigmoid's argument ``direction (x - threshold) / s`` (where
    the leave-one-out curves are linear in x) and mapped through the pooled curve, so the
    band stays within its asymptotes. ``fit`` is the pooled row of :func:`fit_psychometric`;
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


def psychometric_values(threshold, width, direction, grid, sigmoid, guess, lapse):
    cdf, _, quantile, _ = SIGMOIDS[sigmoid]
    s = width / (quantile(1 - WIDTH_ALPHA) - quantile(WIDTH_ALPHA))
    return guess + (1 - guess - lapse) * cdf(direction * (grid - threshold) / s)


def psychometric_table(data: pd.DataFrame, level: str, dv: str = "correct", by=("observer",),
                       subject: str | None = None, *, rng: np.random.Generator,
                       fit: Callable[..., dict] = fit_psychometric, **options) -> pd.DataFrame:
    """``fit`` (:func:`fit_psychometric`, or :func:`fit_probability_curve` for probabilities)
    per group of ``by``; with ``subject`` (binary answers only), per subject and one pooled
    row per group (``subject`` = "pooled", participants as clusters).

    Returns the ``by`` columns, ``subject`` (where given), ``status`` (:func:`fit_status`;
    or why the row could not be fitted, its numbers then NaN) and the columns of the fit.
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
                clustered = {"cluster": cluster} if cluster else {}
                fitted = fit(part, level, dv, rng=rng, **clustered, **options)
                row |= {"status": fit_status(fitted)} | fitted
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
