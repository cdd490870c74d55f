"""VLMs over a physical sweep: P(correct) per clip from P(forward) from logits, the two label
orders averaged (:func:`vlm_clip_correct`), and a sigmoid with both asymptotes free fitted
to it by least squares (:func:`fit_probability_curve`): a model may sit below chance, level
off at 0.7, fall, or not change at all. Its intervals are percentile bootstrap intervals as
for one participant (``analysis.psychometric``), resampling a source clip's two copies
together where a level has enough source clips.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.sweep_fits import (
    SIGMOIDS,
    WIDTH_ALPHA,
    block_labels,
    fit_limits,
    fit_row,
    interval_method,
    percentile_intervals,
    profiled_least_squares,
    resample_levels,
    sweep_values,
)

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
    span, wmin, wmax = fit_limits(x, width_min)
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
    Returned with the columns of :func:`analysis.psychometric.fit_psychometric` (``guess``
    and ``lapse`` are the lower asymptote and 1 - the upper one; ``direction`` -1 where
    c < a), ``chance`` as given. ``block``, ``ci`` and ``n_boot`` as there; a resample's
    best fit on the grid's edge counts in ``boot_at_bound``, and the fit's own on the edge
    sets ``at_bound``. Where the percentile interval of the curve's rise, c - a, holds 0 (a
    model at one level everywhere, e.g. 0.7), the curve has no threshold: ``flat`` is True,
    threshold, width, ``guess`` and ``lapse`` are NaN, ``direction`` 0, and ``curve_min`` =
    ``curve_max`` is its mean level, at which it is drawn. Needs at least 5 levels (4
    parameters); raises ValueError otherwise.
    """
    # four parameters: at least one level more, or any curve through the means fits exactly
    values = sweep_values(data, level, dv, min_levels=5, must_vary=False)
    lv, y = values[level].to_numpy(float), values[dv].to_numpy(float)
    x = np.unique(lv)
    n = np.array([(lv == v).sum() for v in x], float)
    means = np.array([y[lv == v].mean() for v in x])
    sums, counts, by_blocks = resample_levels(x, lv, y, n_boot, rng, block_labels(data, block))

    def curves(m, w) -> dict:
        t, wd, low, high, edge = _sigmoid_least_squares(x, m, w, width_min, sigmoid)
        return {"threshold": t, "width": wd, "direction": np.where(high >= low, 1, -1),
                "guess": np.minimum(low, high), "lapse": 1 - np.maximum(low, high),
                "rise": high - low, "at_bound": edge}

    est = {name: v[0] for name, v in curves(means[None], n).items()}
    boot = curves(sums / counts, counts)
    out = fit_row(est, percentile_intervals(boot, ("threshold", "width"), ci), x, width_min,
                   sigmoid, boot) | {"flat": False, "asymptotes": "both estimated (least squares)",
                                     "interval": interval_method(by_blocks, len(x))}
    rise_lo, rise_hi = percentile_intervals(boot, ("rise",), ci)["rise"]
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
