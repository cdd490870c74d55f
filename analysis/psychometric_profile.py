"""Profile likelihood intervals of one participant's threshold and width
(:func:`profile_intervals`), the report's intervals for a participant; why they replaced the
percentile bootstrap, and how they cover, is in ``analysis.psychometric``."""
from __future__ import annotations

import numpy as np
from scipy import stats

from analysis.psychometric_counts import fit_counts
from analysis.sweep_fits import fit_limits

PROFILE_POINTS = 41  # grid of a profile likelihood interval, between the fitting limits
PROFILE_REFINE = 3  # regula falsi steps from the grid to each end


def profile_intervals(x, k, n, est, options, ci, names=("threshold", "width")):
    """Profile likelihood intervals of threshold and width: the values whose best fit, the
    other parameters and the lapse rate free, is within chi2_1(ci) / 2 of the maximum in
    log-likelihood. Each end is bracketed on a grid over the fitting limits (the width's on
    the log scale), then refined by regula falsi on the signed root deviance, which is near
    linear in the parameter; an end that never crosses is the fitting limit. ``names``: the
    parameters profiled (a power simulation that reads the threshold only saves half)."""
    span, wmin, wmax = fit_limits(x, options.get("width_min"))
    limits = {"threshold": (x.min() - span, x.max() + span), "width": (np.log(wmin), np.log(wmax))}
    out = {}
    for name in names:
        lo, hi = limits[name]
        to_value = np.exp if name == "width" else np.asarray
        at = np.log(est[name][0]) if name == "width" else est[name][0]

        def root(axis):  # noqa: E306 - the signed root deviance, less its cut
            held = fit_counts(x, np.tile(k, (len(axis), 1)), np.tile(n, (len(axis), 1)),
                              **options, fixed=(name, to_value(axis), est["direction"][0]),
                              start=est["threshold"][0] if name == "width" else None)
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
