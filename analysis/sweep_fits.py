"""What every fit over a physical sweep shares: the sigmoids, input checks, fitting limits,
resampling within levels, the columns of a fitted curve and its status, and the profiled
least squares that the VLM curve (``analysis.probability_curve``) and the TRA bump
(``analysis.tra_peak``) both use. People's fits are in ``analysis.psychometric``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import special

WIDTH_ALPHA = 0.05  # width = distance between the sigmoid's 5% and 95% points (psignifit's)
WIDTH_UPPER_ONLY = "width: upper bound only"  # see fit_status
STEP_BETWEEN_LEVELS = "step between levels"  # see fit_status
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
    "profile": "profile likelihood over the trials (chi-squared, 1 df; the other parameters "
               "and the lapse rate refitted at each value)",
}
def sweep_values(data: pd.DataFrame, level: str, dv: str, min_levels: int = 3,
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


def block_labels(data: pd.DataFrame, block: str | None):
    """The block label of each row, or None."""
    if block is None:
        return None
    if block not in data.columns:
        raise ValueError(f"data lacks block column {block!r}")
    return data[block].to_numpy()


def fit_limits(x: np.ndarray, width_min):
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
    fitting limit that the truth may lie beyond (the widest curve, a threshold beyond the
    sweep); :data:`STEP_BETWEEN_LEVELS` where it is the narrowest curve, one level step
    wide, with its threshold inside the sweep (the answers switch between two adjacent
    levels: the threshold lies between them); neither gets an interval
    (:func:`intervals_given`); "at limit: <ends>" where an interval end, or the lapse rate,
    sits on one (``ends_at_limit``: the truth may lie beyond it); :data:`WIDTH_UPPER_ONLY`
    where the width's lower end is the smallest width, one level step; else "ok".

    The width's lower end on the level step is set apart from the other limits: the levels
    cannot tell a curve that narrow from any steeper one (a step between two adjacent
    levels), so the data bound the width from above only. psignifit makes the same call
    with its prior, which is 0 at one level step and rises to flat at two
    (``psignifit._priors.width_prior``). A reader takes ``width_hi`` as an upper bound and
    ``width_lo`` as the design's resolution, not an estimate; finer levels around the
    threshold would bound it from below."""
    if fit.get("flat"):
        return "flat"
    if fit.get("at_bound"):
        return "at bound"
    ends = [e for e in (fit.get("ends_at_limit") or "").split("; ") if e]
    limits = [e for e in ends if e != "width_lo"]
    width = STEP_BETWEEN_LEVELS if fit.get("at_step") else \
        WIDTH_UPPER_ONLY if "width_lo" in ends else None
    parts = ([f"at limit: {'; '.join(limits)}"] if limits else []) + ([width] if width else [])
    return ", ".join(parts) or "ok"


def intervals_given(fit: dict) -> bool:
    """Whether a fit's intervals are given: not on a bound, nor at a step between levels,
    where profile likelihood intervals were measured to cover too little
    (``analysis.psychometric``) and a bootstrap's refits sit on the same step."""
    return not (fit["at_bound"] or fit.get("at_step"))


def is_drawn(status: str) -> bool:
    """Whether a fit of that status has a curve to draw (a row that failed has none)."""
    return status in ("ok", "at bound", "flat", WIDTH_UPPER_ONLY, STEP_BETWEEN_LEVELS) or \
        status.startswith("at limit")


def resample_levels(x, level_of_row, y, n_boot, rng, block=None):
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


def interval_method(by_blocks: int, n_levels: int) -> str:
    """The name of a bootstrap interval's method, from how many levels used blocks."""
    return INTERVALS["rows" if by_blocks == 0 else "blocks" if by_blocks == n_levels
                     else "mixed"]


def percentile_intervals(draws: dict, names, ci: float) -> dict:
    q = [(1 - ci) / 2 * 100, (1 + ci) / 2 * 100]
    return {name: tuple(np.percentile(draws[name], q)) for name in names}


def fit_row(fit: dict, intervals: dict, x, width_min, sigmoid, boot) -> dict:
    """The columns one fitted curve shares, whichever way it was fitted: the estimates, their
    intervals (NaN where the fit itself lies on a bound or a step, :func:`intervals_given`:
    :mod:`analysis.psychometric` says why), the limits, the curve's range."""
    out: dict[str, Any] = {"n_levels": len(x)}
    given = intervals_given(fit)
    for name in ("threshold", "width"):
        out[name] = float(fit[name])
        lo_hi = intervals[name] if given else (np.nan, np.nan)
        out[f"{name}_lo"], out[f"{name}_hi"] = (float(v) for v in lo_hi)
    span, wmin, wmax = fit_limits(x, width_min)
    limits = {"threshold": (x.min() - span, x.max() + span), "width": (wmin, wmax)}
    refits_on_bound = np.sum(boot["at_bound"]) + np.sum(boot.get("at_step", 0))  # steps too
    ends = psychometric_values(fit["threshold"], fit["width"], fit["direction"],
                                np.array([x.min(), x.max()]), sigmoid, fit["guess"],
                                fit["lapse"])
    return out | {"direction": int(fit["direction"]), "guess": float(fit["guess"]),
                  "lapse": float(fit["lapse"]), "at_bound": bool(fit["at_bound"]),
                  "at_step": bool(fit.get("at_step", False)),
                  "ends_at_limit": ends_at_limit(out, limits),
                  "boot_at_bound": int(refits_on_bound), "level_min": x.min(),
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
    # The sums come 100 rows at a time (BLAS rounds a product's last bits by the matrix's
    # shape: these chunks are the ones every fit has used); the rest of the work 8 rows at a
    # time, whose (rows x grid) temporaries stay in the CPU's cache: 30% faster on the VLM
    # fit's 18,060-point grid than 100 rows, the same numbers.
    for rows in np.array_split(np.arange(len(means)), max(1, len(means) // 100)):
        m, w = means[rows], n[rows]
        if basis.ndim == 2:
            sums = w @ basis, w @ basis ** 2, (w * m) @ basis
        else:
            own = basis[rows]
            sums = tuple(np.einsum("rl,rlg->rg", a, g) for a, g in
                         ((w, own), (w, own ** 2), (w * m, own)))
        for part in np.array_split(np.arange(len(rows)), max(1, len(rows) // 8)):
            sg, sgg, sgy = (a[part] for a in sums)
            sw, sy = w[part].sum(1)[:, None], (w[part] * m[part]).sum(1)[:, None]
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
            at = np.arange(len(part))
            out.append(np.c_[best, b[at, best], h[at, best]])
    found = np.vstack(out)
    return found[:, 0].astype(int), found[:, 1], found[:, 2]


def psychometric_values(threshold, width, direction, grid, sigmoid, guess, lapse):
    cdf, _, quantile, _ = SIGMOIDS[sigmoid]
    s = width / (quantile(1 - WIDTH_ALPHA) - quantile(WIDTH_ALPHA))
    return guess + (1 - guess - lapse) * cdf(direction * (grid - threshold) / s)
