"""Bootstrap confidence intervals clustered by source clip, vectorised over resamples."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from analysis import aot

DEFAULT_METRICS = ("accuracy", "f1_forward", "f1_backward", "forward_share", "d_prime",
                   "criterion")


def cluster_bootstrap_ci(data: pd.DataFrame, by: Sequence[str] | str = (),
                         cluster: str = "source_clip_id", n_boot: int = 1000,
                         ci: float = 0.95, rng: np.random.Generator | None = None,
                         metrics: Sequence[str] = DEFAULT_METRICS,
                         correction: str = "loglinear") -> pd.DataFrame:
    """Percentile bootstrap CIs of arrow-of-time metrics, resampling whole clips.

    Trials of one clip (forward and reversed, every subject) are not independent, so the
    unit of resampling is the clip: each resample draws clips with replacement and keeps
    all their trials. One draw of clips serves every group, so group differences keep
    their correlation.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials (excluded rows already removed).
    by : str or sequence of str
        Groups, as in :func:`analysis.aot.aot_metrics` (``"category"`` allowed).
    cluster : str
        Column whose values are resampled; default ``source_clip_id``.
    n_boot : int
        Number of resamples.
    ci : float
        Coverage of the interval, e.g. 0.95.
    rng : numpy.random.Generator, optional
        Source of randomness; ``numpy.random.default_rng(0)`` when omitted.
    metrics : sequence of str
        Which of :data:`analysis.aot.METRIC_COLUMNS` to bootstrap.
    correction : str
        Passed to :func:`analysis.aot.metrics_from_counts`.

    Returns
    -------
    pandas.DataFrame
        ``by`` columns, then for every metric ``m``: ``m`` (the point estimate on all
        data), ``m_ci_low`` and ``m_ci_high``.

    Notes
    -----
    Per-cluster counts :math:`C_{gk\\cdot}` (group g, clip k, six cells) are computed once;
    a resample is a vector of multiplicities :math:`w_{bk} \\sim Mult(K, 1/K)`, and the
    resampled counts are :math:`\\sum_k w_{bk} C_{gk\\cdot}` -- one tensor product for all
    resamples, groups and cells. Intervals are the :math:`(1 \\pm ci)/2` percentiles,
    ignoring resamples where a metric is undefined.

    References
    ----------
    .. [1] Field, C. A. & Welsh, A. H. (2007). Bootstrapping clustered data. JRSS B 69(3).
    .. [2] Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> df = pd.DataFrame({"source_clip_id": list("aabb"), "correct_response": list("FBFB"),
    ...                    "response": list("FFBB")})
    >>> out = cluster_bootstrap_ci(df, n_boot=200, rng=np.random.default_rng(1))
    >>> float(out.accuracy[0])
    0.5
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be positive, got {n_boot}")
    unknown = set(metrics) - set(aot.METRIC_COLUMNS)
    if unknown:
        raise ValueError(f"unknown metric(s): {sorted(unknown)}")
    rng = np.random.default_rng(0) if rng is None else rng
    by = [by] if isinstance(by, str) else list(by)
    counts = aot.confusion_counts(data, by + [cluster])
    if counts.empty:
        raise ValueError("no arrow-of-time trials to bootstrap")
    groups, tensor = _count_tensor(counts, by, cluster)
    n_clusters = tensor.shape[1]
    weights = rng.multinomial(n_clusters, np.full(n_clusters, 1 / n_clusters), size=n_boot)
    boot = np.einsum("bk,gkc->gbc", weights.astype(float), tensor)
    boot_metrics = aot.metrics_from_counts(
        {c: boot[..., i] for i, c in enumerate(aot.COUNT_COLUMNS)}, correction)
    point = aot.metrics_from_counts(
        {c: tensor.sum(axis=1)[:, i] for i, c in enumerate(aot.COUNT_COLUMNS)}, correction)
    lo_q, hi_q = 100 * (1 - ci) / 2, 100 * (1 + ci) / 2
    out = groups.copy()
    for m in metrics:
        values = np.where(np.isfinite(boot_metrics[m]), boot_metrics[m], np.nan)
        out[m] = point[m]
        with np.errstate(all="ignore"):
            out[f"{m}_ci_low"], out[f"{m}_ci_high"] = _nan_percentiles(values, lo_q, hi_q)
    return out


def _count_tensor(counts: pd.DataFrame, by: list[str], cluster: str):
    """(groups frame, array of shape groups x clusters x 6 cells)."""
    # Trials without a cluster id (e.g. no clip recorded) are resampled together as one.
    cluster_codes, _ = pd.factorize(counts[cluster], use_na_sentinel=False)
    n_clusters = cluster_codes.max() + 1 if len(cluster_codes) else 0
    if by:
        group_codes, group_index = pd.factorize(
            pd.MultiIndex.from_frame(counts[by].astype(object)), sort=True)
        groups = group_index.to_frame(index=False)
        groups.columns = by
    else:
        group_codes = np.zeros(len(counts), dtype=int)
        groups = pd.DataFrame(index=[0])
    tensor = np.zeros((len(groups), n_clusters, len(aot.COUNT_COLUMNS)))
    tensor[group_codes, cluster_codes] = counts[list(aot.COUNT_COLUMNS)].to_numpy(float)
    return groups, tensor


def _nan_percentiles(values: np.ndarray, lo_q: float, hi_q: float):
    """Percentiles along the resample axis; NaN where every resample is undefined."""
    all_nan = np.isnan(values).all(axis=1)
    filled = np.where(all_nan[:, None], 0.0, values)
    lo, hi = np.nanpercentile(filled, [lo_q, hi_q], axis=1)
    lo[all_nan] = np.nan
    hi[all_nan] = np.nan
    return lo, hi
