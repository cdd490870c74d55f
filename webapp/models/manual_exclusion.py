"""Manual exclusion rules: a researcher excludes or reinstates a participant, with a reason.

Rules are appended, never changed or deleted, and never touch trial data: the latest rule of
a participant wins when the roster, the trial table and the exports are read. ``sequence``
numbers a study's rules 1, 2, 3 ...; it is unique per study, so two submissions racing each
other cannot both be rule ``n``, and it versions the study's rules (:func:`rules_version`).
"""
from datetime import datetime

import pandas as pd
from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column, relationship

from experiments import verdict
from experiments.exclusions import SIMULATED
from webapp.extensions import Model, db
from webapp.models._types import UTCDateTime, utcnow
from webapp.models.study import Session, Study, Subject

ACTIONS = verdict.MANUAL_ACTIONS
MAX_REASON = 500
RULE_COLUMNS = ("subject_id", "manual_action", "manual_reason", "manual_by", "manual_at",
                "manual_rule")
VERSION_MARK = "+manual."


class ManualExclusion(Model):
    __tablename__ = "manual_exclusion"
    __table_args__ = (UniqueConstraint("study_id", "sequence"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("study.id"), index=True)
    subject_id: Mapped[int] = mapped_column(ForeignKey("subject.id"), index=True)
    sequence: Mapped[int] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(10))  # one of ACTIONS
    reason: Mapped[str] = mapped_column(Text)
    # The username, not a key: the record outlives the account.
    researcher: Mapped[str] = mapped_column(String(80))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    subject: Mapped[Subject] = relationship()


class ManualRuleError(ValueError):
    """A rule that cannot be added; ``status`` is the HTTP status a view answers with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def add_rule(study: Study, participant: str, action: str, reason: str | None,
             researcher: str) -> ManualExclusion:
    """Append rule ``action`` for ``participant`` (a human subject's recruitment id).

    Raises
    ------
    ManualRuleError
        400 for an unknown action, a missing or too long reason, or reinstating a
        simulated session; 404 for no such participant; 409 when the participant is
        already in the state asked for (a double submit, or reinstating someone nobody
        excluded).
    """
    if action not in ACTIONS:
        raise ManualRuleError(f"unknown action {action!r}; expected exclude or reinstate")
    reason = (reason or "").strip()
    if not reason:
        raise ManualRuleError(f"A reason is required to {action} a participant.")
    if len(reason) > MAX_REASON:
        raise ManualRuleError(f"The reason is too long ({len(reason)} characters; "
                              f"at most {MAX_REASON}).")
    subject = db.session.scalar(select(Subject).where(
        Subject.study_id == study.id, Subject.kind == "human", Subject.external_id == participant))
    if subject is None:
        raise ManualRuleError(f"No participant {participant!r} in {study.slug!r}.", 404)
    _check_change(study, subject, action)
    rule = ManualExclusion(study_id=study.id, subject_id=subject.id, action=action,
                           reason=reason, researcher=researcher,
                           sequence=_count(study.id) + 1)
    db.session.add(rule)
    try:
        db.session.flush()
    except IntegrityError as error:  # another rule took this sequence number first
        db.session.rollback()
        raise ManualRuleError("Another change to this study's exclusions was saved at the "
                              "same moment; reload and check before trying again.", 409) from error
    study.exclusion_rules_version = rules_version(study, rule.sequence)
    db.session.commit()
    return rule


def _check_change(study: Study, subject: Subject, action: str) -> None:
    latest = db.session.scalar(select(ManualExclusion.action)
                               .where(ManualExclusion.subject_id == subject.id)
                               .order_by(ManualExclusion.sequence.desc()).limit(1))
    sessions = db.session.execute(select(Session.excluded, Session.exclusion_reasons,
                                         Session.simulated)
                                  .where(Session.subject_id == subject.id)).all()
    who = subject.external_id
    if action == verdict.EXCLUDE:
        if latest == verdict.EXCLUDE:
            raise ManualRuleError(f"{who!r} is already excluded by hand.", 409)
        return
    if any(s.simulated or SIMULATED in (s.exclusion_reasons or []) for s in sessions):
        raise ManualRuleError(f"{who!r} is a simulated session (a preview), which is always "
                              "excluded.")
    by_rules = any(s.excluded for s in sessions)
    if latest == verdict.REINSTATE or (latest is None and not by_rules):
        raise ManualRuleError(f"{who!r} is not excluded; there is nothing to reinstate.", 409)


def _count(study_id: int) -> int:
    return db.session.scalar(select(func.count(ManualExclusion.id))
                             .where(ManualExclusion.study_id == study_id)) or 0


def rules_version(study: Study, n_manual: int | None = None) -> str | None:
    """The study's rules version with its manual rules counted: ``"2026.11-2+manual.3"``.

    The automatic rules' version is kept in front, so a rule change and a manual change both
    show; without manual rules it is the stored version unchanged.
    """
    n = _count(study.id) if n_manual is None else n_manual
    base = (study.exclusion_rules_version or "").split(VERSION_MARK)[0] or \
        ((study.design_snapshot or {}).get("exclusions") or {}).get("version")
    return f"{base}{VERSION_MARK}{n}" if n else base


def latest_rules(slug: str) -> pd.DataFrame:
    """The latest manual rule of each participant of study ``slug`` who has one.

    Columns :data:`RULE_COLUMNS`: ``subject_id`` (recruitment id), ``manual_action``,
    ``manual_reason``, ``manual_by``, ``manual_at`` and ``manual_rule`` (its sequence).
    """
    rows = db.session.execute(
        select(Subject.external_id, ManualExclusion.action, ManualExclusion.reason,
               ManualExclusion.researcher, ManualExclusion.created_at, ManualExclusion.sequence)
        .join(ManualExclusion.subject).join(Study, Study.id == ManualExclusion.study_id)
        .where(Study.slug == slug).order_by(ManualExclusion.sequence)).all()
    rules = pd.DataFrame([tuple(r) for r in rows], columns=list(RULE_COLUMNS))
    return rules.drop_duplicates("subject_id", keep="last").reset_index(drop=True)


def history(study: Study) -> list[ManualExclusion]:
    """Every manual rule of ``study``, newest first."""
    return list(db.session.scalars(select(ManualExclusion)
                                   .where(ManualExclusion.study_id == study.id)
                                   .order_by(ManualExclusion.sequence.desc())))
