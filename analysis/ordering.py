"""Frame-ordering metrics (EGO-FLIGHT): Kendall tau-b, pairwise accuracy, MAD, LCS ratio,
edit distance, exact match; first-position anchoring and disorder of the presented order.

Every metric is computed for all trials of one sequence length at once on integer arrays
(no Python loop over trials), so 100,000 ordering trials score in well under a second.

A missing, unparseable or invalid order (not a permutation of the frames) is a
non-response, and follows the one policy of :mod:`analysis.nonresponse`: by default an
error, scored as the reversed order (the worst answer: tau -1, no pair and no frame in
place); ``"excluded"`` leaves it out of the means; ``"chance"`` gives it the expected score
of a uniformly random order. :func:`ordering_sensitivity` gives the means under all three.
"""
from __future__ import annotations

import json
from functools import lru_cache
from itertools import permutations
from typing import Sequence

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import nonresponse

TRIAL_METRICS = ("kendall_tau", "pairwise_accuracy", "mean_abs_distance", "lcs_ratio",
                 "edit_distance", "exact_match")
MAX_ENUMERATED = 8  # chance scores: every permutation up to 8 frames (40,320), else a sample
CHANCE_SAMPLE, CHANCE_SEED = 20000, 0


def _as_list(value):
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return list(value) if isinstance(value, (list, tuple)) else None


def _scored_sequences(row_true, row_pred, hints):
    """Drop hint frames (EGO-FLIGHT scores only the unsorted frames)."""
    hints = set(hints or ())
    return [x for x in row_true if x not in hints], \
        None if row_pred is None else [x for x in row_pred if x not in hints]


def score_orders(true_orders: np.ndarray, pred_orders: np.ndarray) -> pd.DataFrame:
    """Score predicted orders against true orders, all of one length ``n``.

    Parameters
    ----------
    true_orders, pred_orders : array of shape (m, n)
        Item labels, earliest first. A prediction that is not a permutation of its true
        order gets NaN scores.

    Returns
    -------
    pandas.DataFrame
        ``valid`` and :data:`TRIAL_METRICS`, one row per trial.

    Notes
    -----
    Let :math:`q_j` be the true position of the item predicted at position :math:`j`.
    With :math:`C` concordant pairs (:math:`j<k, q_j<q_k`) and :math:`D` discordant ones,
    :math:`\\tau_b = (C-D)/(C+D)` (no ties in a permutation), pairwise accuracy
    :math:`= C/\\binom{n}{2}`, MAD :math:`= \\frac1n \\sum_j |q_j - j|`, LCS ratio = length
    of the longest common subsequence of the two orders / n (= longest increasing
    subsequence of q), edit distance = Levenshtein distance between the orders, exact match
    :math:`= [q = (0..n-1)]`.

    References
    ----------
    .. [1] EGO-FLIGHT, sec. 4 and Appendix D (Tables 1, 3-7).
    .. [2] Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33.

    Examples
    --------
    >>> import numpy as np
    >>> s = score_orders(np.array([[1, 2, 3]]), np.array([[3, 2, 1]]))
    >>> float(s.kendall_tau[0]), float(s.lcs_ratio[0]), float(s.edit_distance[0])
    (-1.0, 0.3333333333333333, 2.0)
    """
    true_orders, pred_orders = np.asarray(true_orders), np.asarray(pred_orders)
    m, n = true_orders.shape
    eq = pred_orders[:, :, None] == true_orders[:, None, :]
    q = eq.argmax(axis=2)
    valid = (eq.sum(axis=2) == 1).all(axis=1) & (np.sort(q, axis=1) == np.arange(n)).all(axis=1)
    pairs = n * (n - 1) / 2
    j, k = np.triu_indices(n, 1)
    concordant = (q[:, j] < q[:, k]).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = pd.DataFrame({
            "valid": valid,
            "kendall_tau": (2 * concordant - pairs) / pairs,
            "pairwise_accuracy": concordant / pairs,
            "mean_abs_distance": np.abs(q - np.arange(n)).mean(axis=1),
            "lcs_ratio": _longest_increasing(q) / n,
            "edit_distance": _levenshtein_to_identity(q).astype(float),
            "exact_match": (q == np.arange(n)).all(axis=1).astype(float),
        })
    out.loc[~valid, list(TRIAL_METRICS)] = np.nan
    return out


def _longest_increasing(q: np.ndarray) -> np.ndarray:
    m, n = q.shape
    best = np.ones((m, n), dtype=int)
    for j in range(1, n):
        earlier = np.where(q[:, :j] < q[:, j:j + 1], best[:, :j], 0)
        best[:, j] = earlier.max(axis=1) + 1
    return best.max(axis=1) if n else np.zeros(m, dtype=int)


def _levenshtein_to_identity(q: np.ndarray) -> np.ndarray:
    m, n = q.shape
    prev = np.tile(np.arange(n + 1), (m, 1))
    for i in range(1, n + 1):
        cur = np.empty_like(prev)
        cur[:, 0] = i
        for t in range(1, n + 1):
            sub = prev[:, t - 1] + (q[:, i - 1] != t - 1)
            cur[:, t] = np.minimum(np.minimum(prev[:, t] + 1, cur[:, t - 1] + 1), sub)
        prev = cur
    return prev[:, n]


def ordering_trial_scores(data: pd.DataFrame) -> pd.DataFrame:
    """Per-trial ordering scores of the ``frame_order`` rows of a canonical table.

    Returns
    -------
    pandas.DataFrame
        Indexed like the ordering rows of ``data``: ``n_frames`` (all frames),
        ``n_scored`` (frames left after removing hints), ``valid``, :data:`TRIAL_METRICS`,
        ``true_first_position`` / ``true_last_position`` (presented position, 1-based, of
        the chronologically first / last frame) and ``n_inversions`` (pairwise inversions
        of the presented order relative to the true order).
    """
    rows = data[data["trial_type"] == C.FRAME_ORDER]
    hints = pd.Series([json.dumps(e[C.EXTRA_HINT_FRAMES]) if isinstance(e, dict)
                       and e.get(C.EXTRA_HINT_FRAMES) else "" for e in rows["extra"]],
                      index=rows.index, dtype=object)
    keys = pd.DataFrame({"true": rows["correct_response"].astype(object).fillna("").map(str),
                         "pred": rows["response"].astype(object).fillna("").map(str),
                         "hints": hints.to_numpy()})
    # Few distinct (true, response, hints) triples exist (24 x 24 for 4 frames), so each is
    # parsed and scored once and the result broadcast back to its trials.
    codes, uniques = pd.factorize(pd.MultiIndex.from_frame(keys))
    unique_scores = _score_unique(pd.DataFrame(list(uniques), columns=keys.columns))
    out = unique_scores.iloc[codes].set_axis(rows.index)
    return out


def _score_unique(keys: pd.DataFrame) -> pd.DataFrame:
    true = keys["true"].map(_as_list)
    pred = keys["pred"].map(_as_list)
    hints = keys["hints"].map(_as_list)
    scored = [_scored_sequences(t or [], p, h) for t, p, h in zip(true, pred, hints)]
    out = pd.DataFrame(index=keys.index)
    out["n_frames"] = true.map(lambda t: len(t) if t else 0).astype(int)
    out["n_scored"] = [len(t) for t, _ in scored]
    out["valid"] = False
    for col in TRIAL_METRICS:
        out[col] = np.nan
    lengths = out["n_scored"].to_numpy()
    for n in np.unique(lengths[lengths >= 2]):
        pos = np.flatnonzero(lengths == n)
        ok = [i for i in pos if scored[i][1] is not None and len(scored[i][1]) == n]
        if not ok:
            continue
        res = score_orders(np.array([scored[i][0] for i in ok], dtype=object),
                           np.array([scored[i][1] for i in ok], dtype=object))
        for col in res.columns:
            out.loc[out.index[ok], col] = res[col].to_numpy()
    _add_presentation_features(out, true)
    return out


def _add_presentation_features(out: pd.DataFrame, true: pd.Series) -> None:
    def inversions(seq):
        return sum(a > b for i, a in enumerate(seq) for b in seq[i + 1:]) if seq else np.nan

    out["true_first_position"] = true.map(lambda t: t[0] if t else np.nan)
    out["true_last_position"] = true.map(lambda t: t[-1] if t else np.nan)
    out["n_inversions"] = true.map(inversions)


@lru_cache(maxsize=None)
def nonresponse_scores(n: int, policy: str) -> tuple[float, ...]:
    """The :data:`TRIAL_METRICS` a non-response of ``n`` scored frames gets under ``policy``.

    ``"error"``: the scores of the reversed order. ``"chance"``: the mean over every order
    of ``n`` frames (up to :data:`MAX_ENUMERATED`; beyond, over :data:`CHANCE_SAMPLE`
    orders drawn with seed :data:`CHANCE_SEED`). ``"excluded"``: NaN (left out).

    Examples
    --------
    >>> [round(v, 3) for v in nonresponse_scores(3, "chance")]  # tau, pairs, MAD, LCS, edit, exact
    [0.0, 0.5, 0.889, 0.667, 1.667, 0.167]
    """
    nonresponse.check_policy(policy)
    if policy == "excluded":
        return (np.nan,) * len(TRIAL_METRICS)
    identity = np.arange(1, n + 1)
    if policy == "error":
        orders = identity[None, ::-1]
    elif n <= MAX_ENUMERATED:
        orders = np.array(list(permutations(identity)))
    else:
        orders = np.random.default_rng(CHANCE_SEED).permuted(
            np.tile(identity, (CHANCE_SAMPLE, 1)), axis=1)
    scores = score_orders(np.tile(identity, (len(orders), 1)), orders)
    return tuple(float(scores[m].mean()) for m in TRIAL_METRICS)


def apply_nonresponse_policy(scores: pd.DataFrame, policy: str) -> pd.DataFrame:
    """Per-trial scores with every invalid order scored as ``policy`` says (see
    :func:`nonresponse_scores`); trials with fewer than two scored frames stay NaN."""
    out = scores.copy()
    missing = ~out["valid"].astype(bool) & (out["n_scored"] >= 2)
    for n in np.unique(out.loc[missing, "n_scored"]):
        rows = missing & (out["n_scored"] == n)
        out.loc[rows, list(TRIAL_METRICS)] = nonresponse_scores(int(n), policy)
    return out


def ordering_metrics(data: pd.DataFrame, by: Sequence[str] | str = (),
                     scores: pd.DataFrame | None = None,
                     policy: str = nonresponse.DEFAULT_POLICY) -> pd.DataFrame:
    """Mean ordering metrics per group of ``frame_order`` trials.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials. Besides any column of ``data``, ``by`` may name
        ``"condition"`` (``extra["condition"]``), ``"n_frames"``,
        ``"true_first_position"``, ``"true_last_position"`` or ``"n_inversions"``.
    by : str or sequence of str
        Grouping columns.
    scores : pandas.DataFrame, optional
        :func:`ordering_trial_scores` of ``data``, when already computed (a report groups
        the same scores several ways).
    policy : {"error", "excluded", "chance"}
        How invalid or missing orders count (see :func:`nonresponse_scores`); the same
        policy as the arrow-of-time tables (:mod:`analysis.nonresponse`).

    Returns
    -------
    pandas.DataFrame
        ``by`` columns, ``n_trials``, ``n_valid``, then the mean of each of
        :data:`TRIAL_METRICS` over the trials ``policy`` counts (see :func:`score_orders`
        for formulas).
        Anchoring is ``ordering_metrics(df, by="true_first_position")``; the effect of
        input disorder is ``by="n_inversions"`` (EGO-FLIGHT, Appendix, Figure 3).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"trial_type": ["frame_order"] * 2, "extra": [{}, {}],
    ...                    "correct_response": ["[1, 2, 3]", "[2, 1, 3]"],
    ...                    "response": ["[1, 2, 3]", "[1, 2, 3]"]})
    >>> round(float(ordering_metrics(df).kendall_tau[0]), 3)
    0.667
    """
    by = [by] if isinstance(by, str) else list(by)
    rows = data[data["trial_type"] == C.FRAME_ORDER]
    table = apply_nonresponse_policy(ordering_trial_scores(rows) if scores is None
                                     else scores, policy)
    for col in by:
        if col == "condition" and col not in rows.columns:
            table[col] = [e.get(C.EXTRA_CONDITION, "") if isinstance(e, dict) else ""
                          for e in rows["extra"]]
        elif col not in table.columns:
            table[col] = rows[col]
    agg = {"n_trials": ("valid", "size"), "n_valid": ("valid", "sum")}
    agg.update({m: (m, "mean") for m in TRIAL_METRICS})
    if not by:
        return table.assign(_all=0).groupby("_all").agg(**agg).reset_index(drop=True)
    return table.groupby(by, dropna=False).agg(**agg).reset_index()


def ordering_sensitivity(data: pd.DataFrame, by: Sequence[str] | str = ("observer",),
                         main_policy: str = nonresponse.DEFAULT_POLICY) -> pd.DataFrame:
    """Mean ordering metrics under each non-response policy, one row per group and policy.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials with exclusions flagged, not removed (the policy decides which
        timed-out trials count, as :func:`analysis.nonresponse.included` does).
    by : str or sequence of str
        Grouping columns (default: per observer).
    main_policy : str
        The policy of the report's ordering tables, marked ``main``.

    Returns
    -------
    pandas.DataFrame
        ``by`` columns, ``policy``, ``main``, ``n_trials``, ``n_invalid``, then the means
        of :data:`TRIAL_METRICS`.
    """
    by = [by] if isinstance(by, str) else list(by)
    parts = []
    frames = data[data["trial_type"] == C.FRAME_ORDER]
    scores = ordering_trial_scores(frames)  # once: each policy keeps a subset of the trials
    for policy in nonresponse.POLICIES:
        rows = nonresponse.included(frames, policy)
        if rows.empty:
            continue
        table = ordering_metrics(rows, by=by, scores=scores.loc[rows.index], policy=policy)
        table.insert(len(by), "policy", policy)
        table.insert(len(by) + 1, "main", policy == main_policy)
        parts.append(table)
    if not parts:
        return pd.DataFrame(columns=[*by, "policy", "main", "n_trials", "n_invalid",
                                     *TRIAL_METRICS])
    out = pd.concat(parts, ignore_index=True)
    out.insert(out.columns.get_loc("n_valid"), "n_invalid", out["n_trials"] - out["n_valid"])
    return out.drop(columns="n_valid")
