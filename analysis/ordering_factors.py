"""Frame ordering by EGO-FLIGHT factor: each of the nine conditions varies one factor
(number of frames, temporal span, annotation, hints) from the original (4 frames, medium span,
brief annotation, no hints), so the conditions are drawn one panel per factor, the original
in every panel, each observer with a 95% interval (participants resampled for people, clips
for models).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import nonresponse
from analysis.ordering import (
    apply_nonresponse_policy,
    ordering_trial_scores,
)

FACTORS = (("frames", "n_frames"), ("span", "span"), ("annotation", "annotation"),
           ("hints", "hint_positions"))
FACTOR_METRICS = ("kendall_tau", "exact_match")


def condition_factors(conditions=None) -> pd.DataFrame:
    """The ordering conditions laid out by the one factor each varies from the original.

    Parameters
    ----------
    conditions : sequence of OrderingCondition, optional
        Default :data:`experiments.designs.EGO_FLIGHT_CONDITIONS`. The original is the
        condition with every factor at its default (4 frames, medium span, brief
        annotation, no hints); each other condition must differ from it in one factor.

    Returns
    -------
    pandas.DataFrame
        ``factor`` (:data:`FACTORS` order), ``level``, ``condition`` and ``original``; the
        original is a level of every factor, so it is listed once per factor.
    """
    from experiments.designs import EGO_FLIGHT_CONDITIONS
    from experiments.trial_types.frame_order import ANNOTATIONS, SPANS, OrderingCondition

    conditions = EGO_FLIGHT_CONDITIONS if conditions is None else conditions
    default = OrderingCondition("original")
    fields = [field for _, field in FACTORS]
    values = {c.name: [getattr(c, f) for f in fields] for c in conditions}
    base = [getattr(default, f) for f in fields]
    originals = [name for name, v in values.items() if v == base]
    if len(originals) != 1:
        raise ValueError(f"expected one original condition, found {originals}")
    order: dict[str, Callable] = {"span": SPANS.index, "annotation": ANNOTATIONS.index,
             "hint_positions": lambda h: (len(h), h), "n_frames": int}
    rows = []
    for i, (factor, field) in enumerate(FACTORS):
        varied = [name for name, v in values.items()
                  if all(x == b for j, (x, b) in enumerate(zip(v, base)) if j != i)]
        for name in sorted(varied, key=lambda n: order[field](values[n][i])):
            rows.append({"factor": factor, "level": _level(field, values[name][i]),
                         "condition": name, "original": name == originals[0]})
    unplaced = set(values) - {r["condition"] for r in rows}
    if unplaced:
        raise ValueError(f"conditions vary more than one factor: {sorted(unplaced)}")
    return pd.DataFrame(rows)


def _level(field: str, value) -> str:
    if field == "hint_positions":
        return "&".join(str(h + 1) for h in value) or "none"
    return str(value)


def ordering_by_factor(data: pd.DataFrame, scores: pd.DataFrame | None = None,
                       policy: str = nonresponse.DEFAULT_POLICY, n_boot: int = 1000,
                       rng: np.random.Generator | None = None, ci: float = 0.95,
                       metrics: Sequence[str] = FACTOR_METRICS) -> pd.DataFrame:
    """Mean ordering metrics per observer, factor and level, with bootstrap CIs.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials with an ``observer`` column (people are ``"human"``).
    scores : pandas.DataFrame, optional
        :func:`ordering_trial_scores` of the ``frame_order`` rows, when already computed.
    policy : str
        Non-response policy (see :func:`nonresponse_scores`).
    n_boot, rng, ci
        Resamples, their generator (``default_rng(0)`` when omitted) and the level.
    metrics : sequence of str
        Of :data:`TRIAL_METRICS`.

    Returns
    -------
    pandas.DataFrame
        ``observer, factor, level, condition, original, n_trials``, ``n_resampled``
        (participants or clips), ``ci_method`` (``"participant"`` or ``"clip"``, as
        :data:`analysis.bootstrap.SCHEME_LABELS` names them), then per metric its mean,
        ``<metric>_ci_low`` and ``<metric>_ci_high``, then ``n_boot``. Rows of conditions
        outside :func:`condition_factors` are left out; the original condition's row is
        repeated in every factor.

    Notes
    -----
    Percentile intervals. People (pooled) resample participants; a model, which has no
    participants, resamples clips (``source_clip_id``). Observers are drawn in sorted
    order, each with one draw of multiplicities ``w`` (``rng.integers(0, n, (n_boot, n))``
    counted per unit, units sorted) shared by its conditions and metrics; a resample's
    mean in a condition is :math:`\\sum_u w_u S_u / \\sum_u w_u N_u`, with :math:`S_u`,
    :math:`N_u` the unit's sum and number of scored trials there.
    """
    rows = data[data["trial_type"] == C.FRAME_ORDER]
    table = apply_nonresponse_policy(ordering_trial_scores(rows) if scores is None
                                     else scores, policy)
    layout = condition_factors()
    condition = pd.Series([e.get(C.EXTRA_CONDITION) if isinstance(e, dict) else None
                           for e in rows["extra"]], index=rows.index)
    keep = condition.isin(set(layout["condition"])).to_numpy()
    rows, table, condition = rows[keep], table[keep], condition[keep]
    columns = ["observer", *layout.columns, "n_trials", "n_resampled", "ci_method",
               *[f"{m}{s}" for m in metrics for s in ("", "_ci_low", "_ci_high")], "n_boot"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    rng = np.random.default_rng(0) if rng is None else rng
    names = sorted(layout["condition"].unique())
    cond = pd.Categorical(condition, categories=names).codes
    parts = []
    for observer in sorted(rows["observer"].unique()):
        mine = (rows["observer"] == observer).to_numpy()
        unit = "subject_id" if observer == C.HUMAN else "source_clip_id"
        out = _resampled_means(table[mine], cond[mine], rows.loc[mine, unit], len(names),
                               metrics, n_boot, rng, ci)
        out.insert(0, "observer", observer)
        out.insert(1, "condition", names)
        out["ci_method"] = "participant" if observer == C.HUMAN else "clip"
        parts.append(out[out["n_trials"] > 0])
    by_condition = pd.concat(parts, ignore_index=True)
    merged = layout.assign(_position=range(len(layout))).merge(by_condition, on="condition")
    merged["n_boot"] = n_boot
    return (merged.sort_values(["observer", "_position"], kind="stable")
            .loc[:, columns].reset_index(drop=True))


def _resampled_means(scores: pd.DataFrame, cond: np.ndarray, units: pd.Series, n_cond: int,
                     metrics, n_boot: int, rng: np.random.Generator, ci: float) -> pd.DataFrame:
    """One observer's mean and percentile CI of each metric per condition code, resampling
    ``units`` (one draw shared by conditions and metrics)."""
    from analysis.bootstrap import resample_counts, unit_codes
    from analysis.intervals import nan_percentiles

    codes, n_units = unit_codes(units)
    weights = resample_counts(rng, n_units, n_boot).astype(float)
    out = pd.DataFrame({"n_trials": np.bincount(cond, minlength=n_cond),
                        "n_resampled": n_units})
    lo_q, hi_q = 100 * (1 - ci) / 2, 100 * (1 + ci) / 2
    for m in metrics:
        values = scores[m].to_numpy(float)
        ok = np.isfinite(values)  # the policy "excluded" leaves non-responses NaN
        flat = codes[ok] * n_cond + cond[ok]
        sums = np.bincount(flat, values[ok], n_units * n_cond).reshape(n_units, n_cond)
        counts = np.bincount(flat, None, n_units * n_cond).reshape(n_units, n_cond)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[m] = sums.sum(0) / counts.sum(0)
            boot = (weights @ sums) / (weights @ counts)
        out[f"{m}_ci_low"], out[f"{m}_ci_high"] = nan_percentiles(boot.T, lo_q, hi_q)
    return out
