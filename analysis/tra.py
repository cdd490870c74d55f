"""Temporal Reversal Asymmetry statistics from per-clip TRA values (the TRA paper's tables).

Input rows follow :data:`analysis.columns.TRA_COLUMNS`: one per model x clip x context
length, with ``process`` "low_dissipation" or "dissipative", a ``scenario`` and, for the
continuous probes, a ``parameter`` and ``parameter_value``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis import columns as C


def tra_values(loss_forward, loss_reversed):
    """TRA = (L(reversed) - L(forward)) / L(forward) (Vesesook & Yang, eq. 1)."""
    lf, lr = np.asarray(loss_forward, float), np.asarray(loss_reversed, float)
    if np.any(lf <= 0):
        raise ValueError("forward losses must be positive")
    return (lr - lf) / lf


def _check(data: pd.DataFrame, needed: tuple[str, ...]) -> pd.DataFrame:
    missing = [c for c in needed if c not in data.columns]
    if missing:
        raise ValueError(f"TRA table lacks column(s): {', '.join(missing)}")
    if "tra" not in data.columns or data["tra"].isna().all():
        data = data.assign(tra=tra_values(data["loss_forward"], data["loss_reversed"]))
    return data


def tra_process_table(data: pd.DataFrame, by=("model", "context_frames")) -> pd.DataFrame:
    """Low-dissipation vs dissipative TRA with a Welch t-test (TRA paper, Tables 1-7).

    Returns
    -------
    pandas.DataFrame
        ``by`` columns, ``n_low``, ``n_dissipative``, ``tra_low_pct``,
        ``tra_dissipative_pct``, ``difference_pct`` (percent, as the paper prints them),
        ``t``, ``p``, ``cohens_d``.

    Notes
    -----
    Welch's t-test of dissipative against low-dissipation clips; Cohen's d uses the pooled
    SD. A model with physically grounded time has difference > 0. Where neither group
    varies and their means differ, t and d are infinite (signed) and p is 0, as the paper
    prints t = inf (Table 8); where the means are also equal they are undefined (NaN).

    References
    ----------
    .. [1] Vesesook & Yang. Temporal Reversal Asymmetry: a physics-inspired metric for
       evaluating world models. Table 1.
    """
    by = [c for c in by if c in data.columns]
    data = _check(data, ("process",))
    unknown = set(data["process"].dropna()) - set(C.TRA_PROCESSES)
    if unknown:
        raise ValueError(f"unknown process value(s): {sorted(unknown)}")
    rows = []
    groups = data.groupby(by) if by else [((), data)]
    for key, part in groups:
        low = part.loc[part["process"] == "low_dissipation", "tra"].to_numpy(float)
        dis = part.loc[part["process"] == "dissipative", "tra"].to_numpy(float)
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        row.update(n_low=len(low), n_dissipative=len(dis),
                   tra_low_pct=100 * low.mean() if len(low) else np.nan,
                   tra_dissipative_pct=100 * dis.mean() if len(dis) else np.nan)
        row["difference_pct"] = row["tra_dissipative_pct"] - row["tra_low_pct"]
        row["t"], row["p"], row["cohens_d"] = _welch(dis, low)
        rows.append(row)
    return pd.DataFrame(rows)


def _constant(values: np.ndarray) -> bool:
    """No variance at all: every value identical (np.var of equal floats can be 1e-38)."""
    return np.ptp(values) == 0


def _infinite(difference: float, n_stats: int):
    """t (and d) of a difference with zero variance: signed infinity, p = 0."""
    if difference == 0:
        return (np.nan,) * n_stats
    return (float(np.copysign(np.inf, difference)), 0.0) + \
        (float(np.copysign(np.inf, difference)),) * (n_stats - 2)


def _welch(a: np.ndarray, b: np.ndarray):
    if len(a) < 2 or len(b) < 2:
        return np.nan, np.nan, np.nan
    if _constant(a) and _constant(b):
        return _infinite(a[0] - b[0], 3)
    t, p = stats.ttest_ind(a, b, equal_var=False)
    pooled = np.sqrt(((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1))
                     / (len(a) + len(b) - 2))
    return float(t), float(p), float((a.mean() - b.mean()) / pooled) if pooled > 0 else np.nan


def tra_scenario_table(data: pd.DataFrame, by=("model", "context_frames")) -> pd.DataFrame:
    """TRA per scenario with a one-sample t-test against 0 (TRA paper, Table 8).

    Returns
    -------
    pandas.DataFrame
        ``by`` columns, ``scenario``, ``process``, ``n``, ``tra_pct``, ``t``, ``p``.

    Notes
    -----
    Where every clip of a scenario has the same nonzero TRA, t is infinite (signed) and
    p is 0, as the paper prints for dominos (t = inf, Table 8); all-zero TRA gives NaN.
    """
    by = [c for c in by if c in data.columns]
    data = _check(data, ("scenario",))
    rows = []
    keys = by + ["scenario"] + (["process"] if "process" in data.columns else [])
    for key, part in data.groupby(keys, dropna=False):
        values = part["tra"].to_numpy(float)
        row = dict(zip(keys, key))
        row.update(n=len(values), tra_pct=100 * values.mean())
        row["t"], row["p"] = _one_sample(values)
        rows.append(row)
    return pd.DataFrame(rows)


def _one_sample(values: np.ndarray) -> tuple[float, float]:
    if len(values) < 2:
        return np.nan, np.nan
    if _constant(values):
        return _infinite(values[0], 2)
    t, p = stats.ttest_1samp(values, 0.0)
    return float(t), float(p)


def tra_parameter_table(data: pd.DataFrame, by=("model", "context_frames")) -> pd.DataFrame:
    """Mean TRA by physical parameter value, with the peak marked (TRA paper, Table 9).

    Returns
    -------
    pandas.DataFrame
        ``by`` columns, ``scenario``, ``parameter``, ``parameter_value``, ``n``,
        ``tra_pct``, ``is_peak`` (the largest mean TRA within its scenario and parameter).
    """
    by = [c for c in by if c in data.columns]
    data = _check(data, ("scenario", "parameter", "parameter_value"))
    data = data[data["parameter"].notna()]
    keys = by + ["scenario", "parameter", "parameter_value"]
    out = data.groupby(keys).agg(n=("tra", "size"), tra_pct=("tra", "mean")).reset_index()
    out["tra_pct"] *= 100
    peak = out.groupby(by + ["scenario", "parameter"])["tra_pct"].transform("max")
    out["is_peak"] = out["tra_pct"] == peak
    return out
