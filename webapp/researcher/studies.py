"""Study set-up: create a study from a design and a stimulus set, and move it through its lifecycle.

A study (an ``Study`` row) is ``draft`` when created, ``open`` while it takes
participants, ``paused`` while it does not (participants already in may finish), and
``closed`` for good.  Closing is one of two choices, stored in ``close_mode``: ``close``
lets participants already in finish (``finish``); ``stop`` ends their sessions now
(``stop``: each becomes ``stopped``, keeps what it stored, and is shown the stopped code).
A study closed with ``finish`` can still be stopped.  Only the transitions in TRANSITIONS
are allowed.
"""
import re
from urllib.parse import urlencode, urlsplit

import numpy as np
from flask import current_app, has_request_context, url_for
from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from experiments import schedule
from experiments import study_file
from experiments.designs import DESIGNS, STUDY_CONFIG_KEY, design_from_snapshot
from webapp.stimuli import catalog
from webapp.database import write_transaction
from webapp.extensions import db
from webapp.models import Study, Researcher, Session, StudyMember, Subject
from webapp.participant.sessions import ACTIVE, now
from webapp.stimuli.catalog import load_catalog

# A study's state is (status, close_mode); action -> (states it may start from, state it leads to)
_LIVE = (("draft", None), ("open", None), ("paused", None))
TRANSITIONS = {
    "open": ((("draft", None), ("paused", None)), ("open", None)),
    "pause": ((("open", None),), ("paused", None)),
    "close": (_LIVE, ("closed", "finish")),
    "stop": ((*_LIVE, ("closed", "finish")), ("closed", "stop")),
}
ACTION_LABELS = {"open": "Open", "pause": "Pause",
                 "close": "Close (let current participants finish)",
                 "stop": "Stop now (end every session in progress)"}
_SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
# Prolific fills these placeholders in a study URL with each participant's ids.
PROLIFIC_QUERY = {"PROLIFIC_PID": "{{%PROLIFIC_PID%}}", "STUDY_ID": "{{%STUDY_ID%}}",
                  "SESSION_ID": "{{%SESSION_ID%}}"}


class StudyError(ValueError):
    """A study request that cannot be carried out (unknown design, bad transition ...)."""


def create_study(slug: str, design: str, stimulus_set: str, title: str | None = None,
                 owner: str | None = None, max_participants: int | None = None,
                 config: study_file.StudyConfig | None = None) -> Study:
    """Create a draft study of ``design`` on ``stimulus_set``, owned by the researcher named
    ``owner`` (with None, only admins see it), with an optional cap on participants.

    Study and owner are stored in one transaction: a study never exists without its owner.

    Raises
    ------
    StudyError
        For a malformed or taken slug, an unknown design, stimulus set or owner, a cap below
        1, or a stimulus set the design cannot build a schedule from.
    """
    owner_id = None
    if owner is not None:
        owner_id = db.session.scalar(select(Researcher.id).where(Researcher.username == owner))
        if owner_id is None:
            raise StudyError(f"no researcher {owner!r}")
    if any(ord(c) < 32 or ord(c) == 127 for c in title or ""):
        raise StudyError("title must not contain control characters")
    if max_participants is not None and max_participants < 1:
        raise StudyError(f"max_participants must be at least 1, got {max_participants}")
    slug = (slug or "").strip()
    if not _SLUG.match(slug):
        raise StudyError("slug must be 1-64 lowercase letters, digits or '-', "
                         "starting and ending with a letter or digit")
    if get_study(slug) is not None:
        raise StudyError(f"a study {slug!r} already exists")
    if design not in DESIGNS:
        raise StudyError(f"unknown design {design!r}; expected one of {', '.join(sorted(DESIGNS))}")
    if stimulus_set not in catalog.stimulus_sets():
        raise StudyError(f"unknown stimulus set {stimulus_set!r}; import or generate it first")
    chosen = DESIGNS[design] if config is None else config.design
    return _store(slug, chosen, stimulus_set, title, owner_id, max_participants, config)


def create_study_from_config(slug: str, config: study_file.StudyConfig,
                             owner: str | None = None) -> Study:
    """Create a draft study from a study file's configuration (``study_file.load``).

    The whole configuration, texts included, is stored in the study's design snapshot under
    ``STUDY_CONFIG_KEY``, with the session length estimated from the schedule it builds.
    """
    return create_study(slug, config.design.name, config.stimulus_set, config.title or None,
                        owner=owner, max_participants=config.places, config=config)


def _store(slug, chosen, stimulus_set, title, owner_id, max_participants, config=None) -> Study:
    schedules, clip_s = check_schedulable(chosen, stimulus_set)
    snapshot = chosen.to_dict()
    if config is not None:
        minutes = max(study_file.estimate_session_minutes(chosen, s, clip_s) for s in schedules)
        snapshot[STUDY_CONFIG_KEY] = {**config.settings(), "estimate": {"session_minutes": minutes}}
    # The snapshot keeps the study's design fixed even if the shipped design changes later.
    study = Study(
        slug=slug, title=(title or "").strip() or slug, design=chosen.name,
        design_snapshot=snapshot, stimulus_set=stimulus_set, status="draft",
        exclusion_rules_version=chosen.exclusions.version, max_participants=max_participants,
    )
    db.session.add(study)
    try:
        if owner_id is not None:
            db.session.flush()
            db.session.add(StudyMember(study_id=study.id, researcher_id=owner_id,
                                       role="owner"))
        db.session.commit()
    except IntegrityError as error:  # the same slug, created a moment ago by someone else
        db.session.rollback()
        raise StudyError(f"a study {slug!r} already exists") from error
    return study


def study_config(study: Study) -> study_file.StudyConfig:
    """The study's configuration; a study made with ``--design`` gets the default settings."""
    snapshot = study.design_snapshot or {}
    design = design_from_snapshot(study.design, snapshot)
    settings = snapshot.get(STUDY_CONFIG_KEY) or {
        "stimulus_set": study.stimulus_set, "title": study.title, "places": study.max_participants}
    return study_file.StudyConfig.from_settings(design, settings)


def export_config(slug: str) -> str:
    """Study SLUG's configuration as a study file (``create --from`` it for the same study)."""
    return study_file.to_toml(study_config(require_study(slug)))


def check_schedulable(design, stimulus_set: str) -> tuple[list[list[dict]], float]:
    """Build every session's schedule once on ``stimulus_set``, so a study that could never
    start (e.g. frame ordering on clips without frame sets) is refused when it is created.

    Returns the schedules and the mean clip duration in seconds (for the time estimate).
    """
    records = load_catalog(db.session.connection(), stimulus_set, design.catch_set)
    condition = schedule.choose_condition(design, {}, np.random.default_rng(0))
    condition["catch_available"] = bool(records.catch)
    try:
        schedules = [schedule.build_schedule(design, records, 0, number, condition)
                     for number in range(1, design.sessions + 1)]
    except schedule.ScheduleError as error:
        raise StudyError(f"design {design.name!r} cannot run on stimulus set "
                         f"{stimulus_set!r}: {error}") from error
    clip_s = float(np.mean([clip.duration_s for clip in records.clips])) if records.clips else 3.0
    return schedules, clip_s


def get_study(slug: str) -> Study | None:
    return db.session.scalar(select(Study).where(Study.slug == slug))


def require_study(slug: str) -> Study:
    study = get_study(slug)
    if study is None:
        raise StudyError(f"no study {slug!r}")
    return study


def list_studies() -> list[Study]:
    return list(db.session.scalars(select(Study).order_by(Study.created_at.desc(),
                                                                Study.id.desc())))


def studies_for(researcher: Researcher) -> list[Study]:
    """The studies ``researcher`` is a member of (every study for an admin), newest first."""
    query = select(Study).order_by(Study.created_at.desc(), Study.id.desc())
    if not researcher.is_admin:
        query = query.join(StudyMember, StudyMember.study_id == Study.id).where(
            StudyMember.researcher_id == researcher.id)
    return list(db.session.scalars(query))


def transition(slug: str, action: str) -> Study:
    """Apply ``action`` ("open", "pause", "close", "stop") if the study's state allows it.

    The state is changed by one conditional UPDATE, so two researchers clicking at once
    cannot both move the study (e.g. reopen a study the other just closed).  ``stop`` ends
    the sessions in progress in the same transaction.
    """
    if action not in TRANSITIONS:
        raise StudyError(f"unknown action {action!r}; expected one of {', '.join(TRANSITIONS)}")
    sources, (status, close_mode) = TRANSITIONS[action]
    study = require_study(slug)
    study_id = study.id
    db.session.rollback()  # end the read: the refresh must see the write (touch no attribute)
    # One short write transaction that waits its turn for the lock, as participants' writes
    # do (an ORM transaction that upgrades a read to a write fails at once when SQLite is busy).
    with db.engine.connect() as connection, write_transaction(connection):
        changed = connection.execute(
            update(Study.__table__).where(Study.id == study_id, _in_states(sources))
            .values(status=status, close_mode=close_mode)).rowcount == 1
        if changed and close_mode == "stop":
            connection.execute(
                update(Session.__table__).where(Session.status.in_(ACTIVE), Session.subject_id.in_(
                    select(Subject.id).where(Subject.study_id == study_id)))
                .values(status="stopped", completed_at=now()))
    db.session.refresh(study)
    if not changed:
        raise StudyError(f"cannot {action} study {slug!r}: it is {state_name(study)}")
    return study


def _in_states(states):
    return or_(*(and_(Study.status == status, Study.close_mode.is_(None)
                      if mode is None else Study.close_mode == mode)
                 for status, mode in states))


def state_name(study) -> str:
    """The status as researchers read it ("closed (stopped)" for a stopped study)."""
    if study.status != "closed":
        return study.status
    return "closed (stopped)" if study.close_mode == "stop" else "closed (finishing)"


def allowed_actions(study) -> list[str]:
    state = (study.status, study.close_mode)
    return [action for action, (sources, _) in TRANSITIONS.items() if state in sources]


def participant_link(slug: str, prolific: bool = False) -> str:
    """The URL participants open; with ``prolific`` it carries Prolific's id placeholders.

    In a request it is built from the request's host; elsewhere (the CLI) from PUBLIC_URL.
    """
    if has_request_context():
        link = url_for("participant.entry", slug=slug, _external=True)
    else:
        base = urlsplit(current_app.config["PUBLIC_URL"])
        adapter = current_app.url_map.bind(base.netloc, script_name=base.path or "/",
                                           url_scheme=base.scheme or "http")
        link = adapter.build("participant.entry", {"slug": slug}, force_external=True)
    if prolific:
        # Prolific wants the placeholders literally, braces and percent signs unescaped.
        link += "?" + urlencode(PROLIFIC_QUERY, safe="{}%")
    return link


def status_counts() -> dict[int, dict[str, int]]:
    """Sessions per study and status, for the study list."""
    rows = db.session.execute(
        select(Subject.study_id, Session.status, func.count())
        .join(Session.subject).where(Subject.kind == "human")
        .group_by(Subject.study_id, Session.status)).all()
    counts: dict[int, dict[str, int]] = {}
    for study_id, status, n in rows:
        counts.setdefault(study_id, {})[status] = n
    return counts
