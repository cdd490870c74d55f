"""The participant path's SQL: Core statements and the small functions that run them.

Participant calls are most of the server's work, so they skip the ORM Session and run these
on one Core connection (see :mod:`webapp.participant.sessions`).  Statements are built once,
at import: parameters go to ``execute()``, so no request rebuilds one.  Writers run inside
the caller's :func:`~webapp.database.write_transaction`.

:func:`insert_trials` is the one writer of trial rows, for people and models alike.
"""
from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import cast

from sqlalchemy import Connection, Row, Table, bindparam, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from experiments.exclusions import RECORD_FIELDS
from experiments.schedule import PRACTICE
from experiments.verdict import IN_PROGRESS, JUDGED, NO_CONSENT, SCREENED_OUT, STARTED
from webapp.models import CellCount, MediaServed, Session, Stimulus, Study, Subject, Trial
from webapp.models.study import StudyVersion


def now() -> datetime:
    return datetime.now(timezone.utc)


# --- studies and subjects ------------------------------------------------------------------

# What entry reads of the study: its current configuration and that configuration's version,
# read together, so a new session records the version its schedule was built from.
_STUDY_ROW = (select(Study.id, Study.slug, Study.status, Study.close_mode,
                     Study.max_participants, Study.design,
                     Study.design_snapshot, Study.stimulus_set, Study.config_version)
              .where(Study.slug == bindparam("slug")))
# The participant's subject id with their latest session (None columns: no session yet).
# Its design snapshot is the one of the version it ran (the study's own for an unfrozen one).
_LAST_SESSION = (select(Subject.id.label("subject_id"), Subject.resume_key_hash,
                        Session.id.label("session_id"), Session.active_client,
                        Session.token, Session.session_number,
                        Session.status, Session.seed, Session.condition, Session.completed_at,
                        Session.simulated, Session.device_info, Study.design,
                        func.coalesce(StudyVersion.design_snapshot, Study.design_snapshot)
                        .label("design_snapshot"))
                 .join(Study, Study.id == Subject.study_id)
                 .outerjoin(Session, Session.subject_id == Subject.id)
                 .outerjoin(StudyVersion, (StudyVersion.study_id == Study.id)
                            & (StudyVersion.version == Session.study_version))
                 .where(Subject.study_id == bindparam("study_id"),
                        Subject.kind == "human", Subject.external_id == bindparam("external_id"))
                 .order_by(Session.session_number.desc()).limit(1))
_INSERT_SUBJECT = insert(Subject.__table__)


def study_by_slug(connection: Connection, slug: str) -> Row | None:
    return connection.execute(_STUDY_ROW, {"slug": slug}).one_or_none()


def last_session(connection: Connection, study_id: int, external_id: str) -> Row | None:
    return connection.execute(
        _LAST_SESSION, {"study_id": study_id, "external_id": external_id}).first()


def insert_subject(connection: Connection, **values) -> int:
    # Typed optional for executemany and RETURNING inserts; a one-row insert has its key.
    return cast(Row, connection.execute(_INSERT_SUBJECT, values).inserted_primary_key)[0]


# --- places and between-subject cells ------------------------------------------------------

_CELL_COUNTS = (select(CellCount.cell, CellCount.participants)
                .where(CellCount.study_id == bindparam("study_id")))
# A place is taken at consent, not at entry (and given back by a screen-out): a link unfurler, a HEAD request or an id typed in
# and abandoned takes none.  Simulated sessions never take one.
_PLACES_TAKEN = (select(func.count(Session.id)).join(Session.subject)
                 .where(Subject.study_id == bindparam("study_id"),
                        Session.session_number == 1, Session.simulated.is_(False),
                        Session.status.not_in((STARTED, NO_CONSENT, SCREENED_OUT))))
# Taken on PostgreSQL before counting, so two consents cannot both take a study's last place
# (SQLite's BEGIN IMMEDIATE already lets one writer in at a time).
_LOCK_STUDY = select(Study.id).where(Study.id == bindparam("study_id")).with_for_update()
_MAX_PARTICIPANTS = select(Study.max_participants).where(Study.id == bindparam("study_id"))
_UPSERT: dict[str, Callable[[Table], sqlite.Insert | postgresql.Insert]] = {
    "sqlite": sqlite.insert, "postgresql": postgresql.insert}


_RULES_VERSION = (update(Study.__table__).where(Study.__table__.c.id == bindparam("id_"))
                  .values(exclusion_rules_version=bindparam("version")))


def record_rules_version(connection: Connection, study_id: int, version: str) -> None:
    """Label a study with the version of the exclusion rules its flags were last set by."""
    connection.execute(_RULES_VERSION, {"id_": study_id, "version": version})


def condition_counts(connection: Connection, study_id: int) -> Counter:
    """Participants per between-subject cell (first sessions that did not end at consent)."""
    rows = connection.execute(_CELL_COUNTS, {"study_id": study_id})
    return Counter({cell: n for cell, n in rows})


def places_taken(connection: Connection, study_id: int) -> int:
    """Participants who consented to a study's first session."""
    return connection.execute(_PLACES_TAKEN, {"study_id": study_id}).scalar_one()


def study_full(connection: Connection, study_id: int) -> bool:
    """Whether every place is taken; locks the study row first (inside a write transaction)."""
    cap = connection.scalar(_MAX_PARTICIPANTS, {"study_id": study_id})
    if cap is None:
        return False
    connection.execute(_LOCK_STUDY, {"study_id": study_id})
    return places_taken(connection, study_id) >= cap


def count_cell(connection: Connection, study_id: int, cell: str, change: int) -> None:
    """Add ``change`` to a cell's participant count (inside the write transaction that opens
    or ends the session, so the count always matches the stored sessions)."""
    table = CellCount.__table__
    upsert = _UPSERT[connection.dialect.name](table).values(
        study_id=study_id, cell=cell, participants=change)
    connection.execute(upsert.on_conflict_do_update(
        index_elements=[table.c.study_id, table.c.cell],
        set_={"participants": table.c.participants + change}))


# --- sessions ------------------------------------------------------------------------------

# What every participant API call reads: the session with its participant's recruitment and its
# study, as one row.  The configuration is the one of the version the session runs (frozen in
# StudyVersion), so a researcher's change reaches only sessions that start after it; a version
# not frozen (a draft's preview) reads the study's own.
_SESSION_ROW = (select(Session.id, Session.token, Session.status, Session.session_number,
                       Session.seed, Session.schedule, Session.condition, Session.simulated,
                       Session.active_client, Session.completed_at, Session.study_version,
                       Session.preview, Session.device_info, Subject.recruitment, Subject.study_id, Study.slug, Study.design,
                       func.coalesce(StudyVersion.design_snapshot, Study.design_snapshot)
                       .label("design_snapshot"),
                       func.coalesce(StudyVersion.stimulus_set, Study.stimulus_set)
                       .label("stimulus_set"),
                       Study.status.label("study_status"))
                .join(Session.subject).join(Subject.study)
                .outerjoin(StudyVersion, (StudyVersion.study_id == Study.id)
                           & (StudyVersion.version == Session.study_version))
                .where(Session.token == bindparam("token")))
# Read inside a write transaction before changing a session (FOR UPDATE on PostgreSQL; SQLite's
# BEGIN IMMEDIATE already excludes other writers).
_SESSION_STATUS = select(Session.status).where(Session.id == bindparam("id_"))
_LOCKED_SESSION = (select(Session.status, Session.schedule, Session.device_info,
                          Session.active_client, Session.last_seen_at, Session.resumes)
                   .where(Session.id == bindparam("id_")).with_for_update())
_INSERT_SESSION = insert(Session.__table__)
# Every stored trial and heartbeat marks the session alive: built once, it is the hot path.
_TOUCH_SESSION = (update(Session.__table__).where(Session.__table__.c.id == bindparam("id_"))
                  .values(last_seen_at=bindparam("seen")))
# A trial's write marks its session alive only while it is in progress: the status is checked
# by this UPDATE inside the trial's write transaction, so a stop that commits first is seen
# (PostgreSQL re-reads the row it waited for; SQLite's writers take turns).
_TOUCH_RUNNING = _TOUCH_SESSION.where(Session.__table__.c.status == IN_PROGRESS)
_FINISHED_HUMAN_SESSIONS = (
    select(Session.id, Session.schedule, Session.simulated, Session.status).join(Session.subject)
    .where(Subject.study_id == bindparam("study_id"), Subject.kind == "human",
           Session.status.in_(JUDGED)))


def session_by_token(connection: Connection, token: str) -> Row | None:
    return connection.execute(_SESSION_ROW, {"token": token}).one_or_none()


def session_status(connection: Connection, session_id: int) -> str:
    return connection.execute(_SESSION_STATUS, {"id_": session_id}).scalar_one()


def locked_session(connection: Connection, session_id: int) -> Row:
    return connection.execute(_LOCKED_SESSION, {"id_": session_id}).one()


def insert_session(connection: Connection, **values) -> None:
    connection.execute(_INSERT_SESSION, values)


def touch_session(connection: Connection, session_id: int) -> None:
    connection.execute(_TOUCH_SESSION, {"id_": session_id, "seen": now()})


def touch_running_session(connection: Connection, session_id: int) -> bool:
    """Mark a session alive if it is still in progress (inside a write transaction): whether
    it was, as the transaction sees it."""
    return connection.execute(_TOUCH_RUNNING, {"id_": session_id, "seen": now()}).rowcount == 1


def update_session(connection: Connection, session_id: int, *, if_status: str | None = None,
                   **values) -> bool:
    """Set columns of one session row (inside a write transaction); with ``if_status``, only
    while the session still has that status.  Whether the row was changed."""
    columns = Session.__table__.c
    statement = update(Session.__table__).where(columns.id == session_id)
    if if_status is not None:
        statement = statement.where(columns.status == if_status)
    return connection.execute(statement.values(**values)).rowcount == 1


def finished_human_sessions(connection: Connection, study_id: int) -> Sequence[Row]:
    """A study's people's sessions that completed, failed attention or failed practice (id,
    schedule, simulated, status)."""
    return connection.execute(_FINISHED_HUMAN_SESSIONS, {"study_id": study_id}).all()


# --- trials --------------------------------------------------------------------------------

# What the exclusion rules, the practice gate and the flag writes read of a stored trial.
# What the rules read (exclusions.RECORD_FIELDS), with what the verdict's writes need.
_TRIAL_ROWS = (select(Trial.id, *(getattr(Trial, name) for name in RECORD_FIELDS),
                      Trial.excluded, Trial.exclusion_reasons, Trial.received_at)
               .where(Trial.session_id == bindparam("session_id")).order_by(Trial.trial_index))
_PRACTICE_ROWS = select(Trial.trial_index, Trial.correct,
                        Trial.extra["technical"].as_boolean()).where(
    Trial.session_id == bindparam("session_id"), Trial.block == PRACTICE)
_INSERT_TRIAL = insert(Trial.__table__)
_STORED_INDEX = select(Trial.trial_index).where(Trial.session_id == bindparam("session_id"),
                                                Trial.client_uuid == bindparam("client_uuid"))
_FLAG_TRIAL = (update(Trial.__table__).where(Trial.__table__.c.id == bindparam("id_"))
               .values(excluded=bindparam("excluded"), exclusion_reasons=bindparam("reasons")))

# The canonical row's keys that are Trial columns (client_uuid is made when a row has none;
# received_at is the participant path's, empty for model runs).
TRIAL_ROW_COLUMNS = ("session_id", "trial_index", "trial_type", "block", "stimulus_id",
                     "direction", "correct_response", "response", "correct", "rt_ms",
                     "onset_method", "dropped_frames", "excluded", "exclusion_reasons", "extra")


def _text(value):
    # Frame orders are lists; the Text columns hold them as JSON (analysis/columns.py).
    return value if value is None or isinstance(value, str) else json.dumps(value)


def trial_values(row: dict) -> dict:
    """The Trial insert parameters of one canonical row dict."""
    values = {name: row[name] for name in TRIAL_ROW_COLUMNS}
    values.update(client_uuid=row.get("client_uuid") or str(uuid.uuid4()),
                  received_at=row.get("received_at"),
                  correct_response=_text(row["correct_response"]),
                  response=_text(row["response"]))
    return values


def insert_trials(connection: Connection, rows: list[dict]) -> None:
    """Insert canonical trial rows (see :mod:`analysis.columns`), people's and models' alike.

    Each row names every column of :data:`TRIAL_ROW_COLUMNS`; list-valued ``response`` and
    ``correct_response`` are stored as JSON text; a row without ``client_uuid`` gets a new one.
    The unique keys refuse a second row for a session's ``trial_index`` or ``client_uuid``
    (IntegrityError).
    """
    if rows:  # an empty parameter list would insert one row of defaults
        connection.execute(_INSERT_TRIAL, [trial_values(row) for row in rows])


def stored_trials(connection: Connection, session_id: int) -> list[Row]:
    return list(connection.execute(_TRIAL_ROWS, {"session_id": session_id}))


def practice_rows(connection: Connection, session_id: int) -> list[Row]:
    """(trial_index, correct, technical) of the stored practice trials."""
    return list(connection.execute(_PRACTICE_ROWS, {"session_id": session_id}))


def stored_index(connection: Connection, session_id: int, client_uuid: str) -> int | None:
    """The trial index stored under ``client_uuid``, if any."""
    return connection.scalar(_STORED_INDEX, {"session_id": session_id, "client_uuid": client_uuid})


def flag_trials(connection: Connection, changed: dict[int, list[str]]) -> None:
    """Write trials' exclusion flags by trial id (flags only: an excluded trial is never
    deleted)."""
    for trial_id, reasons in changed.items():
        connection.execute(_FLAG_TRIAL, {"id_": trial_id, "excluded": bool(reasons),
                                         "reasons": reasons})


# --- media served --------------------------------------------------------------------------

_MEDIA_SERVED = (select(MediaServed.trial_index, MediaServed.served_at)
                 .where(MediaServed.session_id == bindparam("session_id")))


def record_media_served(connection: Connection, session_id: int, trial_index: int) -> None:
    """Note that a position's media is being served, the first time only (a conflict on the
    key does nothing; inside a write transaction)."""
    table = MediaServed.__table__
    statement = _UPSERT[connection.dialect.name](table).values(
        session_id=session_id, trial_index=trial_index, served_at=now())
    connection.execute(statement.on_conflict_do_nothing(
        index_elements=[table.c.session_id, table.c.trial_index]))


def media_served(connection: Connection, session_id: int) -> dict[int, datetime]:
    """When each position of a session first had its media served, by trial index."""
    return dict(connection.execute(_MEDIA_SERVED, {"session_id": session_id}).all())


# --- stimuli -------------------------------------------------------------------------------

# What the media routes read of a scheduled trial's stimulus (webapp.stimuli.media).
_STIMULUS_FILE = select(Stimulus.kind, Stimulus.path, Stimulus.meta, Stimulus.frame_indices).where(
    Stimulus.id == bindparam("id_"))


def stimulus_file(connection: Connection, stimulus_id: int) -> Row | None:
    """(kind, path, meta, frame_indices) of one stimulus, or None."""
    return connection.execute(_STIMULUS_FILE, {"id_": stimulus_id}).one_or_none()
