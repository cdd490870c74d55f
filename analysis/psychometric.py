"""People's psychometric functions over a physical sweep (restitution 0.1-1.0, damping
0.0-5.0): binary answers, P(correct) per level (``guess=0.5``: each clip is shown both ways,
so chance is one half) or P("forward") (``guess=0``), per participant and pooled over
participants (:func:`fit_psychometric`, :func:`psychometric_table`), by binomial maximum
likelihood with the lapse rate estimated on a grid. VLMs' curves are in
``analysis.probability_curve``, self-supervised models' TRA curves in ``analysis.tra_peak``,
what they share in ``analysis.sweep_fits``.

Why not psignifit 4 (``psignifit`` 4.3 on PyPI, a test dependency that checks these fits,
``tests/analysis/test_psychometric_psignifit.py`` and ``bench/psychometric_psignifit.py``):
one fit with its default free lapse, guess and overdispersion took 8.5 s on this 2-core
machine (0.15 s with them fixed), so
a bootstrap over resamples and a coverage check of 200 simulated data sets were out of reach;
its intervals are Bayesian credible intervals that treat trials as independent, which is
wrong for a pooled fit where trials cluster in participants; it takes counts, not the VLMs'
per-clip probabilities; and it pulls in matplotlib. The binomial fit here is maximum
likelihood by Newton steps (Fisher scoring where the observed information is not positive
definite), vectorised over bootstrap resamples; with no lapse it equals statsmodels'
binomial GLM with a probit or logit link, which the tests check. psignifit's conventions
are kept: ``threshold`` is where the sigmoid is half way, ``width`` the distance between its
5% and 95% points, and the smallest width allowed defaults to the smallest spacing of the
levels. Below one level step the levels cannot tell a curve from a steeper one, so psignifit's
width prior is 0 there (rising to flat at two steps): an interval whose lower end sits on that
step bounds the width from above only, and its status says so, "width: upper bound only"
(:func:`analysis.sweep_fits.fit_status`), rather than "at limit", which marks a limit the
truth may lie beyond. Beside psignifit on the same simulated participants
(``bench/psychometric_psignifit.py``, 60 a sweep, 24 trials a level, 2% lapses, seed 0),
coverage of nominal 95% intervals, threshold / width: with percentile bootstrap intervals
(300 resamples) ball 0.90 / 0.92 here, 0.97 / 0.97 psignifit; pendulum 0.88 / 0.95 here,
0.97 / 1.00 psignifit (its credible intervals were 5-14% wider). A participant's intervals
are therefore profile likelihood ones (:func:`profile_intervals`, ``profile=True`` in the
report): the bootstrap's refits of 24 trials a level are biased in the threshold and often
land on the width's lower limit, so its percentiles sit too tight, while the likelihood
ratio, the lapse rate refitted at each value, has near its chi-squared calibration. On 100
simulated participants a sweep (seed 11; binomial 95% CIs of the coverage in brackets)
they covered threshold / width: ball 0.96 [0.90, 0.99] / 0.99 [0.95, 1.00]; pendulum
0.96 [0.90, 0.99] / 0.92 [0.85, 0.96] (the pendulum's width is still short of 0.95, not
significantly); about 3 s a participant on this 2-core machine at load 11-15 (a 300-resample
bootstrap took 0.23 s there); 4 of 16 ball participants are "width: upper bound only" with
them (``tests/analysis/test_psychometric_psignifit.py``), 11 of the same 16 with the
bootstrap. With the bootstrap 77% of participants on either sweep were "width: upper bound
only"; for 65% (ball) and 54% (pendulum) of them psignifit's lower end, too, lies
within its prior's ramp, below two level steps. People's lapse rate is estimated in Wichmann & Hill's (2001) range, [0, 0.06]. A
fixed lapse of 0 drags the curve down to the lapsed answers: with 4% lapses the pooled
intervals of 6 participants covered the threshold in 0.68 and the width in 0.02 of
simulated studies; estimated, 0.95 and 0.96 (``tests/analysis/test_psychometric.py``).
A participant who lapses more than 6% of the time gets a biased threshold; "lapse" in
``ends_at_limit`` marks one where a likelihood-ratio test shows it, which at 24 trials a
level catches a fifth of those lapsing 20% (a shallower curve without lapses fits such data
as well) and marks 2% of those lapsing 5%.

With ``profile=False`` (VLMs' and the tests' fits), intervals for one observer are percentile bootstrap
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

from analysis.sweep_fits import (
    INTERVALS,
    SIGMOIDS,
    WIDTH_ALPHA,
    block_labels,
    fit_limits,
    fit_row,
    fit_status,
    interval_method,
    percentile_intervals,
    resample_levels,
    sweep_values,
)


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
    # limits are scalars or one per row (a profile fixes each row's threshold or width)
    b1_lim, m_lim = ([np.broadcast_to(np.asarray(v, float), b0.shape) for v in lim]
                     for lim in (b1_lim, m_lim))
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
            new0, new1 = _step(a0, a1, x, ka, na, cdfs, guess, lapse,
                               [v[active] for v in b1_lim], [v[active] for v in m_lim],
                               sign, newton)
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
               (np.abs(-b0 / b1 - (m_lim[0] + m_lim[1]) / 2) >= (m_lim[1] - m_lim[0]) / 2 - 1e-9)
    return b0, b1, loglik(b0, b1, k, n), at_bound


def candidates(lapse) -> np.ndarray:
    """A lapse rate as the values a fit profiles over: one fixed value, or a grid."""
    return np.atleast_1d(np.asarray(lapse, float))


def fit_counts(x, k, n, sigmoid="norm", guess=0.0, lapse=0.0, width_min=None, fixed=None):
    """ML psychometric fits of rows of counts ``k`` of ``n`` (fractional k allowed) at levels
    ``x``: P(x) = guess + (1 - guess - lapse) F((x - threshold) / s).

    ``lapse`` is a fixed rate or a grid of candidate rates (a sequence), over which each row's
    fit is profiled, keeping its most likely rate. ``fixed`` (name, values, direction) fits
    each row with "threshold" or "width" held at its value (one a row) and the curve's
    direction given (a profile likelihood).

    Returns a dict of arrays, one value per row: ``threshold``, ``width`` (5%-95% span of F,
    in units of x), ``direction`` (+1 rising, -1 falling), ``lapse``, ``loglik``,
    ``at_bound``.
    """
    x, k, n = np.asarray(x, float), np.atleast_2d(k).astype(float), np.atleast_2d(n).astype(float)
    cdfs = SIGMOIDS[sigmoid]
    span, wmin, wmax = fit_limits(x, width_min)
    centre, half = (x.max() + x.min()) / 2, span / 2
    spread = cdfs[2](1 - WIDTH_ALPHA) - cdfs[2](WIDTH_ALPHA)
    b1_lim = (spread * half / wmax, spread * half / wmin)
    z = (x - centre) / half
    m_lim: tuple = (-3.0, 3.0)
    signs = (1, -1)
    if fixed is not None:
        name, values, signs = fixed[0], np.asarray(fixed[1], float), (fixed[2],)
        if name == "threshold":
            m_lim = ((values - centre) / half,) * 2
        else:
            b1_lim = (spread * half / values,) * 2
    best: dict[str, np.ndarray] = {}
    previous: dict[int, tuple] = {}  # per direction, the last rate's fit: a warm start
    for rate in candidates(lapse):
        if not 0 <= rate < 1 - guess:
            raise ValueError(f"a lapse rate must lie in [0, 1 - guess); got {rate:g}")
        for sign in signs:
            b0, b1, loglik, at_bound = _fisher(z, k, n, cdfs, guess, rate, b1_lim, m_lim,
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


PROFILE_POINTS = 41  # grid of a profile likelihood interval, between the fitting limits
PROFILE_REFINE = 3  # regula falsi steps from the grid to each end


def profile_intervals(x, k, n, est, options, ci):
    """Profile likelihood intervals of threshold and width: the values whose best fit, the
    other parameters and the lapse rate free, is within chi2_1(ci) / 2 of the maximum in
    log-likelihood. Each end is bracketed on a grid over the fitting limits (the width's on
    the log scale), then refined by regula falsi on the signed root deviance, which is near
    linear in the parameter; an end that never crosses is the fitting limit."""
    span, wmin, wmax = fit_limits(x, options.get("width_min"))
    limits = {"threshold": (x.min() - span, x.max() + span), "width": (np.log(wmin), np.log(wmax))}
    out = {}
    for name, (lo, hi) in limits.items():
        to_value = np.exp if name == "width" else np.asarray
        at = np.log(est[name][0]) if name == "width" else est[name][0]

        def root(axis):  # noqa: E306 - the signed root deviance, less its cut
            held = fit_counts(x, np.tile(k, (len(axis), 1)), np.tile(n, (len(axis), 1)),
                              **options, fixed=(name, to_value(axis), est["direction"][0]))
            return np.sqrt(np.maximum(2 * (est["loglik"][0] - held["loglik"]), 0)) - \
                np.sqrt(stats.chi2.ppf(ci, 1))
        grid = np.union1d(np.linspace(lo, hi, PROFILE_POINTS), at)
        inner, outer = _brackets(grid, root(grid), at)
        for _ in range(PROFILE_REFINE):
            between = np.isfinite(outer[1])
            guess = inner[0] + (outer[0] - inner[0]) * inner[1] / (inner[1] - outer[1])
            guess = np.where(between, guess, inner[0])
            r = root(guess)
            inside = between & (r <= 0)
            inner = (np.where(inside, guess, inner[0]), np.where(inside, r, inner[1]))
            outer = (np.where(between & ~inside, guess, outer[0]),
                     np.where(between & ~inside, r, outer[1]))
        ends = np.where(np.isfinite(outer[1]), inner[0] + (outer[0] - inner[0]) * inner[1]
                        / (inner[1] - outer[1]), inner[0])
        out[name] = tuple(float(v) for v in to_value(ends))
    return out


def _brackets(axis, root, at):
    """Per side of ``at`` (low end, high end): the last grid point inside the interval
    (``root`` <= 0) and the first outside, as (points, roots); the outside root is NaN
    where the interval reaches the grid's end."""
    inside, centre = root <= 0, int(np.argmin(np.abs(axis - at)))
    rows = []
    for step in (-1, 1):
        i = centre
        while 0 <= i + step < len(axis) and inside[i + step]:
            i += step
        j = i + step
        rows.append((axis[i], root[i], *((axis[j], root[j]) if 0 <= j < len(axis)
                                         else (axis[i], np.nan))))
    a_in, r_in, a_out, r_out = np.array(rows).T
    return (a_in, r_in), (a_out, r_out)


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
                     ci: float = 0.95, profile: bool = False) -> dict:
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
    profile : without ``cluster``, profile likelihood intervals (:func:`profile_intervals`)
        instead of a bootstrap (``n_boot`` and ``block`` then unused).

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
    values = sweep_values(data, level, dv)
    lv, y = values[level].to_numpy(float), values[dv].to_numpy(float)
    x = np.unique(lv)
    n = np.array([(lv == v).sum() for v in x], float)
    k = np.array([y[lv == v].sum() for v in x])
    options = dict(sigmoid=sigmoid, guess=guess, lapse=lapse, width_min=width_min)
    est = fit_counts(x, k, n, **options)
    if cluster is None and profile:
        intervals, boot, method = profile_intervals(x, k, n, est, options, ci), \
            {"at_bound": np.zeros(0)}, INTERVALS["profile"]
    elif cluster is None:
        *counts, by_blocks = resample_levels(x, lv, y, n_boot, rng, block_labels(data, block))
        boot = fit_counts(x, *counts, **options)
        intervals, method = percentile_intervals(boot, ("threshold", "width"), ci), \
            interval_method(by_blocks, len(x))
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
    out = fit_row(fit, intervals, x, width_min, sigmoid, boot)
    if len(rates) > 1 and _wants_more_lapses(x, k, n, est["loglik"][0], rates, options):
        out["ends_at_limit"] = "; ".join(filter(None, [out["ends_at_limit"], "lapse"]))
    return out | {
        "flat": False, "n_rows": len(y),
        "n_clusters": data[cluster].nunique() if cluster else np.nan,
        "asymptotes": f"guess {guess:g}; {said}", "chance": guess,
        "n_boot": n_boot if cluster is None and not profile else 0, "interval": method,
        "ci": ci}


def _wants_more_lapses(x, k, n, loglik, rates, options) -> bool:
    """Whether the data call for more lapses than ``rates`` allow: a fit with the lapse rate
    free up to three times the largest is better by a likelihood-ratio test at 5%. (A point
    estimate on the largest rate alone says little: a participant who truly lapses 5% of the
    time lands on 0.06 in a quarter of simulated sessions.)"""
    wider = np.linspace(rates.max(), min(3 * rates.max(), 1 - options["guess"] - 0.05), 13)
    more = fit_counts(x, k, n, **(options | {"lapse": wider}))
    return bool(2 * (more["loglik"][0] - loglik) > stats.chi2.ppf(0.95, 1))


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
