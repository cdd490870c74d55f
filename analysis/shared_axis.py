"""Curves of three kinds of observer on one normalised axis per sweep, for the TRA figures.

One fixed rule per kind of observer, never a per-observer rescaling that would stretch a
near-chance curve to [0, 1] (:data:`NORMALISATIONS`): psychometric curves (people, VLMs) as
above-chance accuracy (P - chance) / (1 - chance), i.e. 2 P(correct) - 1; TRA curves as each
model's level means (the data, not the fitted bump, whose sign flips between bump and dip on
lopsided curves), divided by the largest |level mean| on the sweep of any model whose level
means are distinguishable from 0 by a one-way F test across clips
(:func:`analysis.tra_peak.tra_level_test`), and flat at 0, noted "not distinguishable from
0", otherwise.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.sweep_fits import is_drawn, psychometric_values

NORMALISATIONS = {  # the rule per observer kind, stated in the figure caption and docs/analysis.md
    "psychometric": "above-chance accuracy (P - chance) / (1 - chance), i.e. 2 P(correct) - 1 "
                    "at chance 0.5: 0 = chance, 1 = always right, not rescaled per observer",
    "tra": "TRA level means / the largest |level mean| on the sweep of any model whose level "
           "means are distinguishable from 0 (one-way F test that all are 0, p < 0.05); flat "
           "at 0, noted \"not distinguishable from 0\", otherwise; not comparable with the "
           "accuracy scale",
}


def _psychometric_curve(row: pd.Series, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if row["status"] == "flat":  # one level everywhere, no threshold: drawn at that level
        curve = np.full(len(grid), float(row["curve_min"]))
    else:
        curve = psychometric_values(row["threshold"], row["width"], row["direction"], grid,
                                    row["sigmoid"], row["guess"], row["lapse"])
    return curve, above_chance(curve, row["chance"])


def above_chance(p, guess: float):
    """(P - guess) / (1 - guess): 0 at chance, 1 always right, below 0 worse than chance."""
    return (np.asarray(p, float) - guess) / (1 - guess)


NOT_DISTINGUISHABLE = "not distinguishable from 0"
FLAT_NOTE = "flat: no threshold"


def normalised_curves(fits: pd.DataFrame, keys=("observer",), n_points: int = 101,
                      scale_by=("scenario", "parameter")) -> pd.DataFrame:
    """Each observer's curve across its sweep, normalised for a shared axis.

    ``fits`` is a :func:`~analysis.psychometric.psychometric_table` or
    :func:`~analysis.tra_peak.tra_peak_table` result (rows whose status
    :func:`~analysis.sweep_fits.is_drawn` accepts are drawn; "flat" ones at their level). Returns ``keys`` present, ``level``, ``value`` (P,
    or TRA in percent), ``value_normalised``, ``normalisation`` (the rule, from
    :data:`NORMALISATIONS`) and ``note`` (:data:`NOT_DISTINGUISHABLE` for a TRA curve drawn
    flat, :data:`FLAT_NOTE` for a flat psychometric one, else "").

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
    drawn = fits[fits["status"].map(is_drawn)]
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
            kind, note = "psychometric", FLAT_NOTE if row["status"] == "flat" else ""
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
