"""Self-supervised video models over a physical sweep: the TRA curve's peak, and the test
that a model's TRA differs from 0 at all.

TRA (temporal reversal asymmetry, ``analysis.tra``) is not monotonic in the parameter: the TRA
paper finds a peak at restitution 0.5 and damping 2.0. :func:`tra_peak_table` fits a Gaussian
bump per model and sweep, with percentile bootstrap intervals for its location and height
(no closed form exists for the location), and :func:`tra_level_test` tests the level means
themselves, which decides whether a curve is drawn (``analysis.shared_axis``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis.sweep_fits import ends_at_limit, fit_status, profiled_least_squares

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


def _bump_grid(x, n_mu=201, n_sigma=30):
    span = x.max() - x.min()
    mu, sigma = np.meshgrid(np.linspace(x.min(), x.max(), n_mu),
                            np.geomspace(np.diff(x).min() / 2, span / 2, n_sigma))
    return mu.ravel(), sigma.ravel()


def _fit_bumps(x, means, n, grid):
    """Least-squares Gaussian bump b + h exp(-(x - mu)^2 / 2 sigma^2) for each row of
    ``means`` (level means, weights n), profiled over the (mu, sigma) grid: rows of
    (mu, sigma, b, h)."""
    mu, sigma = grid
    best, b, h = profiled_least_squares(means, n, np.exp(-0.5 * ((x[:, None] - mu) / sigma) ** 2))
    return np.c_[mu[best], sigma[best], b, h]


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
