"""Pair metrics: a clip's forward and reversed copies scored together.

Single-clip accuracy rewards shortcuts (a forward bias is right on every forward clip), so the
2025-26 temporal benchmarks score pairs: MVP's pair accuracy, TimeBlind's instance accuracy,
Vinoground's group score. Here a *pair* is the two copies of one item that call for opposite
answers, as seen by one subject:

* arrow of time (``aot``): a source clip played forward (answer F) and reversed (answer B);
* pair ordering (``pair_order``, the frame-ordering analogue): two frames of a clip shown in
  both orders, AB (answer A) and BA (answer B); the item is ``extra["pair_id"]``.

N-frame ordering (``frame_order``) has no pairs: a participant sees a clip once, in one
condition, and no design shows the same frames in a second order whose answer mirrors the
first, so nothing there can be scored as a pair.

A model's two copies are paired under the same prompt: within one label order (the order the
two answer labels were named, ``extra["label_order"]``), so a run balanced over both orders
gives two pairs a clip. Pairs never mix observers (:mod:`analysis.observers`: model,
revision, prompt setting, label order, frame condition), tasks or subjects.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from analysis import bootstrap, intervals, loading, observers
from analysis import columns as C

METRICS = ("accuracy", "pair_accuracy", "pair_consistency")
TASKS = {C.AOT: ("F", "B"), C.PAIR_ORDER: ("A", "B")}  # task -> (first copy's, second's answer)
CELL_KEY = ("task", "observer", "subject_id", "source_clip_id", "item", "context")
CHANCE = {"accuracy": 0.5, "pair_accuracy": 0.25, "pair_consistency": 0.5}


def pair_cells(data: pd.DataFrame) -> pd.DataFrame:
    """One row per pair a subject answered both copies of (a *pair cell*).

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials (excluded rows already removed); ``observer`` is used where present,
        else computed (:func:`analysis.observers.observer_column`). Rows of other trial types
        are ignored.

    Returns
    -------
    pandas.DataFrame
        :data:`CELL_KEY` (``item``: the clip, or the frame pair of ``pair_order``;
        ``context``: the trial's label order for models, empty for people), ``categories``,
        ``n_trials``, then per cell ``accuracy`` (mean of the two copies' shares correct),
        ``pair_accuracy`` and ``pair_consistency``.

    Notes
    -----
    With :math:`p_1, p_2` the shares of a cell's first- and second-copy trials answered
    correctly and :math:`q_1, q_2` the shares answered with the other label (a timeout or an
    unparseable answer is neither), a pair drawn as one trial of each copy is

    .. math:: \\text{pair accuracy} = p_1 p_2, \\qquad
              \\text{pair consistency} = p_1 p_2 + q_1 q_2,

    i.e. both right, and the two answers different (both right, or both wrong: the
    direction seen consistently, but backwards). With one trial a copy (the arrow-of-time
    design) these are the 0/1 scores of MVP and TimeBlind; repeated trials (a sweep's 12
    forward and 12 reversed) average over every forward x reversed combination.

    Examples
    --------
    >>> import pandas as pd
    >>> trials = pd.DataFrame({"subject_id": "p1", "subject_kind": "human",
    ...     "trial_type": "aot", "source_clip_id": ["a", "a", "b", "b", "c"],
    ...     "correct_response": ["F", "B", "F", "B", "F"],
    ...     "response": ["F", "B", "F", "F", "B"], "categories": [["Fall"]] * 5})
    >>> pair_cells(trials)[["item", *METRICS]].to_dict("list")
    {'item': ['a', 'b'], 'accuracy': [1.0, 0.5], 'pair_accuracy': [1.0, 0.0], \
'pair_consistency': [1.0, 0.0]}
    """
    # Only the columns read here are copied: the whole table is slow to copy at 1M trials.
    needed = [c for c in ("observer", "subject_id", "subject_kind", "session_id", "trial_type",
                          "source_clip_id", "correct_response", "response", "categories",
                          "extra") if c in data]
    trials = data.loc[data["trial_type"].isin(list(TASKS)), needed] if "trial_type" in data \
        else loading.aot_trials(data)[needed].assign(trial_type=C.AOT)
    if trials.empty:
        return pd.DataFrame(columns=[*CELL_KEY, "categories", "n_trials", *METRICS])
    task = trials["trial_type"].astype(object)
    first = task.map({t: a[0] for t, a in TASKS.items()}).to_numpy(object)
    second = task.map({t: a[1] for t, a in TASKS.items()}).to_numpy(object)
    truth = trials["correct_response"].to_numpy(object)
    answer = trials["response"].to_numpy(object)
    keys = pd.DataFrame({
        "task": trials["trial_type"], "observer": observers.observer_column(trials),
        "subject_id": trials["subject_id"], "source_clip_id": trials["source_clip_id"],
        "item": _item(trials), "context": _context(trials)}, index=trials.index)
    copy = np.where(truth == first, 0, np.where(truth == second, 1, -1))
    paired = copy >= 0
    other = np.where(copy == 0, second, first)
    right, said_other = (answer == truth)[paired], (answer == other)[paired]
    keys, copy = keys[paired], copy[paired]
    # An arrow-of-time item is its clip: the item column partitions nothing more there.
    ordered = (keys["task"] == C.PAIR_ORDER).any()
    cell, first_row = _cell_codes(keys if ordered else keys.drop(columns="item"))
    # Per (cell, copy): trials, right answers and answers of the other label.
    n, k_right, k_other = (
        np.bincount(cell * 2 + copy, weights=w, minlength=2 * len(first_row)).reshape(-1, 2)
        for w in (None, right.astype(float), said_other.astype(float)))
    complete = (n > 0).all(axis=1)
    n, k_right, k_other = n[complete], k_right[complete], k_other[complete]
    (p1, p2), (q1, q2) = (k_right / n).T, (k_other / n).T
    cells = keys.iloc[first_row[complete]].reset_index(drop=True).assign(
        task=lambda c: c["task"].astype(object),  # keyed by its codes where categorical
        n_trials=n.sum(axis=1).astype(int), accuracy=(p1 + p2) / 2, pair_accuracy=p1 * p2,
        pair_consistency=p1 * p2 + q1 * q2)
    clip_categories = trials.drop_duplicates("source_clip_id").set_index("source_clip_id")
    cells.insert(len(CELL_KEY), "categories", cells["source_clip_id"].map(
        clip_categories["categories"]) if "categories" in trials else None)
    return cells


def _cell_codes(keys: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's cell (a code per distinct row of ``keys``, in order of first appearance)
    and each cell's first row: factorised column by column, which is several times faster
    than a groupby over object columns on a million trials."""
    code = np.zeros(len(keys), dtype=np.int64)
    for column in keys.columns:
        part, uniques = pd.factorize(keys[column], use_na_sentinel=False)
        code, _ = pd.factorize(code * len(uniques) + part)
    first_row = np.full(code.max() + 1 if len(code) else 0, len(code), dtype=np.int64)
    np.minimum.at(first_row, code, np.arange(len(code)))
    return code, first_row


def _item(trials: pd.DataFrame) -> pd.Series:
    """The clip; for pair ordering, the frame pair within it."""
    item = trials["source_clip_id"].astype(object)
    ordered = (trials["trial_type"] == C.PAIR_ORDER).to_numpy()
    if ordered.any():
        item = item.copy()
        item[ordered] = loading.extra_column(trials[ordered], C.EXTRA_PAIR_ID).to_numpy(object)
    return item


def _context(trials: pd.DataFrame) -> pd.Series:
    """A model trial's label order ("" for people and where none is stored)."""
    context = pd.Series("", index=trials.index, dtype=object)
    models = (trials["subject_kind"] == C.MODEL).to_numpy() if "subject_kind" in trials \
        else np.zeros(len(trials), dtype=bool)
    if models.any() and "extra" in trials:
        context[models] = loading.extra_column(trials[models], C.EXTRA_LABEL_ORDER, "").fillna("")
    return context


def pair_metrics(data: pd.DataFrame | None, by: Sequence[str] = ("observer",), n_boot: int = 1000,
                 ci: float = 0.95, rng: np.random.Generator | None = None,
                 cells: pd.DataFrame | None = None) -> pd.DataFrame:
    """Accuracy, pair accuracy and pair consistency per group, with bootstrap intervals.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials, as for :func:`pair_cells` (ignored when ``cells`` is given).
    by : sequence of str
        Columns of :func:`pair_cells` to group by, e.g. ``["observer"]``, ``["observer",
        "subject_id"]``; ``"category"`` counts a multi-label clip in each of its categories.
        ``task`` always comes first: pairs of different tasks are never pooled.
    n_boot : int
        Bootstrap resamples.
    ci : float
        Coverage of the percentile intervals.
    rng : numpy.random.Generator, optional
        ``default_rng(0)`` when omitted.
    cells : pandas.DataFrame, optional
        :func:`pair_cells` already computed.

    Returns
    -------
    pandas.DataFrame
        ``task``, ``by``, ``n_subjects``, ``n_clips``, ``n_pairs``, ``n_trials``, then per
        metric of :data:`METRICS` the value and ``<metric>_ci_low``, ``<metric>_ci_high``;
        ``ci_method`` and ``n_boot``. Empty without a complete pair.

    Notes
    -----
    A group's metric is the mean over its pair cells (each subject's pair of one item counts
    once). Intervals are percentile bootstraps of that mean: a group with several subjects
    (people) resamples clips and, within each observer, subjects (two-way, as
    :func:`analysis.bootstrap.cluster_bootstrap_ci`): a resample weighs cell (p, k) by
    :math:`w_{bp} v_{bk}` and gives :math:`\\sum w v m / \\sum w v`. A group of one subject
    (a model, one participant) resamples clips only. A clip's two copies, and all of its
    frame pairs, are always drawn together. Chance is 0.5 for accuracy and consistency and
    0.25 for pair accuracy (:data:`CHANCE`).

    References
    ----------
    .. [1] Krojer et al. (2024). A Minimal Video Pair benchmark (MVP): paired accuracy.
    .. [2] Zhang et al. (2024). Vinoground: group score over counterfactual pairs.
    .. [3] Owen, A. B. (2007). The pigeonhole bootstrap. Ann. Appl. Stat. 1(2), 386-411.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> trials = pd.DataFrame({"subject_id": "m", "subject_kind": "model", "trial_type": "aot",
    ...     "source_clip_id": list("aabb"), "correct_response": list("FBFB"),
    ...     "response": list("FFFF"), "categories": [["Fall"]] * 4, "extra": [{}] * 4})
    >>> out = pair_metrics(trials, n_boot=50)
    >>> out[["observer", "accuracy", "pair_accuracy", "pair_consistency", "ci_method"]].values
    array([['m', 0.5, 0.0, 0.0, 'clip']], dtype=object)
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be positive, got {n_boot}")
    if cells is None:
        if data is None:
            raise ValueError("give the trials (data) or their pair cells (cells)")
        cells = pair_cells(data)
    by = ["task", *(b for b in by if b != "task")]
    if "category" in by:
        if "categories" not in cells or not cells["categories"].map(
                lambda c: isinstance(c, (list, tuple))).all():
            raise ValueError("grouping pairs by category needs a list of categories for "
                             "every clip (the categories column)")
        cells = loading.explode_categories(cells)
    unknown = [b for b in by if b not in cells.columns]
    if unknown:
        raise ValueError(f"cannot group pairs by {unknown}; pair cells have {list(cells.columns)}")
    if cells.empty:
        return pd.DataFrame()
    grouper = cells.groupby(by, sort=True, dropna=False)
    out = grouper.size().index.to_frame(index=False)
    out = out.assign(n_subjects=grouper["subject_id"].nunique().to_numpy(),
                     n_clips=grouper["source_clip_id"].nunique().to_numpy(),
                     n_pairs=grouper.size().to_numpy(),
                     n_trials=grouper["n_trials"].sum().to_numpy())
    g = grouper.ngroup().to_numpy()
    two_way = out["n_subjects"].to_numpy() > 1
    boot = _draws(cells, g, two_way, n_boot, np.random.default_rng(0) if rng is None else rng)
    lo_q, hi_q = 100 * (1 - ci) / 2, 100 * (1 + ci) / 2
    means = grouper[list(METRICS)].mean()
    for i, m in enumerate(METRICS):
        lo, hi = intervals.nan_percentiles(boot[..., i], lo_q, hi_q)
        out[m], out[f"{m}_ci_low"], out[f"{m}_ci_high"] = means[m].to_numpy(), lo, hi
    out["ci_method"] = [bootstrap.SCHEME_LABELS["two-way" if t else "item"] for t in two_way]
    out["n_boot"] = n_boot
    return out


def _draws(cells: pd.DataFrame, g: np.ndarray, two_way: np.ndarray, n_boot: int,
           rng: np.random.Generator) -> np.ndarray:
    """Resampled group means (groups x resamples x metrics). Clips are drawn first, once
    for every group; then subjects within each observer (sorted), for two-way groups."""
    k, n_items = bootstrap.unit_codes(cells["source_clip_id"])
    item_w = bootstrap.resample_counts(rng, n_items, n_boot).astype(float)
    # Column 0 counts cells (the denominator); the others sum the metrics.
    values = np.column_stack([np.ones(len(cells)), cells[list(METRICS)].to_numpy(float)])
    sums = np.zeros((len(two_way), n_boot, values.shape[1]))
    one = ~two_way[g]
    if one.any():
        _add_item_only(sums, g[one], k[one], values[one], n_items, item_w)
    strata, n_strata = bootstrap.unit_codes(cells["observer"])
    for s in range(n_strata):
        rows = two_way[g] & (strata == s)
        if rows.any():
            p, n_subjects = bootstrap.unit_codes(cells["subject_id"][rows])
            subj_w = bootstrap.resample_counts(rng, n_subjects, n_boot).astype(float)
            _add_two_way(sums, g[rows], k[rows], p, values[rows], n_items, item_w, subj_w)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[..., 1:] / sums[..., :1]


def _add_item_only(sums, g, k, values, n_items, item_w) -> None:
    """sums[g, b] += sum_k v_bk S[g, k] (S: a group's values summed per clip), for groups of
    one subject: one BLAS product where the dense S is small, else a sparse one per value."""
    from scipy import sparse

    n_groups, n_boot, n_values = sums.shape
    if n_groups * n_items * n_values > bootstrap.MAX_DENSE_CELLS:
        for v in range(n_values):
            per_clip = sparse.csr_matrix((values[:, v], (g, k)), shape=(n_groups, n_items))
            sums[:, :, v] += per_clip @ item_w.T
        return
    flat = ((g * n_items + k)[:, None] * n_values + np.arange(n_values)).ravel()
    per_clip = np.bincount(flat, weights=values.ravel(), minlength=n_groups * n_items * n_values)
    by_clip = per_clip.reshape(n_groups, n_items, n_values).transpose(1, 0, 2)
    sums += (item_w @ by_clip.reshape(n_items, -1)).reshape(
        n_boot, n_groups, n_values).transpose(1, 0, 2)


def _add_two_way(sums, g, k, p, values, n_items, item_w, subj_w) -> None:
    """sums[g, b] += sum over the group's cells of w_bp v_bk times the cell's values: per
    (group, clip) pair, one product over subjects, then the clip weights."""
    from scipy import sparse

    pair_key, j = np.unique(g.astype(np.int64) * n_items + k, return_inverse=True)
    n_pairs, n_values = len(pair_key), values.shape[1]
    cols = (j[:, None] * n_values + np.arange(n_values)).ravel()
    width = n_pairs * n_values
    if subj_w.shape[1] * width <= bootstrap.MAX_DENSE_CELLS:
        # One BLAS product: a sparse one with a thousand dense columns was the slowest
        # step of the pair section (2,000 people x 360 clips).
        mat = np.bincount(np.repeat(p, n_values) * width + cols, weights=values.ravel(),
                          minlength=subj_w.shape[1] * width).reshape(-1, width)
        per_pair = (subj_w @ mat).reshape(-1, n_pairs, n_values)
    else:
        mat = sparse.csr_matrix((values.ravel(), (np.repeat(p, n_values), cols)),
                                shape=(subj_w.shape[1], width))
        per_pair = np.asarray((mat.T @ subj_w.T).T).reshape(-1, n_pairs, n_values)
    weighted = per_pair * item_w[:, pair_key % n_items, None]
    # Pairs are sorted by group (the key is group-major): sum each group's run of pairs.
    pair_g = pair_key // n_items
    starts = np.flatnonzero(np.r_[True, pair_g[1:] != pair_g[:-1]])
    sums[pair_g[starts]] += np.add.reduceat(weighted, starts, axis=1).transpose(1, 0, 2)
