"""Opening a participant's next session: its seed, between-subject cell, schedule and rows
(:mod:`webapp.participant.entry` decides whether one may be opened)."""
from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy import Connection, Row
from sqlalchemy.exc import IntegrityError

from experiments import schedule as scheduling
from experiments.designs import Design
from webapp.database import write_transaction
from webapp.participant import resume, store
from webapp.participant.calendar import opens_after
from webapp.participant.store import condition_counts, count_cell, now
from webapp.stimuli.catalog import load_catalog

if TYPE_CHECKING:  # entry calls this module
    from webapp.participant.entry import Admission


def open_session(connection: Connection, study: Row, design: Design, external_id: str,
                 recruitment: dict, last, admission: Admission,
                 language: str | None = None) -> tuple[str, str | None] | None:
    """Open the participant's next session (and their subject, with a new resume key, on
    first entry): its token and that key (None for a later session).

    The schedule is built before the write lock is taken, and subject and session are
    inserted in one transaction.  The session runs, and records, the study's version that
    ``study`` was read at: the one its schedule was built from.  None: a concurrent entry
    with the same id inserted first.
    """
    if last is None or last.token is None:
        number, seed = 1, secrets.randbelow(2**31 - 1)
        condition = scheduling.choose_condition(design, condition_counts(connection, study.id),
                                                np.random.default_rng(seed))
    else:  # later sessions continue the participant's seed and between-subject cell
        number, seed, condition = last.session_number + 1, last.seed, dict(last.condition)
    catalog = load_catalog(connection, study.stimulus_set, design.catch_set)
    condition["catch_available"] = bool(scheduling.catch_pool(design, catalog))
    schedule = scheduling.build_schedule(design, catalog, seed, number, condition)
    token = secrets.token_urlsafe(32)
    # A later session is available from the moment it opened (what the participant was told
    # and their calendar file says), not from when they came back.
    available_from = now() if number == 1 else \
        opens_after(Design.from_snapshot(last), last.completed_at or now())
    # A simulated participant takes no place and counts in no cell, in every session.
    simulated = admission.simulated or admission.preview or bool(last and last.simulated)
    key, key_hash = resume.new_key() if last is None else (None, None)
    try:
        with write_transaction(connection):
            subject_id = last.subject_id if last is not None else store.insert_subject(
                connection, study_id=study.id, kind="human", external_id=external_id,
                recruitment=recruitment, resume_key_hash=key_hash)
            store.insert_session(
                connection, subject_id=subject_id, token=token, session_number=number,
                seed=seed, status="started", condition=condition, schedule=schedule,
                available_from=available_from, simulated=simulated, preview=admission.preview,
                study_version=study.config_version,
                device_info={"language": language} if language else {})
            if number == 1 and not simulated:
                count_cell(connection, study.id, condition["cell"], +1)
    except IntegrityError:
        return None
    return token, key
