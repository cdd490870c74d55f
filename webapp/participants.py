"""Participant services: entry and resume, schedules, consent, device, heartbeat, codes.

Views stay thin: they parse, call one function here (or in :mod:`webapp.participant_trials`)
and render.  A recruitment id maps to one Subject per experiment; entering again resumes
its unfinished session, or opens the next session of a multi-session design once it is
available, and never creates a second subject.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
from flask import current_app
from sqlalchemy import bindparam, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import joinedload

from experiments import schedule as scheduling
from experiments.catalog_records import Catalog, CatchRecord, ClipRecord, StimulusRecord
from experiments.designs import Design, design_from_snapshot
from webapp.database import write_transaction
from webapp.extensions import db
from webapp.models import Experiment, Session, SourceClip, Stimulus, Subject

RECRUITMENT_KEYS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "participant")
_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,200}$")
ACTIVE = ("started", "in_progress")
ENDED = ("completed", "failed_attention", "failed_practice", "no_consent")
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete?cc={code}"


@dataclass
class Entry:
    """What the entry link leads to: run | done | wait | closed | invalid | unavailable."""

    outcome: str
    session: Session | None = None
    message: str = ""
    opens_at: datetime | None = None


def now() -> datetime:
    return datetime.now(timezone.utc)


def experiment_design(experiment: Experiment) -> Design:
    return design_from_snapshot(experiment.design, experiment.design_snapshot)


def recruitment_from(args: Mapping[str, str]) -> tuple[str, dict]:
    """(external id, recruitment dict) from the entry link's query, or ValueError."""
    recruitment = {k: args[k] for k in RECRUITMENT_KEYS if args.get(k)}
    external_id = recruitment.get("PROLIFIC_PID") or recruitment.get("participant")
    if not external_id:
        raise ValueError("this link needs a participant id (PROLIFIC_PID or participant)")
    bad = [k for k, v in recruitment.items() if not _ID.match(v)]
    if bad:
        raise ValueError(f"invalid recruitment parameter(s): {', '.join(bad)}")
    return external_id, recruitment


def enter(slug: str, args: Mapping[str, str]) -> Entry:
    """Resolve an entry link to a session to run (creating subject and session as needed)."""
    experiment = db.session.scalar(select(Experiment).where(Experiment.slug == slug))
    if experiment is None:
        return Entry("closed", message="There is no study at this address.")
    if experiment.status not in ("open", "paused"):
        return Entry("closed", message="This study is not open at the moment.")
    try:
        external_id, recruitment = recruitment_from(args)
    except ValueError as error:
        return Entry("invalid", message=str(error))
    if experiment.status == "paused":  # no new participants; those inside may finish
        return _resume_only(experiment, external_id)
    subject = _subject(experiment, external_id, recruitment)
    try:
        return _session_entry(experiment, subject)
    except scheduling.ScheduleError as error:  # a study set up on an unusable stimulus set
        db.session.rollback()
        current_app.logger.error("study %s cannot schedule: %s", slug, error)
        return Entry("unavailable", message="This study cannot start at the moment.")


def _resume_only(experiment: Experiment, external_id: str) -> Entry:
    active = db.session.scalar(
        select(Session).join(Session.subject)
        .where(Subject.experiment_id == experiment.id, Subject.kind == "human",
               Subject.external_id == external_id, Session.status.in_(ACTIVE)))
    if active is None:
        return Entry("closed", message="This study is not open at the moment.")
    return Entry("run", active)


def _subject(experiment: Experiment, external_id: str, recruitment: dict) -> Subject:
    query = select(Subject).where(Subject.experiment_id == experiment.id, Subject.kind == "human",
                                  Subject.external_id == external_id)
    subject = db.session.scalar(query)
    if subject is not None:
        return subject
    try:
        with write_transaction() as session:
            subject = Subject(experiment_id=experiment.id, kind="human", external_id=external_id,
                              recruitment=recruitment)
            session.add(subject)
    except IntegrityError:  # the same id entered twice at once: keep the first
        subject = db.session.scalar(query)
    return subject


def _session_entry(experiment: Experiment, subject: Subject) -> Entry:
    design = experiment_design(experiment)
    sessions = sorted(subject.sessions, key=lambda s: s.session_number)
    if not sessions:
        return Entry("run", _new_session(experiment, design, subject, 1))
    last = sessions[-1]
    if last.status in ACTIVE:
        return Entry("run", last)
    if last.status != "completed" or last.session_number >= design.sessions:
        return Entry("done", last, message=_done_message(last))
    opens_at = scheduling.session_opens_at(design, last.completed_at or now())
    if now() < opens_at:
        return Entry("wait", last, opens_at=opens_at)
    return Entry("run", _new_session(experiment, design, subject, last.session_number + 1, last))


def _done_message(session: Session) -> str:
    if session.status == "completed":
        return "You have already completed this study. Thank you!"
    return "You have already taken part in this study."


def _new_session(experiment: Experiment, design: Design, subject: Subject, number: int,
                 previous: Session | None = None) -> Session:
    if previous is None:
        seed = secrets.randbelow(2**31 - 1)
        condition = scheduling.choose_condition(design, condition_counts(experiment),
                                                np.random.default_rng(seed))
    else:  # later sessions continue the participant's seed and between-subject cell
        seed, condition = previous.seed, dict(previous.condition)
    catalog = load_catalog(experiment.stimulus_set, design.catch_set)
    condition["catch_available"] = bool(catalog.catch)
    schedule = scheduling.build_schedule(design, catalog, seed, number, condition)
    subject_id = subject.id
    try:
        with write_transaction() as transaction:
            session = Session(subject_id=subject_id, token=secrets.token_urlsafe(32),
                              session_number=number, seed=seed, status="started",
                              condition=condition, schedule=schedule, available_from=now())
            transaction.add(session)
    except IntegrityError:  # a concurrent entry created it first
        session = db.session.scalar(select(Session).where(
            Session.subject_id == subject_id, Session.session_number == number))
    return session


def condition_counts(experiment: Experiment) -> Counter:
    """Participants per between-subject cell (first sessions that did not end at consent)."""
    # Counted in SQL (json_extract / ->>): every entry asks, and a study has thousands of sessions.
    cell = Session.condition["cell"].as_string()
    rows = db.session.execute(
        select(cell, func.count()).join(Session.subject)
        .where(Subject.experiment_id == experiment.id, Session.session_number == 1,
               Session.status != "no_consent").group_by(cell))
    return Counter({str(name): count for name, count in rows})


_CLIP_ROWS = (select(SourceClip.id, SourceClip.clip_key, SourceClip.categories,
                     SourceClip.duration_s, SourceClip.fps, SourceClip.split,
                     SourceClip.annotation_brief, SourceClip.annotation_comprehensive,
                     SourceClip.params)
              .where(SourceClip.stimulus_set == bindparam("name")).order_by(SourceClip.clip_key))
_STIMULUS_ROWS = (select(Stimulus.source_clip_id, Stimulus.id, Stimulus.public_id, Stimulus.kind,
                         Stimulus.direction, Stimulus.frame_indices, Stimulus.meta)
                  .join(SourceClip).where(SourceClip.stimulus_set == bindparam("name"))
                  .order_by(Stimulus.id))


def load_catalog(stimulus_set: str, catch_set: str) -> Catalog:
    """The stimulus set and the catch videos as plain records for the schedule builder.

    Every new session reads it, so it is two Core queries per set, without ORM objects.
    """
    def clips_of(name):
        connection = db.session.connection()
        stimuli = {}
        for row in connection.execute(_STIMULUS_ROWS, {"name": name}):
            stimuli.setdefault(row.source_clip_id, []).append(row)
        return [(clip, stimuli.get(clip.id, []))
                for clip in connection.execute(_CLIP_ROWS, {"name": name})]

    clips = tuple(ClipRecord(
        id=c.id, clip_key=c.clip_key, categories=tuple(c.categories or ()),
        stimuli=tuple(_record(s) for s in stimuli), duration_s=c.duration_s, fps=c.fps,
        split=c.split, annotation_brief=c.annotation_brief,
        annotation_comprehensive=c.annotation_comprehensive, params=dict(c.params or {}))
        for c, stimuli in clips_of(stimulus_set))
    catch = []
    for clip, stimuli in clips_of(catch_set):
        forward = next((s for s in stimuli if s.kind == "clip" and s.direction == "forward"), None)
        key = (clip.params or {}).get("instructed_key")
        if forward is not None and key:
            record = _record(forward, {"duration_s": clip.duration_s})
            catch.append(CatchRecord(record, str(key)))
    return Catalog(clips, tuple(catch))


def _record(stimulus, extra_meta: Mapping | None = None) -> StimulusRecord:
    return StimulusRecord(id=stimulus.id, public_id=stimulus.public_id, kind=stimulus.kind,
                          direction=stimulus.direction,
                          frame_indices=tuple(stimulus.frame_indices or ()) or None,
                          meta={**(stimulus.meta or {}), **(extra_meta or {})})


def plausible_token(token: str) -> bool:
    """Tokens are ``token_urlsafe(32)``; anything far from that is not looked up."""
    return 0 < len(token) <= 64


def session_by_token(token: str) -> Session | None:
    if not plausible_token(token):
        return None
    # Every API call reads the subject and experiment too: one query instead of three.
    return db.session.scalar(select(Session).where(Session.token == token).options(
        joinedload(Session.subject).joinedload(Subject.experiment)))


def completion_codes(experiment: Experiment) -> dict[str, str]:
    """The study's completion codes by outcome, derived from the app secret and its slug
    (stable, so they can be entered in Prolific once; shown on the researcher dashboard)."""
    secret = current_app.config["SECRET_KEY"].encode()

    def code(outcome: str) -> str:
        digest = hmac.new(secret, f"code:{experiment.slug}:{outcome}".encode(), hashlib.sha256)
        return base64.b32encode(digest.digest()).decode()[:8]

    return {outcome: code(outcome) for outcome in ("completed", "failed_attention",
                                                   "failed_practice", "no_consent")}


def ending(session: Session) -> dict:
    """Status, completion code and redirect of an ended session."""
    code = completion_codes(session.subject.experiment).get(session.status)
    prolific = "PROLIFIC_PID" in (session.subject.recruitment or {})
    return {"status": session.status, "completion_code": code,
            "redirect_url": PROLIFIC_COMPLETE.format(code=code) if prolific and code else None}


def record_consent(session: Session, consent: bool) -> dict:
    with write_transaction():
        if session.status in ACTIVE:
            session.device_info = {**(session.device_info or {}),
                                   "consent": {"given": consent, "at": now().isoformat()}}
            session.status = "in_progress" if consent else "no_consent"
            if not consent:
                session.completed_at = now()
    if session.status == "no_consent":
        return ending(session)
    return {"ok": True}


def consent_state(session: Session) -> bool | None:
    if session.status == "started":
        return None
    return session.status != "no_consent"


def record_device(session: Session, fields: dict) -> None:
    with write_transaction():
        session.device_info = {**(session.device_info or {}), "device": fields,
                               "device_at": now().isoformat()}
        session.last_seen_at = now()


def heartbeat(session: Session) -> None:
    with write_transaction():
        session.last_seen_at = now()
