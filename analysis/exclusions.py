"""The exclusion flow from trial rows alone: participants and trials removed per reason.

It needs only the canonical trial columns, so ``manage.py analyze`` can draw it from an
exported CSV. (:mod:`analysis.exclusion_flow` is the dashboard's participant flow, from
the participants table with session statuses: consent, unfinished sessions.)
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import columns as C

UNSPECIFIED = "unspecified"
FLOW_COLUMNS = ("step", "n_participants_removed", "n_trials_removed",
                "n_participants_remaining", "n_trials_remaining")


def trial_exclusion_flow(data: pd.DataFrame, subject: str = "subject_id") -> pd.DataFrame:
    """Entered -> failed practice gate -> each further reason -> remaining.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials with ``excluded`` and ``exclusion_reasons`` (a list of reason
        codes per trial, participant-level reasons repeated on each of their trials).
        Only people are counted when the table holds any.

    Returns
    -------
    pandas.DataFrame
        Rows ``entered``, ``practice_gate``, each other reason (most frequent first),
        ``remaining``; columns ``step, n_participants_removed, n_trials_removed,
        n_participants_remaining, n_trials_remaining``.

    Notes
    -----
    Steps are applied in order, and a trial with several reasons is charged to the first
    step that names it, so the removed counts add up to entered minus remaining. A
    participant is removed at the step that removes their last remaining trial. Trials
    flagged ``excluded`` without a reason are charged to ``"unspecified"``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"subject_id": ["a", "a", "b"], "subject_kind": "human",
    ...                    "excluded": [True, True, False],
    ...                    "exclusion_reasons": [["practice_gate"]] * 2 + [[]]})
    >>> trial_exclusion_flow(df).n_trials_remaining.tolist()
    [3, 1, 1]
    """
    if (data["subject_kind"] == C.HUMAN).any():
        data = data[data["subject_kind"] == C.HUMAN]
    excluded = data["excluded"].astype(bool).to_numpy()
    # Few distinct (excluded, reasons) combinations exist; work on those, not on every row.
    keys = pd.Series(list(zip(excluded, map(tuple, data["exclusion_reasons"]))), dtype=object)
    codes, uniques = pd.factorize(keys.to_numpy())
    reasons = [list(r) if r else ([UNSPECIFIED] if ex else []) for ex, r in uniques]
    per_key = np.bincount(codes, minlength=len(uniques))
    counts = pd.Series(dict.fromkeys({r for rs in reasons for r in rs}, 0), dtype=int)
    for rs, n in zip(reasons, per_key):
        counts[rs] += n
    counts = counts.sort_values(ascending=False, kind="stable")
    order = [C.REASON_PRACTICE_GATE] + [r for r in counts.index if r != C.REASON_PRACTICE_GATE]
    rank = {r: i for i, r in enumerate(order)}
    key_step = np.array([min((rank[r] for r in rs), default=len(order)) if ex else len(order)
                         for (ex, _), rs in zip(uniques, reasons)], dtype=int)
    step = key_step[codes] if len(codes) else np.zeros(0, dtype=int)
    subjects = data[subject].to_numpy()
    # A participant leaves at the latest step among their trials.
    last_step = pd.Series(step).groupby(subjects).max()
    rows = [_row("entered", 0, 0, len(last_step), len(step))]
    n_p, n_t = len(last_step), len(step)
    for i, reason in enumerate(order):
        removed_t = int((step == i).sum())
        removed_p = int((last_step == i).sum())
        n_p, n_t = n_p - removed_p, n_t - removed_t
        rows.append(_row(reason, removed_p, removed_t, n_p, n_t))
    rows.append(_row("remaining", 0, 0, n_p, n_t))
    return pd.DataFrame(rows, columns=list(FLOW_COLUMNS))


def _row(step, removed_p, removed_t, remaining_p, remaining_t):
    return {"step": step, "n_participants_removed": removed_p, "n_trials_removed": removed_t,
            "n_participants_remaining": remaining_p, "n_trials_remaining": remaining_t}
