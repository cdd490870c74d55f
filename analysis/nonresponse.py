"""Non-responses: one policy for people and models, and the main figures under each policy.

A non-response is a trial that asked for an answer and got none that can be scored: a
person's timeout, a model's unparseable answer. Counting a model's as errors while the
exclusion rules set a person's aside favours people, so both follow one policy:

``"error"`` (the default, :data:`DEFAULT_POLICY`)
    A non-response is a wrong answer, for people and models alike (Hanyu et al. 2023
    count a timeout as an error; AoT-PsyPhyBENCH scores an unparseable answer as wrong).
    Trials the exclusion rules removed *only* for non-responses (:data:`NONRESPONSE_REASONS`:
    the trial's own ``timeout`` and the participant-level ``too_many_timeouts``) are
    counted back in; anything else the rules removed (technical failures, dropped frames,
    lost focus, other participant-level exclusions) stays out.
``"excluded"``
    Non-responses of both are left out; accuracy is over answered trials.
``"chance"``
    Each non-response counts as a guess: half a correct answer, and in the confusion
    counts half an "F" and half a "B" answer.

A person is never dropped for non-responses alone, under any policy, just as no model is
dropped for unparseable answers: ``too_many_timeouts`` (``experiments.exclusions``, kept for
the study's own bookkeeping) is a rule about non-responses, so it follows the policy. The
person's answered trials count, and the timeouts are scored by the policy like a model's
unparseable answers; a person also excluded for another reason stays out.

The main tables use one policy (``"error"`` unless a report is built with another);
:func:`sensitivity_table` gives accuracy, F1 and the human-model gap under all three.
Frame orders follow the same policy (:func:`analysis.ordering.ordering_metrics`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import aot, loading
from analysis import columns as C

POLICIES = ("error", "excluded", "chance")
# Main tables count rows (analysis.aot): a guess is half a row, so "chance" is given only in
# the sensitivity table.
MAIN_POLICIES = ("error", "excluded")
DEFAULT_POLICY = "error"
TIMEOUT_REASON = "timeout"
TOO_MANY_TIMEOUTS_REASON = "too_many_timeouts"  # participant level (experiments.exclusions)
NONRESPONSE_REASONS = frozenset((TIMEOUT_REASON, TOO_MANY_TIMEOUTS_REASON))
NONRESPONSE_REASON = "non_response"  # exclusion reason under the "excluded" policy
AOT_ANSWERS = ("F", "B")
SENSITIVITY_COLUMNS = ("observer", "subject_id", "trial_type", "block", "correct_response",
                       "response", "excluded", "exclusion_reasons")


def check_policy(policy: str, allowed: tuple = POLICIES) -> str:
    if policy not in allowed:
        raise ValueError(f"non-response policy must be one of {allowed}, got {policy!r}")
    return policy


def is_nonresponse(data: pd.DataFrame) -> np.ndarray:
    """Rows without a scorable answer: no response, or (arrow of time) none of F/B."""
    missing = data["response"].isna().to_numpy()
    aot_rows = data["correct_response"].isin(AOT_ANSWERS).to_numpy()
    return missing | (aot_rows & ~data["response"].isin(AOT_ANSWERS).to_numpy())


def _only_nonresponse(data: pd.DataFrame, among: np.ndarray) -> np.ndarray:
    """Rows (of those in ``among``) excluded only for non-responses: every reason is one of
    :data:`NONRESPONSE_REASONS`."""
    out = np.zeros(len(data), dtype=bool)
    reasons = data["exclusion_reasons"].to_numpy(object)[among]
    out[among] = [bool(r) and set(r) <= NONRESPONSE_REASONS for r in reasons]
    return out


def apply_policy(data: pd.DataFrame, policy: str = DEFAULT_POLICY) -> pd.DataFrame:
    """Exclusion flags as ``policy`` says, so every table, N and the exclusion flow agree.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials with ``excluded`` and ``exclusion_reasons``.
    policy : {"error", "excluded", "chance"}
        Every policy counts back in the trials excluded only for non-responses (a timeout,
        a person's ``too_many_timeouts``; flags cleared); ``"excluded"`` then flags every
        non-response excluded, with reason :data:`NONRESPONSE_REASON`.

    Returns
    -------
    pandas.DataFrame
        ``data`` with the flags changed (``data`` itself where nothing changes).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"excluded": [False, True, True, False], "block": "main",
    ...     "exclusion_reasons": [[], ["timeout"], ["timeout", "focus_lost"], []],
    ...     "correct_response": "F", "response": ["F", None, None, None]})
    >>> apply_policy(df, "error").excluded.tolist()
    [False, False, True, False]
    >>> apply_policy(df, "excluded").excluded.tolist()
    [False, True, True, True]
    """
    check_policy(policy)
    excluded = data["excluded"].astype(bool).to_numpy()
    back = _only_nonresponse(data, excluded)
    out = ~excluded | back
    missing = out & is_nonresponse(data) if policy == "excluded" else np.zeros_like(out)
    if not (back.any() or missing.any()):
        return data
    reasons = data["exclusion_reasons"].to_numpy(object).copy()
    for i in np.flatnonzero(back | missing):  # one list per cell (numpy stacks equal lists)
        if not missing[i]:
            reasons[i] = []
        elif back[i]:  # excluded before, and still: a timeout, not the person
            reasons[i] = [r for r in reasons[i] if r != TOO_MANY_TIMEOUTS_REASON]
        else:
            reasons[i] = list(reasons[i]) + [NONRESPONSE_REASON]
    return data.assign(excluded=(excluded & ~back) | missing, exclusion_reasons=reasons)


def included(data: pd.DataFrame, policy: str = DEFAULT_POLICY) -> pd.DataFrame:
    """Rows that count for metrics under ``policy``: :func:`apply_policy`, then
    :func:`analysis.loading.included` (practice is never counted)."""
    return loading.included(apply_policy(data, policy))


def chance_counts(counts: pd.DataFrame) -> pd.DataFrame:
    """Confusion counts with each non-response split into half an F and half a B answer."""
    out = counts.copy()
    for stim in ("f", "b"):
        half = out[f"n_{stim}n"].astype(float) / 2
        out[f"n_{stim}f"] = out[f"n_{stim}f"] + half
        out[f"n_{stim}b"] = out[f"n_{stim}b"] + half
        out[f"n_{stim}n"] = 0.0
    return out


def policy_metrics(data: pd.DataFrame, policy: str, by=("observer",)) -> pd.DataFrame:
    """Arrow-of-time metrics of :func:`analysis.aot.aot_metrics` under ``policy``.

    ``data`` holds every trial (exclusions flagged, not removed); the rows are chosen by
    :func:`included`. Adds ``n_subjects`` (people, or model runs, with a counted trial) and
    ``n_nonresponse`` (non-responses among the counted trials).
    """
    by = list(by)
    rows = included(loading.aot_trials(data), policy)
    counts = aot.confusion_counts(rows, by)
    n_none = counts["n_fn"] + counts["n_bn"]
    if policy == "chance":
        counts = chance_counts(counts)
    metrics = pd.DataFrame(aot.metrics_from_counts(counts), index=counts.index)
    subjects = rows.groupby(by, observed=True)["subject_id"].nunique()
    n_subjects = subjects.reindex(pd.MultiIndex.from_frame(counts[by]) if len(by) > 1
                                  else counts[by[0]]).fillna(0).astype(int).to_numpy()
    out = counts[by].assign(policy=policy, n_trials=metrics["n_trials"].astype(int),
                            n_subjects=n_subjects, n_nonresponse=n_none.astype(int))
    for col in ("accuracy", "f1_forward", "f1_backward"):
        out[col] = metrics[col]
    return out


def sensitivity_table(data: pd.DataFrame, main_policy: str = DEFAULT_POLICY) -> pd.DataFrame:
    """Accuracy, F1 and the human-model gap under each non-response policy.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials with an ``observer`` column
        (:func:`analysis.observers.with_observer`), exclusions flagged but not removed.
    main_policy : str
        The policy of the report's main tables, marked ``main``.

    Returns
    -------
    pandas.DataFrame
        ``observer, policy, main, n_subjects, n_trials, n_nonresponse, accuracy,
        f1_forward, f1_backward, gap_accuracy_points``: ``n_subjects`` is the number of
        people (the ``human`` row) or model runs analysed under the policy; the gap is
        people's accuracy minus the observer's, in points, both under the same policy (NaN
        for people).
    """
    check_policy(main_policy)
    # Only the columns the policies and metrics read: each policy filters a copy.
    data = loading.aot_trials(data[[c for c in SENSITIVITY_COLUMNS if c in data.columns]])
    parts = []
    for policy in POLICIES:
        table = policy_metrics(data, policy)
        human = table.loc[table["observer"] == C.HUMAN, "accuracy"]
        gap = 100 * (human.iloc[0] - table["accuracy"]) if len(human) else np.nan
        table["gap_accuracy_points"] = np.where(table["observer"] == C.HUMAN, np.nan, gap)
        parts.append(table.assign(main=policy == main_policy))
    out = pd.concat(parts, ignore_index=True)
    cols = ["observer", "policy", "main", "n_subjects", "n_trials", "n_nonresponse", "accuracy",
            "f1_forward", "f1_backward", "gap_accuracy_points"]
    return out[cols].sort_values(["observer", "policy"], key=_policy_order, kind="stable",
                                 ignore_index=True)


def _policy_order(col: pd.Series) -> pd.Series:
    return col.map(POLICIES.index) if col.name == "policy" else col


def text_and_logit_accuracy(kept: pd.DataFrame) -> pd.DataFrame:
    """Accuracy from the generated answer beside accuracy from the logits, per model.

    Parameters
    ----------
    kept : pandas.DataFrame
        Counted arrow-of-time trials with an ``observer`` column (people's rows give the
        human accuracy the gaps are taken from).

    Returns
    -------
    pandas.DataFrame
        Per model observer: ``observer, n_trials, n_answered, text_accuracy, n_scored,
        logit_accuracy, human_accuracy, gap_text_points, gap_logit_points, note``.
        ``text_accuracy`` is the main tables' accuracy (non-responses as the policy
        says), but NaN where nothing was answered; ``logit_accuracy`` is over trials with
        a logit score; ``note`` says why a value is n/a.

    Notes
    -----
    The logit answer is the more probable label (argmax of the label probabilities):
    ``"F"`` when ``extra["p_forward"]`` > 0.5 and ``"B"`` when < 0.5; a tie counts as half a
    correct answer. A model whose text could never be read still has its logit scores, so
    its accuracy is not 0 but n/a (text) beside the logit figure.
    """
    rows = loading.aot_trials(kept)
    metrics = aot.aot_metrics(rows, by="observer").set_index("observer")
    human = metrics["accuracy"].get(C.HUMAN, np.nan)
    rows = rows[rows["subject_kind"] == C.MODEL]
    p = pd.to_numeric(loading.extra_column(rows, C.EXTRA_P_FORWARD), errors="coerce")
    forward = (rows["correct_response"] == "F").to_numpy()
    credit = np.where(p > 0.5, forward, np.where(p < 0.5, ~forward, 0.5)).astype(float)
    rows = rows.assign(logit_correct=np.where(p.notna(), credit, np.nan))
    logit = rows.groupby("observer", observed=True)["logit_correct"].agg(["count", "mean"])
    models = rows["observer"].unique()
    out = pd.DataFrame({"observer": sorted(models)})
    m = metrics.reindex(out["observer"])
    out["n_trials"] = m["n_trials"].to_numpy()
    out["n_answered"] = m["n_answered"].to_numpy()
    out["text_accuracy"] = np.where(out["n_answered"] > 0, m["accuracy"].to_numpy(), np.nan)
    lg = logit.reindex(out["observer"])
    out["n_scored"] = lg["count"].fillna(0).astype(int).to_numpy()
    out["logit_accuracy"] = lg["mean"].to_numpy()
    out["human_accuracy"] = human
    out["gap_text_points"] = 100 * (human - out["text_accuracy"])
    out["gap_logit_points"] = 100 * (human - out["logit_accuracy"])
    out["note"] = [_note(r) for r in out.itertuples()]
    return out


def _note(row) -> str:
    notes = []
    if row.n_answered == 0:
        notes.append(f"text accuracy n/a: no readable answer in {row.n_trials} trials")
    if row.n_scored == 0:
        notes.append("logit accuracy n/a: no logit scores (generated answers only)")
    return "; ".join(notes)
