"""The exclusion flow from trial rows alone: participants and trials removed per reason.

It needs only the canonical trial columns, so ``manage.py analyze`` can draw it from an
exported CSV; people who entered without a trial (screened out, declined consent) are counted
only when the sessions table is given too, as ``manage.py report STUDY`` does. (:func:`webapp.researcher.roster.participant_flow` is the dashboard's
participant flow, from the participants table with session statuses: consent, unfinished
sessions.)
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import loading
from experiments import verdict
from experiments.exclusions import MANUAL

UNSPECIFIED = "unspecified"
# Trials nobody excluded that are still not analysed: practice and attention checks.
PRACTICE_TRIALS, CATCH_TRIALS = "practice_trials", "catch_trials"
FLOW_COLUMNS = ("step", "n_participants_removed", "n_trials_removed",
                "n_participants_remaining", "n_trials_remaining")


def apply_manual_rules(data: pd.DataFrame, rules: pd.DataFrame, subject: str = "subject_id",
                       action: str = "manual_action") -> pd.DataFrame:
    """A researcher's latest verdict on each participant, applied over the rules' flags
    (:func:`experiments.verdict.read` on each of their rows).

    Parameters
    ----------
    data : pandas.DataFrame
        Rows of participants with ``excluded`` and ``exclusion_reasons`` (a list per row):
        canonical trials, or one row per session.
    rules : pandas.DataFrame
        One row per participant with a manual rule: ``subject`` and ``action``
        (``"exclude"`` or ``"reinstate"``).

    Returns
    -------
    pandas.DataFrame
        ``data`` with, for an excluded participant, every row ``excluded`` and reason
        ``"manual"`` added last; for a reinstated one, the participant-level reasons
        (:data:`experiments.verdict.LIFTED_BY_REINSTATE`) taken out and ``excluded`` kept only where a reason
        is left (a trial's own, e.g. a timeout). Other rows are unchanged.

    Examples
    --------
    >>> import pandas as pd
    >>> trials = pd.DataFrame({"subject_id": ["a", "a", "b"], "excluded": [True, True, False],
    ...                        "exclusion_reasons": [["catch_failed"], ["timeout", "catch_failed"], []]})
    >>> rules = pd.DataFrame({"subject_id": ["a", "b"], "manual_action": ["reinstate", "exclude"]})
    >>> apply_manual_rules(trials, rules).exclusion_reasons.tolist()
    [[], ['timeout'], ['manual']]
    """
    latest = dict(zip(rules[subject], rules[action])) if len(rules) else {}
    if not latest or data.empty:
        return data
    unknown = set(latest.values()) - set(verdict.MANUAL_ACTIONS)
    if unknown:
        raise ValueError(f"unknown manual action(s) {sorted(unknown)}")
    acts = data[subject].map(latest).to_numpy(dtype=object)
    reasons = data["exclusion_reasons"].to_numpy(dtype=object).copy()
    excluded = data["excluded"].to_numpy(dtype=bool).copy()
    for i in np.flatnonzero(pd.notna(acts)):
        excluded[i], reasons[i] = verdict.read(excluded[i], reasons[i], manual=acts[i])
    return data.assign(excluded=excluded, exclusion_reasons=reasons)


def apply_session_rule(data: pd.DataFrame, sessions: str = "completed"
                       ) -> tuple[pd.DataFrame, dict]:
    """Exclude people's trials from sessions the rule leaves out.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials with ``session_status``.
    sessions : str
        A key of :data:`analysis.columns.SESSION_RULES`: ``"completed"`` keeps people's
        sessions whose status is ``"completed"``; ``"all"`` keeps every session. Model runs
        are kept as stored either way (an incomplete run lacks items, not answers).

    Returns
    -------
    (pandas.DataFrame, dict)
        The trials, those left out flagged ``excluded`` with reason
        :data:`analysis.columns.REASON_SESSION_NOT_COMPLETED` added last; and
        ``{"sessions", "rule", "n_sessions_left_out", "n_trials_left_out",
        "statuses_left_out"}`` (status -> sessions) to state in the report.

    Raises
    ------
    ValueError
        For an unknown rule, or when people's trials have no ``session_status`` (a trial
        table exported before it had that column) and the rule needs it.
    """
    if sessions not in C.SESSION_RULES:
        raise ValueError(f"unknown session rule {sessions!r}; allowed: "
                         f"{', '.join(map(repr, C.SESSION_RULES))}")
    people = (data["subject_kind"] == C.HUMAN).to_numpy()
    status = data["session_status"].astype(object).to_numpy() if "session_status" in data \
        else np.full(len(data), None, dtype=object)
    info = {"sessions": sessions, "rule": C.SESSION_RULES[sessions], "n_sessions_left_out": 0,
            "n_trials_left_out": 0, "statuses_left_out": {}}
    if sessions == "all":
        return data, info
    unknown = people & pd.isna(status)
    if unknown.any():
        raise ValueError(f"{int(unknown.sum())} trials of people have no session_status, so "
                         "'completed sessions only' cannot be applied (a trial table exported "
                         "before that column existed?): export the study again, or analyse "
                         "every session with --sessions all")
    out = people & (status != C.SESSION_COMPLETED)
    if not out.any():
        return data, info
    left = data[out].drop_duplicates(["subject_id", "session_id"])
    info.update(n_sessions_left_out=len(left), n_trials_left_out=int(out.sum()),
                statuses_left_out=left["session_status"].astype(str).value_counts()
                .sort_index().to_dict())
    data = data.copy()
    reasons = data["exclusion_reasons"].to_numpy(dtype=object).copy()
    for i in np.flatnonzero(out):
        reasons[i] = [*reasons[i], C.REASON_SESSION_NOT_COMPLETED]
    data["exclusion_reasons"] = reasons
    data["excluded"] = data["excluded"].to_numpy(dtype=bool) | out
    return data, info


def trial_exclusion_flow(data: pd.DataFrame, subject: str = "subject_id",
                         participants: pd.DataFrame | None = None) -> pd.DataFrame:
    """Entered -> without trials, by status -> failed practice gate -> each further reason ->
    sessions not completed -> practice and catch trials (not analysed) -> remaining, the
    trials analysed.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials with ``excluded`` and ``exclusion_reasons`` (a list of reason
        codes per trial, participant-level reasons repeated on each of their trials).
        Only people are counted when the table holds any.
    participants : pandas.DataFrame, optional
        One row per session, oldest first, with ``subject``, ``subject_kind`` and
        ``status`` (the export's participants.csv). People in it without a trial in
        ``data`` (screened out, declined consent, left before a trial) enter the flow too
        and leave it at once, at a step named by their latest session's status. A trial
        table alone cannot see them.

    Returns
    -------
    pandas.DataFrame
        Rows ``entered``, with ``participants`` one per status of people without trials
        (``screened_out``, ``no_consent`` ..., most frequent first), ``practice_gate``,
        each other reason (most frequent first), then
        where present ``manual`` (a researcher's exclusion), ``session_not_completed``,
        ``practice_trials`` and ``catch_trials``,
        and ``remaining``; columns ``step, n_participants_removed, n_trials_removed,
        n_participants_remaining, n_trials_remaining``.

    Notes
    -----
    Steps are applied in order, and a trial with several reasons is charged to the first
    step that names it, so the removed counts add up to entered minus remaining. A
    participant is removed at the step that removes their last remaining trial. Trials
    flagged ``excluded`` without a reason are charged to ``"unspecified"``. The session
    rule comes after the recorded reasons, so it is charged only with what nothing else
    removes (e.g. a session still in progress); practice trials and catch trials that
    nobody excluded come last: they are not analysed, so ``remaining`` is the analysed N.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"subject_id": ["a", "a", "b"], "subject_kind": "human",
    ...                    "excluded": [True, True, False],
    ...                    "exclusion_reasons": [["practice_gate"]] * 2 + [[]]})
    >>> trial_exclusion_flow(df).n_trials_remaining.tolist()
    [3, 1, 1]
    """
    people = (data["subject_kind"] == C.HUMAN).to_numpy(bool)
    columns = [c for c in (subject, "excluded", "exclusion_reasons", "trial_type", "block")
               if c in data.columns]
    data = data.loc[people, columns] if people.any() else data[columns]
    excluded = data["excluded"].astype(bool).to_numpy()
    unused = _not_analysed(data)
    # Few distinct (excluded, reasons) combinations exist; work on those, not on every row.
    by_reasons, reason_sets = loading.list_codes(data["exclusion_reasons"].to_numpy(object))
    by_unused, unused_kinds = pd.factorize(unused)
    codes, combined = pd.factorize((excluded * len(reason_sets) + by_reasons)
                                   * len(unused_kinds) + by_unused)
    rest, u = np.divmod(combined, len(unused_kinds))
    uniques = [(bool(ex), reason_sets[r], unused_kinds[k])
               for ex, r, k in zip(*np.divmod(rest, len(reason_sets)), u)]
    reasons = [(list(r) or [UNSPECIFIED]) if ex else ([u] if u else [])
               for ex, r, u in uniques]
    per_key = np.bincount(codes, minlength=len(uniques))
    counts = pd.Series(dict.fromkeys({r for rs in reasons for r in rs}, 0), dtype=int)
    for rs, n in zip(reasons, per_key):
        counts[rs] += n
    counts = counts.sort_values(ascending=False, kind="stable")
    last = [C.REASON_SESSION_NOT_COMPLETED, PRACTICE_TRIALS, CATCH_TRIALS]
    # A researcher's exclusion is charged only with whom no rule removed first.
    order = [C.REASON_PRACTICE_GATE] + \
        [r for r in counts.index if r not in (C.REASON_PRACTICE_GATE, MANUAL, *last)] + \
        [r for r in (MANUAL, *last) if r in counts.index]
    rank = {r: i for i, r in enumerate(order)}
    key_step = np.array([min((rank[r] for r in rs), default=len(order))
                         for rs in reasons], dtype=int)
    step = key_step[codes] if len(codes) else np.zeros(0, dtype=int)
    subjects = data[subject].to_numpy()
    # A participant leaves at the latest step among their trials.
    last_step = pd.Series(step).groupby(subjects).max()
    without = _without_trials(participants, set(subjects), subject)
    n_p, n_t = len(last_step) + int(without.sum()), len(step)
    rows = [_row("entered", 0, 0, n_p, n_t)]
    for status, removed_p in without.items():
        n_p -= int(removed_p)
        rows.append(_row(status, int(removed_p), 0, n_p, n_t))
    for i, reason in enumerate(order):
        removed_t = int((step == i).sum())
        removed_p = int((last_step == i).sum())
        n_p, n_t = n_p - removed_p, n_t - removed_t
        rows.append(_row(reason, removed_p, removed_t, n_p, n_t))
    rows.append(_row("remaining", 0, 0, n_p, n_t))
    return pd.DataFrame(rows, columns=list(FLOW_COLUMNS))


def _without_trials(participants: pd.DataFrame | None, seen: set, subject: str) -> pd.Series:
    """How many people of ``participants`` have no trial (not in ``seen``), by the status of
    their latest session, most frequent first."""
    if participants is None:
        return pd.Series(dtype=int)
    people = participants[(participants["subject_kind"] == C.HUMAN)
                          & ~participants[subject].isin(seen)]
    return people.groupby(subject)["status"].last().value_counts()


def _not_analysed(data: pd.DataFrame) -> np.ndarray:
    """Per row: ``"practice_trials"``, ``"catch_trials"`` or ``""`` (analysed if kept)."""
    out = np.full(len(data), "", dtype=object)
    if "trial_type" in data.columns:
        out[(data["trial_type"] == C.CATCH).to_numpy(dtype=bool)] = CATCH_TRIALS
    if "block" in data.columns:
        out[(data["block"] == C.PRACTICE_BLOCK).to_numpy(dtype=bool)] = PRACTICE_TRIALS
    return out


def _row(step, removed_p, removed_t, remaining_p, remaining_t):
    return {"step": step, "n_participants_removed": removed_p, "n_trials_removed": removed_t,
            "n_participants_remaining": remaining_p, "n_trials_remaining": remaining_t}
