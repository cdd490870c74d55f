"""Binomial maximum-likelihood fits of psychometric functions to rows of counts
(:func:`fit_counts`): Newton steps, Fisher scoring where the observed information is not
positive definite, within limits on the threshold and width, vectorised over rows (bootstrap
resamples, leave-one-out fits, the points of a profile). Why this fit and not psignifit's,
and how its intervals cover: ``analysis.psychometric``."""
from __future__ import annotations

import numpy as np
from scipy import special

from analysis.sweep_fits import SIGMOIDS, WIDTH_ALPHA, fit_limits


def _start(x, k, n, cdfs, guess, lapse, sign):
    p = (k.sum(0) + 0.5) / (n.sum(0) + 1)
    z = cdfs[2](np.clip((p - guess) / (1 - guess - lapse), 0.02, 0.98))
    w = n.sum(0)
    b1 = max(abs(np.cov(x, z, aweights=w + 1e-9)[0, 1] / np.cov(x, aweights=w + 1e-9)), 0.5)
    b0 = np.average(z, weights=w + 1e-9) - sign * b1 * np.average(x, weights=w + 1e-9)
    return np.full(k.shape[0], b0), np.full(k.shape[0], sign * b1)


def _loglik(b0, b1, x, k, n, cdfs, guess, lapse):
    """Per row of (b0, b1): the log-likelihood (the step-halving and gain checks need no
    more, and they are most of a fit's calls)."""
    eta = b0[:, None] + b1[:, None] * x
    p = np.clip(guess + (1 - guess - lapse) * cdfs[0](eta), 1e-12, 1 - 1e-12)
    return (special.xlogy(k, p) + special.xlogy(n - k, 1 - p)).sum(1)


def _scores(b0, b1, x, k, n, cdfs, guess, lapse):
    """Per row of (b0, b1): the score, and the expected and the observed information (each as
    (i00, i01, i11))."""
    eta = b0[:, None] + b1[:, None] * x
    p = np.clip(guess + (1 - guess - lapse) * cdfs[0](eta), 1e-12, 1 - 1e-12)
    d = (1 - guess - lapse) * cdfs[1](eta)
    v = p * (1 - p)
    u, w = (k - n * p) * d / v, n * d * d / v
    curvature = (1 - guess - lapse) * cdfs[3](eta) / v - d * d * (1 - 2 * p) / v ** 2
    w_obs = w - (k - n * p) * curvature
    expected, observed = ((a.sum(1), (a * x).sum(1), (a * x * x).sum(1)) for a in (w, w_obs))
    return (u.sum(1), (u * x).sum(1)), expected, observed


def _step(b0, b1, x, k, n, cdfs, guess, lapse, b1_lim, m_lim, sign, newton):
    """One projected step: Newton's where ``newton`` and the observed information is positive
    definite, else Fisher scoring's; along an active bound, a 1-D step on it."""
    (g0, g1), expected, observed = _scores(b0, b1, x, k, n, cdfs, guess, lapse)
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
    with np.errstate(over="ignore"):  # a zero step overflows to inf, and its scale is 1
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
    loglik = lambda c0, c1, kk, nn: _loglik(c0, c1, x, kk, nn, cdfs, guess, lapse)  # noqa: E731
    # each row's log-likelihood is its own sum, whichever rows are computed with it: it is
    # kept from the step that reached it rather than computed again (most of a fit's calls)
    ll = loglik(b0, b1, k, n)
    active = np.arange(len(b0))
    for _ in range(iters):
        a0, a1, ka, na, old_ll = b0[active], b1[active], k[active], n[active], ll[active]
        best0, best1, best_ll, best_gain = a0, a1, old_ll, np.zeros(len(a0))
        for newton in (True, False):
            new0, new1 = _step(a0, a1, x, ka, na, cdfs, guess, lapse,
                               [v[active] for v in b1_lim], [v[active] for v in m_lim],
                               sign, newton)
            new_ll = loglik(new0, new1, ka, na)
            for _ in range(12):  # halve steps that lower the likelihood (the set is convex)
                worse = new_ll < old_ll - 1e-12
                if not worse.any():
                    break
                new0 = np.where(worse, (a0 + new0) / 2, new0)
                new1 = np.where(worse, (a1 + new1) / 2, new1)
                new_ll = loglik(new0, new1, ka, na)
            gain = new_ll - old_ll
            better = gain > best_gain
            best0, best1 = np.where(better, new0, best0), np.where(better, new1, best1)
            best_ll = np.where(better, new_ll, best_ll)
            best_gain = np.maximum(gain, best_gain)
            if (best_gain > 1e-11).all():
                break
        moving = (np.abs(best0 - a0) + np.abs(best1 - a1) > 1e-10) & (best_gain > 1e-11)
        b0[active], b1[active], ll[active] = best0, best1, best_ll
        active = active[moving]
        if not active.size:
            break
    steepest = np.abs(b1) >= b1_lim[1] - 1e-9
    other = (np.abs(b1) <= b1_lim[0] + 1e-9) | \
        (np.abs(-b0 / b1 - (m_lim[0] + m_lim[1]) / 2) >= (m_lim[1] - m_lim[0]) / 2 - 1e-9)
    return b0, b1, ll, steepest, other


def candidates(lapse) -> np.ndarray:
    """A lapse rate as the values a fit profiles over: one fixed value, or a grid."""
    return np.atleast_1d(np.asarray(lapse, float))


def fit_counts(x, k, n, sigmoid="norm", guess=0.0, lapse=0.0, width_min=None, fixed=None,
               direction=None, start=None):
    """ML psychometric fits of rows of counts ``k`` of ``n`` (fractional k allowed) at levels
    ``x``: P(x) = guess + (1 - guess - lapse) F((x - threshold) / s).

    ``lapse`` is a fixed rate or a grid of candidate rates (a sequence), over which each row's
    fit is profiled, keeping its most likely rate. ``direction`` (+1 rising, -1 falling) fits
    curves of that direction only; None, the better of both. ``fixed`` (name, values, direction) fits
    each row with "threshold" or "width" held at its value (one a row) and the curve's
    direction given (a profile likelihood). ``start``, a threshold, starts every row's fit
    there, at every lapse rate, rather than at a moment estimate and the last rate's fit: a
    narrow curve's likelihood has a local maximum between every two levels, and a profile's
    fits start from the free fit's threshold.

    Returns a dict of arrays, one value per row: ``threshold``, ``width`` (5%-95% span of F,
    in units of x), ``direction`` (+1 rising, -1 falling), ``lapse``, ``loglik``,
    ``at_step`` (the width at its smallest, one level step, with the threshold inside the
    sweep: the answers switch between two adjacent levels) and ``at_bound`` (any other fit
    on a limit: the width at its largest, the threshold at its limit, or a step beyond the
    sweep).
    """
    x, k, n = np.asarray(x, float), np.atleast_2d(k).astype(float), np.atleast_2d(n).astype(float)
    cdfs = SIGMOIDS[sigmoid]
    span, wmin, wmax = fit_limits(x, width_min)
    centre, half = (x.max() + x.min()) / 2, span / 2
    spread = cdfs[2](1 - WIDTH_ALPHA) - cdfs[2](WIDTH_ALPHA)
    b1_lim = (spread * half / wmax, spread * half / wmin)
    z = (x - centre) / half
    m_lim: tuple = (-3.0, 3.0)
    signs = (1, -1) if direction is None else (int(direction),)
    if fixed is not None:
        name, values, signs = fixed[0], np.asarray(fixed[1], float), (fixed[2],)
        if name == "threshold":
            m_lim = ((values - centre) / half,) * 2
        else:
            b1_lim = (spread * half / values,) * 2
    best: dict[str, np.ndarray] = {}
    previous: dict[int, tuple] = {}  # per direction, the last rate's fit: a warm start
    rows = k.shape[0]
    first = {sign: None if start is None else  # b1 is moved onto its limits, keeping b0 / b1
             (np.full(rows, -sign * (start - centre) / half), np.full(rows, float(sign)))
             for sign in signs}
    for rate in candidates(lapse):
        if not 0 <= rate < 1 - guess:
            raise ValueError(f"a lapse rate must lie in [0, 1 - guess); got {rate:g}")
        for sign in signs:
            b0, b1, loglik, steepest, other = _fisher(z, k, n, cdfs, guess, rate, b1_lim,
                                                      m_lim, sign, previous.get(sign)
                                                      if start is None else first[sign])
            previous[sign] = (b0, b1)
            fit = {"b0": b0, "b1": b1, "loglik": loglik, "steepest": steepest,
                   "other": other, "lapse": np.full(len(b0), rate)}
            # ties keep the earlier candidate: with a fixed rate, the rising curve
            better = fit["loglik"] > best["loglik"] if best else np.ones(len(b0), bool)
            best = {name: np.where(better, fit[name], best.get(name, fit[name])) for name in fit}
    b0, b1 = best["b0"], best["b1"]
    threshold = centre - b0 / b1 * half
    # the steepest curve with its threshold inside the sweep is a step between two
    # adjacent levels; beyond the sweep a step leaves every level at one asymptote
    step = best["steepest"].astype(bool) & ~best["other"].astype(bool) & \
        (x.min() <= threshold) & (threshold <= x.max())
    return {"threshold": threshold, "width": spread * half / np.abs(b1),
            "direction": np.sign(b1), "lapse": best["lapse"], "loglik": best["loglik"],
            "at_bound": (best["steepest"] | best["other"]).astype(bool) & ~step,
            "at_step": step}
