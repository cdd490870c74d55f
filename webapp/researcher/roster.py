"""A study's roster: one row per session, with its status as a researcher sees it, and the
participant flow the dashboard draws from it.

The flow is counted here, on sessions, rather than on the trial table by
``analysis.exclusions.trial_exclusion_flow``: a live study has participants without any
stored trial (not yet consented, declined, still in practice), and they count as entered.
"""
from datetime import datetime, timedelta
from typing import Sequence

import pandas as pd
from flask import current_app
from sqlalchemy import func, select

from analysis.columns import REASON_PRACTICE_GATE
from analysis.exclusions import apply_manual_rules
from experiments import timing_quality, verdict
from experiments.exclusions import RECORD_FIELDS
from webapp.extensions import db
from webapp.models import ModelRun, Session, Study, Subject, Trial
from webapp.models._types import utcnow
from webapp.models.manual_exclusion import RULE_COLUMNS, latest_rules
from webapp.trials import EXPORT_COLUMNS, trials_frame

ROSTER_COLUMNS = [
    "subject_id", "subject_kind", "session_id", "session_number", "status", "excluded",
    "exclusion_reasons", "simulated", "study_version", "n_trials_stored", "n_trials_scheduled", "timing_quality",
    "started_at", "last_seen_at",
    "completed_at", "condition", "device_info", "recruitment", "resumes",
    # A researcher's latest manual rule on the participant (empty without one).
    "manual_action", "manual_reason", "manual_by", "manual_at",
]
JSON_ROSTER_COLUMNS = ("exclusion_reasons", "condition", "device_info", "recruitment", "resumes")
FLOW_COLUMNS = ("step", "n_removed", "n_remaining")


def roster_frame(slug: str, now: datetime | None = None) -> pd.DataFrame:
    """One row per session of study ``slug`` (humans and models), oldest first.

    ``status`` is the stored session status, except that an unfinished session whose last
    heartbeat is older than ABANDONED_AFTER_MINUTES reads "abandoned" (never stored: the
    participant may still come back). Trial counts come from the same SELECT as the rows.
    """
    stored = (select(func.count(Trial.id)).where(Trial.session_id == Session.id)
              .correlate(Session).scalar_subquery())
    query = (
        select(Subject.external_id.label("subject_id"), Subject.kind.label("subject_kind"),
               Subject.recruitment, Session, ModelRun, stored.label("n_trials_stored"))
        .join(Session.subject).join(Subject.study)
        .outerjoin(ModelRun, ModelRun.session_id == Session.id)
        .where(Study.slug == slug, Session.preview.is_(False))  # previews are no participants
        .order_by(Session.started_at, Session.id))
    rows = db.session.execute(query).all()
    cutoff = (now or utcnow()) - timedelta(minutes=current_app.config["ABANDONED_AFTER_MINUTES"])
    scores = timing_scores(slug)
    sessions = pd.DataFrame([{**_record(row, cutoff), "timing_quality": scores.get(row.Session.id)}
                             for row in rows], columns=ROSTER_COLUMNS[:-len(MANUAL_COLUMNS)])
    return with_manual_rules(sessions, latest_rules(slug))[ROSTER_COLUMNS]


MANUAL_COLUMNS = RULE_COLUMNS[1:-1]


def timing_scores(slug: str) -> dict[int, float | None]:
    """Each session's timing-quality score (:func:`experiments.timing_quality.session_score`),
    from the fields its stored clip trials carry; sessions without trials are left out."""
    query = (select(Trial.session_id, *(getattr(Trial, name) for name in RECORD_FIELDS))
             .join(Trial.session).join(Session.subject).join(Subject.study)
             .where(Study.slug == slug))
    by_session: dict[int, list[dict]] = {}
    for row in db.session.execute(query).mappings():
        by_session.setdefault(row["session_id"], []).append(dict(row))
    return {session: timing_quality.session_score(records)
            for session, records in by_session.items()}


def study_trials(slug: str) -> pd.DataFrame:
    """The canonical trial table of study ``slug`` with its manual rules applied: what the
    export writes and the dashboard counts (``webapp.trials.trials_frame`` gives the rules'
    flags alone)."""
    trials = trials_frame(slug)
    previews = set(db.session.scalars(
        select(Session.id).join(Session.subject).join(Subject.study)
        .where(Study.slug == slug, Session.preview.is_(True))))
    if previews:  # a researcher's preview is no participant: never exported nor reported
        trials = trials[~trials["session_id"].isin(previews)].reset_index(drop=True)
    trials = with_manual_rules(trials, latest_rules(slug))
    return trials[EXPORT_COLUMNS]


def with_manual_rules(sessions: pd.DataFrame, rules: pd.DataFrame) -> pd.DataFrame:
    """The roster with each participant's latest manual rule applied to its verdict
    (:func:`analysis.exclusions.apply_manual_rules`) and shown in the ``manual_*`` columns.
    Model runs are never matched: rules name human participants only."""
    rules = rules.set_index("subject_id")
    human = sessions["subject_kind"] == "human"
    key = sessions["subject_id"].where(human)  # a model named like a participant stays as is
    out = apply_manual_rules(sessions.assign(rule_key=key),
                             rules.reset_index().rename(columns={"subject_id": "rule_key"}),
                             subject="rule_key")
    for column in MANUAL_COLUMNS:
        values = key.map(rules[column]) if len(rules) else pd.Series(None, index=out.index)
        blank = None if column == "manual_at" else ""
        out[column] = values.astype(object).where(values.notna(), blank)
    return out.drop(columns="rule_key")


def _record(row, cutoff: datetime) -> dict:
    session: Session = row.Session
    # A model run keeps its items and provenance in its ModelRun, not in the fields of a
    # person's session (schedule, device_info).
    run: ModelRun | None = row.ModelRun
    status = session.status
    if status in verdict.UNFINISHED and session.last_seen_at < cutoff:
        status = "abandoned"
    excluded, reasons = verdict.read(session.excluded, session.exclusion_reasons,
                                     simulated=session.simulated)
    return {
        "subject_id": row.subject_id, "subject_kind": row.subject_kind,
        "session_id": session.id, "session_number": session.session_number, "status": status,
        "excluded": excluded, "exclusion_reasons": reasons,
        "simulated": bool(session.simulated),
        "study_version": session.study_version,
        "n_trials_stored": int(row.n_trials_stored),
        "n_trials_scheduled": len(run.item_keys if run else session.schedule or []),
        "started_at": session.started_at, "last_seen_at": session.last_seen_at,
        "completed_at": session.completed_at, "condition": dict(session.condition or {}),
        "device_info": run.provenance() if run else dict(session.device_info or {}),
        "recruitment": dict(row.recruitment or {}),
        "resumes": list(session.resumes or []),
    }


def subject_summary(roster: pd.DataFrame) -> pd.DataFrame:
    """One row per subject for the exclusion flow: the latest session's status, every reason.

    A subject of a two-session design is excluded when any session is; its status is that
    of its latest session.
    """
    columns = ["subject_id", "status", "excluded", "exclusion_reasons"]
    if roster.empty:
        return pd.DataFrame(columns=columns)
    latest = roster.sort_values(["session_number", "session_id"]).groupby("subject_id").tail(1)
    by_subject = roster.groupby("subject_id")
    out = latest.set_index("subject_id")[["status"]]
    out["excluded"] = by_subject["excluded"].any()
    out["exclusion_reasons"] = by_subject["exclusion_reasons"].apply(
        lambda lists: list(dict.fromkeys(r for rs in lists for r in rs)))
    return out.reset_index()[columns]


def participant_flow(participants: pd.DataFrame, status: str = "status",
                     excluded: str = "excluded", reasons: str = "exclusion_reasons",
                     reason_order: Sequence[str] | None = None) -> pd.DataFrame:
    """Count participants through consent, the practice gate, each exclusion reason, completion.

    Parameters
    ----------
    participants : pandas.DataFrame
        One row per participant with a session status (``"no_consent"``,
        ``"failed_practice"``, ``"started"``, ``"in_progress"``, ``"abandoned"``,
        ``"completed"`` ...), a boolean exclusion flag and a list of reason codes.
    status, excluded, reasons : str
        Column names.
    reason_order : sequence of str, optional
        Order in which exclusion reasons are applied; reasons not named follow, most
        frequent first. Default: most frequent first.

    Returns
    -------
    pandas.DataFrame
        Columns ``step, n_removed, n_remaining``: first ``"entered"`` (n_removed 0), then
        ``"no consent"``, ``"failed practice gate"``, one ``"excluded: <reason>"`` per
        reason in ``reason_order`` and per other reason present (and
        ``"excluded: unspecified"`` for flagged rows without a code),
        ``"not finished"``, and last ``"remaining"`` (n_removed 0). The fixed steps are
        kept when they remove nobody, so every study's flow has the same frame.

    Notes
    -----
    Each participant is removed once, at the first step that applies (a participant
    excluded for two reasons counts under the first in ``reason_order``), so the removed
    counts sum to ``entered - remaining``. Failing the practice gate is either status
    ``"failed_practice"`` or the ``practice_gate`` reason code.

    Examples
    --------
    >>> import pandas as pd
    >>> p = pd.DataFrame({"status": ["completed", "completed", "failed_practice", "in_progress"],
    ...                   "excluded": [False, True, True, False],
    ...                   "exclusion_reasons": [[], ["catch_failed"], ["practice_gate"], []]})
    >>> participant_flow(p)[["step", "n_remaining"]].values.tolist()[-3:]
    [['excluded: catch_failed', 2], ['not finished', 1], ['remaining', 1]]
    """
    for col in (status, excluded, reasons):
        if col not in participants.columns:
            raise ValueError(f"participants table lacks column {col!r}")
    lists = participants[reasons].map(lambda r: list(r) if isinstance(r, (list, tuple)) else [])
    left = pd.Series(True, index=participants.index)
    steps = [("entered", 0)]

    def remove(step: str, mask: pd.Series, keep_empty: bool = True) -> None:
        hit = left & mask
        left[hit] = False
        if keep_empty or hit.any():
            steps.append((step, int(hit.sum())))

    remove("no consent", participants[status] == verdict.NO_CONSENT)
    remove("failed practice gate", (participants[status] == verdict.FAILED_PRACTICE)
           | lists.map(lambda r: REASON_PRACTICE_GATE in r))
    flagged = participants[excluded].astype(bool)
    for reason in _ordered_reasons(lists[left & flagged], reason_order):
        remove(f"excluded: {reason}", flagged & lists.map(lambda r, code=reason: code in r))
    remove("excluded: unspecified", flagged, keep_empty=False)
    remove("not finished", participants[status].isin((*verdict.UNFINISHED, "abandoned")))
    steps.append(("remaining", 0))
    out = pd.DataFrame(steps, columns=["step", "n_removed"])
    out["n_remaining"] = len(participants) - out["n_removed"].cumsum()
    return out[list(FLOW_COLUMNS)]


def _ordered_reasons(lists: pd.Series, reason_order: Sequence[str] | None) -> list[str]:
    counts = lists.explode().dropna().value_counts()
    named = [r for r in (reason_order or ()) if r != REASON_PRACTICE_GATE]
    rest = [r for r in counts.index if r not in named and r != REASON_PRACTICE_GATE]
    return named + rest
