"""Choosing an adaptive slot's level on the server, once, when its video is first asked for
(:mod:`experiments.adaptive_schedule`): from the answers stored on the session's earlier
slots, inside a write transaction that locks the session row, so two tabs or two requests
at once choose it once and read back the same choice.  In an adaptive session every main
trial's video waits for the answers before it (:func:`check_turn`).  With a stopping rule,
storing a slot's answer may end its sweep (:func:`stop_if_reached`).
"""
from __future__ import annotations

from flask import abort
from sqlalchemy import Connection, Row

from experiments import adaptive_schedule
from experiments.adaptive_schedule import KEY
from experiments.schedule import PRACTICE
from webapp.database import write_transaction
from webapp.participant import store


def stored_answers(connection: Connection, session_id: int) -> dict[int, bool | None]:
    """Trial index -> whether its stored answer was right; None for one the report would not
    fit either: excluded by a trial rule (timed out, technical, an anticipation, ...), so
    each choice is made from the answers the fitter reads."""
    return {t.trial_index: None if t.response is None or t.excluded else bool(t.correct)
            for t in store.stored_trials(connection, session_id)}


def check_turn(connection: Connection, session: Row, trial_index: int) -> None:
    """409 for a main trial's video while an earlier main trial of an adaptive session has no
    stored answer.  Slots wait for their sweep's earlier answers anyway; every other main
    trial (catch trials, a sweep's first slot) waits alike, so which positions load early
    says nothing of which trials are attention checks."""
    schedule = session.schedule
    if schedule[trial_index]["block"] == PRACTICE or not any(KEY in t for t in schedule):
        return
    stored = stored_answers(connection, session.id)
    if any(t["trial_index"] not in stored for t in adaptive_schedule.to_run(schedule[:trial_index])
           if t["block"] != PRACTICE):
        abort(409)


def stop_if_reached(connection: Connection, session_id: int, trial_index: int,
                    halfwidth_steps: float) -> dict:
    """Inside the write transaction that stored slot ``trial_index``'s answer: its sweep's
    later slots skipped where the stopping rule is met (``{"schedule_changed": True}``, the
    browser then reads its session again), else nothing (``{}``)."""
    current = store.locked_session(connection, session_id)
    schedule = adaptive_schedule.stop_sweep(current.schedule, trial_index,
                                            stored_answers(connection, session_id),
                                            halfwidth_steps)
    if schedule is None:
        return {}
    store.update_session(connection, session_id, schedule=schedule)
    return {"schedule_changed": True}


def with_level(connection: Connection, session: Row, trial_index: int) -> Row:
    """``session`` as stored once slot ``trial_index`` has its level: chosen now if it had
    none; 409 while an earlier slot of its sweep waits for its answer."""
    with write_transaction(connection):
        current = store.locked_session(connection, session.id)
        if adaptive_schedule.pending(current.schedule[trial_index]):
            try:
                schedule = adaptive_schedule.resolve(
                    current.schedule, trial_index, stored_answers(connection, session.id))
            except adaptive_schedule.NotYet:
                abort(409)
            store.update_session(connection, session.id, schedule=schedule)
    return store.session_by_token(connection, session.token) or abort(404)  # deleted meanwhile
