"""Bootstrap confidence intervals for crossed participant x clip designs, vectorised.

People and clips are both samples: a person's answers are correlated across clips and a
clip's across people. The default ``"two-way"`` scheme resamples both at once; models, the
only subject of their own stratum, keep weight 1, so their intervals are the clip bootstrap.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from analysis import aot, loading
from analysis.intervals import EXACT_NOTE, exact_bounds, nan_percentiles, no_spread

DEFAULT_METRICS = ("accuracy", "f1_forward", "f1_backward", "forward_share", "d_prime",
                   "criterion")
SCHEMES = ("two-way", "subject", "item")
SCHEME_LABELS = {"two-way": "participant x clip (two-way)", "subject": "participant",
                 "item": "clip"}
# Above this many dense (subject x group-item) cells a sparse product is used instead.
MAX_DENSE_CELLS = 20_000_000
# Fewest participants a between-participant spread (an interval or test over people, a
# random-effect variance) is estimated from; with fewer the report says so instead.
# bench/null_fpr.py, true nulls at alpha 0.05 (500 studies a cell, 40 clips): the two-way
# test rejected 10.6% with 3 people and 5.8% with 5 when clips were alike; 3.6-4.8% from
# 5 on when they differed (clip SD 1 logit), where a t-test over people rejected 8-19%.
MIN_PARTICIPANTS = 5
# Shares of trials: where their draws have no spread (every answer right, say) the
# percentile interval is one point, and an exact binomial bound over units replaces it.
PROPORTIONS = ("accuracy", "forward_share")


def too_few_people(n_people: int) -> str | None:
    """What is missing to estimate anything over participants from ``n_people``, e.g.
    ``"needs at least 5 participants (the study has 2)"``; None when enough."""
    return (f"needs at least {MIN_PARTICIPANTS} participants (the study has {n_people})"
            if n_people < MIN_PARTICIPANTS else None)


@dataclass
class Draws:
    """Point estimates and resampled metrics of every group.

    ``point[m]`` has one value per row of ``groups``; ``boot[m]`` is groups x resamples.
    ``schemes`` says per group what was resampled (``"item"`` for a one-subject stratum);
    ``n_units`` the fewest units of a resampled factor per group (participants or clips).
    """

    groups: pd.DataFrame
    point: dict
    boot: dict
    schemes: np.ndarray
    n_boot: int
    scheme: str
    n_units: np.ndarray


def bootstrap_draws(data: pd.DataFrame, by: Sequence[str] | str = (), scheme: str = "two-way",
                    cluster: str = "source_clip_id", subject: str = "subject_id",
                    strata: str | None = None, n_boot: int = 1000,
                    rng: np.random.Generator | None = None,
                    correction: str = "loglinear") -> Draws:
    """Resampled arrow-of-time metrics per group; see :func:`cluster_bootstrap_ci`."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be positive, got {n_boot}")
    by = [by] if isinstance(by, str) else list(by)
    if strata is not None and strata not in by:
        raise ValueError(f"strata {strata!r} must be one of the by columns {by}")
    rng = np.random.default_rng(0) if rng is None else rng
    trials = _trials(data, by, [cluster] + ([subject] if scheme != "item" else []))
    groups, g = _group_codes(trials, by)
    k, n_items = unit_codes(trials[cluster])
    cell = aot.answer_cells(trials)
    n_cells = len(aot.COUNT_COLUMNS)
    # Items are drawn first, once for every group, so differences between groups keep
    # their correlation; then subjects within each stratum (strata and ids sorted).
    item_w = resample_counts(rng, n_items, n_boot)
    boot = np.zeros((len(groups), n_boot, n_cells))
    schemes = np.full(len(groups), "item", dtype=object)
    if scheme == "item":
        _item_only(boot, g, k, cell, item_w)
    else:
        group_stratum, n_strata = (unit_codes(groups[strata]) if strata is not None
                                   else (np.zeros(len(groups), dtype=np.int64), 1))
        s_codes = group_stratum[g]
        p_all, n_subjects = unit_codes(trials[subject])
        for s in range(n_strata):
            rows = np.flatnonzero(s_codes == s)
            subjects, p = _dense_codes(p_all[rows], n_subjects)
            if len(subjects) == 1:  # a model: its one subject always has weight 1
                _item_only(boot, g[rows], k[rows], cell[rows], item_w)
                continue
            subj_w = resample_counts(rng, len(subjects), n_boot)
            use_items = item_w if scheme == "two-way" else np.ones_like(item_w)
            _crossed(boot, g[rows], k[rows], p, cell[rows], subj_w, use_items)
            schemes[np.unique(g[rows])] = scheme
    total = np.bincount(g * n_cells + cell, minlength=len(groups) * n_cells).reshape(
        len(groups), n_cells).astype(float)
    clips = _distinct(g, k, n_items, trials[cluster].notna().to_numpy(), len(groups))
    if scheme != "item":
        people = _distinct(g, p_all, n_subjects, trials[subject].notna().to_numpy(),
                           len(groups))
    n_units = clips if scheme == "item" else np.where(
        schemes == "item", clips, people if scheme == "subject"
        else np.minimum(people, clips))
    as_dict = lambda arr: {c: arr[..., i] for i, c in enumerate(aot.COUNT_COLUMNS)}  # noqa: E731
    return Draws(groups=groups, point=aot.metrics_from_counts(as_dict(total), correction),
                 boot=aot.metrics_from_counts(as_dict(boot), correction), schemes=schemes,
                 n_boot=n_boot, scheme=scheme, n_units=n_units)


def _distinct(g: np.ndarray, codes: np.ndarray, n: int, present: np.ndarray,
              n_groups: int) -> np.ndarray:
    """Distinct non-missing units per group, from the codes already drawn from (a groupby
    ``nunique`` would hash the ids again)."""
    pairs = np.unique(g[present].astype(np.int64) * n + codes[present])
    return np.bincount(pairs // n, minlength=n_groups)


def _trials(data: pd.DataFrame, by: list[str], needed: list[str]) -> pd.DataFrame:
    missing = [c for c in needed if c not in data.columns]
    if missing:
        raise ValueError(f"the bootstrap needs column(s) {', '.join(missing)}")
    trials = loading.aot_trials(data)
    if "category" in by and "category" not in trials.columns:
        cols = [c for c in ("categories", "correct_response", "response", *by, *needed)
                if c in trials.columns]
        trials = loading.explode_categories(trials, columns=list(dict.fromkeys(cols)))
    if trials.empty:
        raise ValueError("no arrow-of-time trials to bootstrap")
    return trials


def _group_codes(trials: pd.DataFrame, by: list[str]):
    if not by:
        return pd.DataFrame(index=[0]), np.zeros(len(trials), dtype=np.int64)
    grouper = trials.groupby(by, sort=True, observed=True, dropna=False)
    return grouper.size().index.to_frame(index=False), grouper.ngroup().to_numpy()


def unit_codes(values) -> tuple[np.ndarray, int]:
    """``(codes, n)``: each row's resampling unit (participant, clip) as a code into the
    sorted distinct units; sorted, so draws can be reproduced by hand. Missing ids are one
    more unit (the last)."""
    values = values if isinstance(values, pd.Series) else pd.Series(values, dtype=object)
    codes, uniques = pd.factorize(values, sort=True)
    missing = codes < 0
    if missing.any():
        codes = np.where(missing, len(uniques), codes)
        return codes, len(uniques) + 1
    return codes, len(uniques)


def resample_counts(rng: np.random.Generator, n: int, n_boot: int) -> np.ndarray:
    """Multiplicities of ``n`` units in ``n_boot`` resamples (n_boot x n), each row the
    counts of ``n`` uniform draws with replacement: ``rng.integers(0, n, (n_boot, n))``."""
    draws = rng.integers(0, n, size=(n_boot, n))
    draws += (np.arange(n_boot) * n)[:, None]
    return np.bincount(draws.ravel(), minlength=n_boot * n).reshape(n_boot, n)


def _dense_codes(key: np.ndarray, size: int):
    """(sorted distinct values of ``key`` in [0, size), each row's index among them):
    np.unique without the sort, for keys from a small range."""
    present = np.bincount(key, minlength=size) > 0
    values = np.flatnonzero(present)
    lookup = np.cumsum(present) - 1
    return values, lookup[key]


def _pairs(g: np.ndarray, k: np.ndarray, n_items: int):
    """(group, item) pairs present, sorted by group, and each row's pair index."""
    n_groups = int(g.max()) + 1 if len(g) else 0
    keys, j = _dense_codes(g.astype(np.int64) * n_items + k, n_groups * n_items)
    return keys // n_items, keys % n_items, j


def _item_only(boot, g, k, cell, item_w) -> None:
    """boot[g, b] += sum over the group's items of v_bk x the item's counts."""
    n_cells = boot.shape[2]
    pair_g, pair_k, j = _pairs(g, k, item_w.shape[1])
    per_pair = np.bincount(j * n_cells + cell, minlength=len(pair_g) * n_cells).reshape(
        len(pair_g), n_cells).astype(float)
    weighted = item_w[:, pair_k].astype(float)  # resamples x pairs
    _sum_by_group(boot, pair_g, weighted[:, :, None] * per_pair[None])


def _crossed(boot, g, k, p, cell, subj_w, item_w) -> None:
    """boot[g, b] += sum_{p, j in g} w_bp v_bk(j) C[p, j]: one matrix product per stratum.

    ``j`` runs over the (group, item) pairs of the stratum; ``M = W C`` (resamples x pairs x
    cells) sums over subjects first, then item weights and a sum within groups finish it.
    """
    from scipy import sparse

    n_cells, n_subj = boot.shape[2], subj_w.shape[1]
    pair_g, pair_k, j = _pairs(g, k, item_w.shape[1])
    width = len(pair_g) * n_cells
    flat = (p.astype(np.int64) * len(pair_g) + j) * n_cells + cell
    # Integer counts and weights stay exact in float32 while totals are below 2**24.
    dtype = np.float32 if len(cell) * max(1, subj_w.max()) < 2 ** 24 else np.float64
    if n_subj * width <= MAX_DENSE_CELLS:
        dense = np.bincount(flat, minlength=n_subj * width).astype(dtype).reshape(n_subj, width)
        m = subj_w.astype(dtype) @ dense
    else:
        uniq, n = np.unique(flat, return_counts=True)
        mat = sparse.csc_matrix((n.astype(float), (uniq // width, uniq % width)),
                                shape=(n_subj, width))
        m = np.asarray((mat.T @ subj_w.T.astype(float)).T)
    m = m.reshape(len(subj_w), len(pair_g), n_cells)
    _sum_by_group(boot, pair_g, m * item_w[:, pair_k, None].astype(dtype))


def _sum_by_group(boot, pair_g, values) -> None:
    """boot[group] += values summed over the pairs of each group (pairs sorted by group)."""
    starts = np.flatnonzero(np.r_[True, pair_g[1:] != pair_g[:-1]])
    boot[pair_g[starts]] += np.add.reduceat(values, starts, axis=1).transpose(1, 0, 2)


def subject_mean_draws(data: pd.DataFrame, metrics: Sequence[str] = ("accuracy", "d_prime",
                                                                        "criterion"),
                       scheme: str = "two-way", cluster: str = "source_clip_id",
                       subject: str = "subject_id", n_boot: int = 1000,
                       rng: np.random.Generator | None = None, correction: str = "loglinear",
                       chunk: int = 250) -> dict:
    """Resampled means over subjects of per-subject metrics (e.g. the mean of each person's d').

    The same draws as :func:`cluster_bootstrap_ci` (items, then subjects; ids sorted):
    each resample recomputes every subject's metric from its item-weighted counts, then
    averages subjects with their multiplicities. Returns metric -> array of ``n_boot``.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    rng = np.random.default_rng(0) if rng is None else rng
    trials = _trials(data, [], [cluster, subject])
    k, n_items = unit_codes(trials[cluster])
    p, n_subj = unit_codes(trials[subject])
    n_cells = len(aot.COUNT_COLUMNS)
    item_w = resample_counts(rng, n_items, n_boot)
    subj_w = resample_counts(rng, n_subj, n_boot)
    if scheme == "subject":
        item_w = np.ones_like(item_w)
    if scheme == "item":
        subj_w = np.ones_like(subj_w)
    flat = (k.astype(np.int64) * n_subj + p) * n_cells + aot.answer_cells(trials)
    # Integer counts times integer weights: exact in float32 while below 2**24.
    dtype: type[np.floating] = (np.float32 if len(trials) * item_w.max() < 2 ** 24
                                 else np.float64)
    counts = np.bincount(flat, minlength=n_items * n_subj * n_cells).reshape(
        n_items, n_subj * n_cells).astype(dtype)
    out = {m: np.empty(n_boot) for m in metrics}
    for start in range(0, n_boot, chunk):
        b = slice(start, start + chunk)
        per = (item_w[b].astype(dtype) @ counts).reshape(-1, n_subj, n_cells)
        values = aot.metrics_from_counts(
            {c: per[..., i] for i, c in enumerate(aot.COUNT_COLUMNS)}, correction)
        w = subj_w[b].astype(float)
        for m in metrics:
            ok = np.isfinite(values[m])
            out[m][b] = (np.where(ok, values[m], 0.0) * w).sum(1) / (w * ok).sum(1)
    return out


def cluster_bootstrap_ci(data: pd.DataFrame, by: Sequence[str] | str = (),
                         cluster: str = "source_clip_id", n_boot: int = 1000,
                         ci: float = 0.95, rng: np.random.Generator | None = None,
                         metrics: Sequence[str] = DEFAULT_METRICS,
                         correction: str = "loglinear", scheme: str = "two-way",
                         subject: str = "subject_id",
                         strata: str | None = None) -> pd.DataFrame:
    """Percentile bootstrap CIs of arrow-of-time metrics in a crossed design.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials (excluded rows already removed).
    by : str or sequence of str
        Groups, as in :func:`analysis.aot.aot_metrics` (``"category"`` allowed).
    cluster : str
        The item column: whole items (clips, both directions) are resampled.
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
    scheme : {"two-way", "subject", "item"}
        What is resampled: subjects and items independently (default), subjects only
        (items fixed), or items only (subjects fixed, the old clip bootstrap).
    subject : str
        The subject column.
    strata : str, optional
        One of ``by``: subjects are resampled within each of its values (``"observer"``:
        people among people; a model, alone in its stratum, keeps weight 1, so its
        interval is the item bootstrap). None: one stratum.

    Returns
    -------
    pandas.DataFrame
        ``by`` columns, then for every metric ``m``: ``m`` (the point estimate on all
        data), ``m_ci_low`` and ``m_ci_high``; then ``ci_method`` (what was resampled for
        that row: ``participant x clip (two-way)``, ``participant`` or ``clip``) and
        ``n_boot``.

    Notes
    -----
    Per (group g, subject p, item k) the six confusion counts :math:`C_{gpk\\cdot}` are
    computed once. A resample draws item multiplicities :math:`v_{bk} \\sim Mult(K, 1/K)`
    and, per stratum, subject multiplicities :math:`w_{bp} \\sim Mult(P_s, 1/P_s)`; its
    counts are :math:`\\sum_{p,k} w_{bp} v_{bk} C_{gpk\\cdot}`. That is one matrix product
    :math:`W C` (resamples x subjects times subjects x (group, item) cells) per stratum,
    then an item-weighted sum: no loop over resamples. Intervals are the
    :math:`(1 \\pm ci)/2` percentiles, ignoring resamples where a metric is undefined.
    Draws, to reproduce a resample by hand: :func:`resample_counts` over the items in
    sorted id order, then per stratum (sorted) over its subjects (sorted).

    Resampling both factors (the "pigeonhole" bootstrap) overstates the variance of a mean
    by about the interaction and error terms, so it is the conservative choice; resampling
    one factor treats the other as fixed and understates it whenever both vary [1]_ [2]_.
    (tests/analysis/test_bootstrap.py: 95% intervals covered a simulated population's
    accuracy 95% of the time two-way, 92% by participant and 67% by clip.)

    References
    ----------
    .. [1] Owen, A. B. (2007). The pigeonhole bootstrap. Ann. Appl. Stat. 1(2), 386-411.
    .. [2] Brennan, R. L., Harris, D. J. & Hanson, B. A. (1987). The bootstrap and other
       procedures for examining the variability of estimated variance components. ACT
       Research Report 87-7.
    .. [3] Field, C. A. & Welsh, A. H. (2007). Bootstrapping clustered data. JRSS B 69(3).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> df = pd.DataFrame({"source_clip_id": list("aabb"), "subject_id": list("xyxy"),
    ...                    "correct_response": list("FBFB"), "response": list("FFBB")})
    >>> out = cluster_bootstrap_ci(df, n_boot=200, rng=np.random.default_rng(1))
    >>> float(out.accuracy[0]), out.ci_method[0]
    (0.5, 'participant x clip (two-way)')
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    unknown = set(metrics) - set(aot.METRIC_COLUMNS)
    if unknown:
        raise ValueError(f"unknown metric(s): {sorted(unknown)}")
    draws = bootstrap_draws(data, by, scheme=scheme, cluster=cluster, subject=subject,
                            strata=strata, n_boot=n_boot, rng=rng, correction=correction)
    return percentile_table(draws, metrics, ci)


def percentile_table(draws: Draws, metrics: Sequence[str] = DEFAULT_METRICS,
                     ci: float = 0.95) -> pd.DataFrame:
    """Point estimates and percentile intervals of :class:`Draws` (see
    :func:`cluster_bootstrap_ci` for the columns)."""
    lo_q, hi_q = 100 * (1 - ci) / 2, 100 * (1 + ci) / 2
    out = draws.groups.copy()
    out["ci_method"] = [SCHEME_LABELS[s] for s in draws.schemes]
    for m in metrics:
        out[m] = draws.point[m]
        lo, hi = nan_percentiles(draws.boot[m], lo_q, hi_q)
        flat = no_spread(draws.boot[m]) if m in PROPORTIONS else np.zeros(len(lo), bool)
        for i in np.flatnonzero(flat):
            lo[i], hi[i] = exact_bounds(draws.point[m][i], draws.n_units[i], ci)
            out.loc[i, "ci_method"] += f"; {m}: {EXACT_NOTE.format(n=draws.n_units[i])}"
        out[f"{m}_ci_low"], out[f"{m}_ci_high"] = lo, hi
    out["n_boot"] = draws.n_boot
    return out


def difference_table(draws: Draws, column: str, reference, metrics: dict,
                     ci: float = 0.95) -> pd.DataFrame:
    """Reference minus each other value of ``column`` (e.g. people minus each model),
    matched on the other ``by`` columns, with percentile CIs of the paired differences.

    Both sides come from the same resamples (the same clip draws), so the interval is that
    of the difference itself, not of two separate estimates.

    Parameters
    ----------
    metrics : dict
        Metric -> (output column, scale), e.g. ``{"accuracy": ("gap_accuracy_points",
        100.0)}``.

    Returns
    -------
    pandas.DataFrame
        The other ``by`` columns, ``column``, then per metric its output column and
        ``<column>_ci_low``, ``<column>_ci_high``; then ``ci_method`` (the reference's
        scheme) and ``n_boot``.
    """
    groups = draws.groups.reset_index(drop=True)
    others = [c for c in groups.columns if c != column]
    key = [tuple(r) for r in groups[others].itertuples(index=False)]
    is_ref = (groups[column] == reference).to_numpy()
    ref_at = {key[i]: i for i in np.flatnonzero(is_ref)}
    lo_q, hi_q = 100 * (1 - ci) / 2, 100 * (1 + ci) / 2
    rows = []
    for i in np.flatnonzero(~is_ref):
        r = ref_at.get(key[i])
        if r is None:
            continue
        row = dict(zip(others, key[i])) | {column: groups.loc[i, column]}
        for m, (name, scale) in metrics.items():
            lo, hi = nan_percentiles(scale * (draws.boot[m][[r]] - draws.boot[m][[i]]),
                                      lo_q, hi_q)
            row |= {name: scale * (draws.point[m][r] - draws.point[m][i]),
                    f"{name}_ci_low": lo[0], f"{name}_ci_high": hi[0]}
        rows.append(row | {"ci_method": SCHEME_LABELS[draws.schemes[r]],
                           "n_boot": draws.n_boot})
    return pd.DataFrame(rows)
