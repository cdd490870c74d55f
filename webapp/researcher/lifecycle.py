"""A study's lifecycle and versions: its state moves only along TRANSITIONS, and every
configuration participants ran is kept.

A study (an ``Study`` row) is ``draft`` when created, ``open`` while it takes
participants, ``paused`` while it does not (participants already in may finish), and
``closed`` for good.  Closing is one of two choices, stored in ``close_mode``: ``close``
lets participants already in finish (``finish``); ``stop`` ends their sessions now
(``stop``: each becomes ``stopped``, keeps what it stored, and is shown the stopped code).
A study closed with ``finish`` can still be stopped.  Only the transitions in TRANSITIONS
are allowed.
"""
from sqlalchemy import and_, func, insert, or_, select, update

from experiments import study_file
from experiments.designs import STUDY_CONFIG_KEY
from experiments.verdict import UNFINISHED
from webapp.database import write_transaction
from webapp.extensions import db
from webapp.models import Session, Study, Subject
from webapp.models.study import StudyVersion
from webapp.participant.store import now
from webapp.researcher.studies import StudyError, check_schedulable, require_study
from webapp.stimuli import catalog

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
        if changed and status == "open":
            _freeze(connection, study_id)
        if changed and close_mode == "stop":
            connection.execute(
                update(Session.__table__).where(Session.status.in_(UNFINISHED), Session.subject_id.in_(
                    select(Subject.id).where(Subject.study_id == study_id)))
                .values(status="stopped", completed_at=now()))
    db.session.refresh(study)
    if not changed:
        raise StudyError(f"cannot {action} study {slug!r}: it is {state_name(study)}")
    return study


def _freeze(connection, study_id: int, created_by: str | None = None) -> None:
    """Store the study's current configuration as its current version, once (inside the write
    transaction that opens the study or changes an opened one)."""
    row = connection.execute(select(Study.config_version, Study.design_snapshot, Study.stimulus_set,
                                    Study.max_participants).where(Study.id == study_id)).one()
    frozen = connection.scalar(select(func.count()).select_from(StudyVersion).where(
        StudyVersion.study_id == study_id, StudyVersion.version == row.config_version))
    if not frozen:
        connection.execute(insert(StudyVersion.__table__).values(
            study_id=study_id, version=row.config_version, design_snapshot=row.design_snapshot,
            stimulus_set=row.stimulus_set, max_participants=row.max_participants,
            created_by=created_by, created_at=now()))


def update_study(slug: str, config: study_file.StudyConfig, based_on: int | None = None,
                 by: str | None = None) -> Study:
    """Change study SLUG's configuration to ``config``.

    A draft is changed in place (nothing has run it).  A study that has been opened keeps
    every configuration participants ran: the change becomes a new version, frozen at once,
    and sessions from then on record it.  ``based_on`` is the version the researcher edited;
    if the study moved on meanwhile (another change), nothing is changed.  The draft's update
    is conditional on it still being a draft, so a change racing an open cannot alter the
    configuration the open froze: it becomes the next version instead.

    Raises
    ------
    StudyError
        For a closed study, a stale ``based_on``, or a configuration that cannot run.
    """
    study = require_study(slug)
    if study.status == "closed":
        raise StudyError(f"study {slug!r} is closed; it can no longer be changed")
    if based_on is not None and based_on != study.config_version:
        raise StudyError(f"study {slug!r} was changed meanwhile (it is at version "
                         f"{study.config_version}, you edited version {based_on}); reload and edit "
                         "again")
    if config.stimulus_set not in catalog.stimulus_sets():
        raise StudyError(f"unknown stimulus set {config.stimulus_set!r}")
    snapshot, version, study_id = _snapshot(config), study.config_version, study.id
    values = {"design": config.design.name, "design_snapshot": snapshot,
              "stimulus_set": config.stimulus_set, "max_participants": config.places,
              "exclusion_rules_version": config.design.exclusions.version,
              "title": (config.title or "").strip() or slug}
    table = Study.__table__
    db.session.rollback()  # end the read: the writes below wait their turn for the lock
    with db.engine.connect() as connection, write_transaction(connection):
        changed = connection.execute(update(table).where(
            table.c.id == study_id, table.c.status == "draft", table.c.config_version == version)
            .values(**values)).rowcount == 1
        if not changed:  # opened (perhaps a moment ago): a new version, frozen at once
            changed = connection.execute(update(table).where(
                table.c.id == study_id, table.c.status != "closed", table.c.config_version == version)
                .values(**values, config_version=version + 1)).rowcount == 1
            if changed:
                _freeze(connection, study_id, by)
    db.session.refresh(study)
    if not changed:
        raise StudyError(f"study {slug!r} changed meanwhile (now {state_name(study)}, version "
                         f"{study.config_version}); reload and edit again")
    return study


def versions(study: Study) -> list[StudyVersion]:
    return list(db.session.scalars(select(StudyVersion).where(
        StudyVersion.study_id == study.id).order_by(StudyVersion.version)))


def _snapshot(config: study_file.StudyConfig) -> dict:
    schedules, clip_s = check_schedulable(config.design, config.stimulus_set)
    snapshot = config.design.to_dict()
    minutes = max(study_file.estimate_session_minutes(config.design, s, clip_s)
                  for s in schedules)
    snapshot[STUDY_CONFIG_KEY] = {**config.settings(), "estimate": {"session_minutes": minutes}}
    return snapshot


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
