"""Storing a participant's trials at most once, the practice gate, and completion.

Every trial insert is one short transaction guarded by the unique keys: an IntegrityError on
``(session_id, client_uuid)`` is a replay (200), on ``(session_id, trial_index)`` with another
uuid a conflict (409).  Correct answers come from the stored schedule, never the browser.

Trial POSTs are the hot path (one per participant every few seconds), so they skip the ORM:
one Core SELECT reads the session row with its study's design, and one short write
transaction runs an INSERT and an UPDATE of ``last_seen_at``.  The replay lookup runs only
when the database refuses the insert, and the ORM session object is loaded only for practice
trials, whose gate may rewrite the schedule.
"""
from __future__ import annotations

import json

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from experiments import exclusions
from experiments import schedule as scheduling
from experiments.designs import design_from_snapshot
from experiments.trial_types import PayloadError, validate
from webapp import participants
from webapp.database import write_transaction
from webapp.extensions import db
from webapp.models import Experiment, Session, Subject, Trial
from webapp.stimulus_files import clip_url, frame_urls

VIDEO_EXTRA = ("key", "onset_callbacks", "onset_time_ms", "key_time_ms", "total_frames",
               "stalls", "stall_ms")
FLAGS = ("timed_out", "focus_lost", "fullscreen_exited")


class ApiError(Exception):
    """An answer other than success: HTTP ``status`` with a JSON ``code`` and ``message``."""

    def __init__(self, status: int, code: str, message: str, **extra):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def stored_trials(session: Session) -> list[Trial]:
    return list(db.session.scalars(select(Trial).where(Trial.session_id == session.id)
                                   .order_by(Trial.trial_index)))


_PRACTICE_ROWS = select(Trial.trial_index, Trial.correct).where(
    Trial.session_id == bindparam("session_id"), Trial.block == scheduling.PRACTICE)


def practice_records(session_id: int) -> list[dict]:
    """Index and correctness of the stored practice trials: all the practice gate reads.

    Main trials check the gate on every POST, so this reads a few narrow rows, not every trial.
    """
    rows = db.session.connection().execute(_PRACTICE_ROWS, {"session_id": session_id})
    return [{"trial_index": index, "correct": correct} for index, correct in rows]


RECORD_FIELDS = ("trial_index", "trial_type", "block", "response", "correct", "rt_ms",
                 "dropped_frames", "extra")


def _record(trial: Trial) -> dict:
    """What the exclusion rules and the practice gate read of a stored trial."""
    return {name: getattr(trial, name) for name in RECORD_FIELDS} | {"extra": trial.extra or {}}


def practice_passed(status: str, schedule: list[dict], records: list[dict], design) -> bool | None:
    """True / False once decided, None while practice is under way (or has no trials)."""
    if status == "failed_practice":
        return False
    scheduled = [t for t in schedule if t["block"] == scheduling.PRACTICE]
    if not scheduled:
        return True
    last = max(t.get("practice_attempt", 1) for t in scheduled)
    wanted = {t["trial_index"] for t in scheduled if t.get("practice_attempt", 1) == last}
    done = [r for r in records if r["trial_index"] in wanted]
    if len(done) < len(wanted):
        return None
    accuracy = sum(bool(r["correct"]) for r in done) / len(done)
    return accuracy >= design.practice.min_accuracy


def session_state(session: Session) -> dict:
    """The GET answer: the browser's view of the session (no main-trial answers)."""
    records = [_record(t) for t in stored_trials(session)]
    stored = sorted(r["trial_index"] for r in records)
    design = participants.experiment_design(session.subject.experiment)
    pending = [t["trial_index"] for t in session.schedule if t["trial_index"] not in set(stored)]
    state = {
        "status": session.status, "session_number": session.session_number,
        "sessions": design.sessions, "consent": participants.consent_state(session),
        "key_mapping": session.condition.get("key_mapping"),
        "response_keys": list(design.response_keys),
        "trials": [scheduling.public_trial(t, clip_url, frame_urls) for t in session.schedule],
        "next_trial_index": pending[0] if pending else len(session.schedule),
        "stored_indices": stored,
        "response_window_ms_after_clip": design.response_window_ms_after_clip,
        "practice": {"min_accuracy": design.practice.min_accuracy,
                     "max_attempts": design.practice.max_attempts},
        "practice_passed": practice_passed(session.status, session.schedule, records, design),
        "blocks": scheduling.blocks_summary(session.schedule),
    }
    if session.status in participants.ENDED:
        state.update(participants.ending(session))
    return state


def _row(session_id: int, scheduled: dict, fields: dict, rules) -> dict:
    """The trial table row to insert (column values)."""
    extra = {flag: fields[flag] for flag in FLAGS}
    if scheduled["trial_type"] == "frame_order":
        response = None if fields["timed_out"] else json.dumps([i + 1 for i in fields["final_order"]])
        extra.update(initial_order=fields["initial_order"], final_order=fields["final_order"],
                     moves=fields["moves"], hint_frames=scheduled["hint_labels"],
                     condition=scheduled["condition"], n_frames=scheduled["params"]["n_frames"],
                     span=scheduled["span"], annotation_level=scheduled["annotation_level"],
                     presented_frames=scheduled["frames"])
        onset_method, dropped = None, None
    else:
        response = fields["response"]
        extra.update({key: fields[key] for key in VIDEO_EXTRA})
        if scheduled["trial_type"] == "catch":
            extra["instructed_key"] = scheduled["instructed_key"]
        onset_method, dropped = fields["onset_method"], fields["dropped_frames"]
    if "practice_attempt" in scheduled:
        extra["practice_attempt"] = scheduled["practice_attempt"]
    row = dict(session_id=session_id, client_uuid=fields["client_uuid"],
               trial_index=fields["trial_index"], trial_type=scheduled["trial_type"],
               block=scheduled["block"], stimulus_id=scheduled["stimulus_id"],
               direction=scheduled["direction"], correct_response=scheduled["correct_response"],
               response=response,
               correct=response is not None and response == scheduled["correct_response"],
               rt_ms=fields["rt_ms"], onset_method=onset_method, dropped_frames=dropped,
               extra=extra)
    reasons = exclusions.trial_reasons({name: row[name] for name in RECORD_FIELDS}, rules)
    return row | {"excluded": bool(reasons), "exclusion_reasons": reasons}


# Built once: parameters go to execute(), so no statement is rebuilt per request.
_TRIAL_TARGET = (select(Session.id, Session.status, Session.schedule, Experiment.design,
                        Experiment.design_snapshot)
                 .join(Session.subject).join(Subject.experiment)
                 .where(Session.token == bindparam("token")))
_INSERT_TRIAL = insert(Trial.__table__)
_TOUCH_SESSION = (update(Session.__table__).where(Session.__table__.c.id == bindparam("id_"))
                  .values(last_seen_at=bindparam("seen")))


def _existing(session_id: int, fields: dict, unmatched: ApiError) -> dict:
    """Answer for a trial that was not stored: a replay of a stored one, a clash, or ``unmatched``."""
    same = db.session.scalar(select(Trial).where(Trial.session_id == session_id,
                                                 Trial.client_uuid == fields["client_uuid"]))
    if same is None:
        raise unmatched
    if same.trial_index != fields["trial_index"]:
        raise ApiError(409, "uuid_reused", f"client_uuid already stored for trial {same.trial_index}")
    return {"stored": False, "duplicate": True, "trial_index": same.trial_index}


def store_trial(token: str, payload) -> tuple[int, dict]:
    """Validate and store one trial of the session with ``token``; returns (HTTP status, answer)."""
    target = (db.session.connection().execute(_TRIAL_TARGET, {"token": token}).one_or_none()
              if participants.plausible_token(token) else None)
    if target is None:
        raise ApiError(404, "unknown_session", "no session with this token")
    if not isinstance(payload, dict):
        raise PayloadError("wrong_type", "body must be a JSON object")
    index = payload.get("trial_index")
    scheduled = next((t for t in target.schedule if t["trial_index"] == index), None) \
        if isinstance(index, int) and not isinstance(index, bool) else None
    fields = validate(payload, scheduled)
    if scheduled is None:
        raise ApiError(400, "unknown_trial", f"trial_index {index} is not in this session's schedule")
    if target.status != "in_progress":  # a replay may still arrive after the session ended
        return 200, _existing(target.id, fields, ApiError(
            409, "not_in_progress", f"this session is {target.status!r}"))
    design = design_from_snapshot(target.design, target.design_snapshot)
    practice = scheduled["block"] == scheduling.PRACTICE
    if not practice and practice_passed(target.status, target.schedule,
                                        practice_records(target.id), design) is not True:
        raise ApiError(409, "practice_not_passed", "the practice block is not passed yet")
    row = _row(target.id, scheduled, fields, design.exclusions)
    answer = {"stored": True, "trial_index": fields["trial_index"]}
    try:
        # One short transaction per trial, guarded by the unique keys; the practice gate is
        # decided inside it, so two last practice trials cannot both add an attempt.
        with write_transaction() as transaction:
            connection = transaction.connection()
            connection.execute(_INSERT_TRIAL, row)
            connection.execute(_TOUCH_SESSION, {"id_": target.id, "seen": participants.now()})
            if practice:
                answer.update(_practice_gate(transaction.get(Session, target.id), design))
    except IntegrityError:
        return 200, _existing(target.id, fields, ApiError(
            409, "trial_index_taken",
            f"trial {fields['trial_index']} is already stored with another client_uuid"))
    return 201, answer


def _practice_gate(session: Session, design) -> dict:
    """Decide the gate once a practice attempt is complete (inside the trial's transaction)."""
    passed = practice_passed(session.status, session.schedule, practice_records(session.id), design)
    answer = {"practice_passed": passed}
    if passed is not False:
        return answer
    attempts = max(t.get("practice_attempt", 1) for t in session.schedule)
    if attempts < design.practice.max_attempts:
        catalog = participants.load_catalog(session.subject.experiment.stimulus_set, design.catch_set)
        extra = scheduling.practice_trials(design, catalog, session.seed, session.session_number,
                                           attempt=attempts + 1)
        session.schedule = scheduling.insert_practice_attempt(session.schedule, extra)
        answer.update(practice_passed=None, schedule_changed=True)
    else:
        session.status = "failed_practice"
        session.completed_at = participants.now()
        session.excluded, session.exclusion_reasons = True, ["practice_gate"]
    return answer


def complete(session: Session) -> dict:
    """Finish a session once every scheduled trial is stored; computes exclusions.

    The verdict is worked out before the write lock is taken: once every scheduled trial is
    stored no trial can still arrive, so the write transaction only records the verdict (or
    finds that a concurrent /complete recorded it first).
    """
    if session.status in participants.ENDED:
        return participants.ending(session)
    if session.status != "in_progress":
        raise ApiError(409, "not_started", "consent first")
    trials = stored_trials(session)
    stored = {t.trial_index for t in trials}
    missing = [t["trial_index"] for t in session.schedule if t["trial_index"] not in stored]
    if missing:
        raise ApiError(409, "missing_trials", f"{len(missing)} trial(s) not stored yet",
                       missing=missing)
    per_trial, reasons = exclusion_verdict(session, trials)
    changed = _changed_flags(trials, per_trial)
    session_id = session.id
    with write_transaction() as transaction:
        session = transaction.get(Session, session_id)
        if session.status in participants.ENDED:
            return participants.ending(session)
        _store_flags(transaction, changed)
        _record_verdict(session, reasons)
        session.completed_at = participants.now()
    return participants.ending(session)


_FLAG_TRIAL = (update(Trial.__table__).where(Trial.__table__.c.id == bindparam("id_"))
               .values(excluded=bindparam("excluded"), exclusion_reasons=bindparam("reasons")))


def exclusion_verdict(session: Session, trials: list[Trial]) -> tuple[list[list[str]], list[str]]:
    """The study's rules applied to a session's stored trials: reasons per trial, and the
    participant's reasons."""
    rules = participants.experiment_design(session.subject.experiment).exclusions
    records = [_record(t) for t in trials]
    per_trial = [exclusions.trial_reasons(record, rules) for record in records]
    return per_trial, exclusions.participant_reasons(records, rules,
                                                     expected_trials=len(session.schedule))


def _changed_flags(trials: list[Trial], per_trial: list[list[str]]) -> dict[int, list[str]]:
    """Exclusion reasons by trial id, for the trials whose stored flags differ."""
    return {t.id: reasons for t, reasons in zip(trials, per_trial)
            if (t.excluded, t.exclusion_reasons) != (bool(reasons), reasons)}


def _store_flags(transaction, changed: dict[int, list[str]]) -> None:
    """Write trials' exclusion flags (flags only: an excluded trial is never deleted)."""
    for trial_id, reasons in changed.items():
        transaction.execute(_FLAG_TRIAL, {"id_": trial_id, "excluded": bool(reasons),
                                          "reasons": reasons})


def _record_verdict(session: Session, reasons: list[str]) -> None:
    attention = {"catch_failed", "catch_accuracy"} & set(reasons)
    session.excluded, session.exclusion_reasons = bool(reasons), reasons
    session.status = "failed_attention" if attention else "completed"


def recompute_study(experiment) -> dict[str, int]:
    """Re-apply the study's exclusion rules to every finished human session (flags only).

    For use after a rule change; sessions still running are left to their own completion.
    Returns the number of sessions checked and of those now excluded.
    """
    finished = ("completed", "failed_attention")
    sessions = db.session.scalars(select(Session).join(Session.subject).where(
        Subject.experiment_id == experiment.id, Subject.kind == "human",
        Session.status.in_(finished))).all()
    excluded = 0
    for session in sessions:
        with write_transaction() as transaction:
            trials = stored_trials(session)
            per_trial, reasons = exclusion_verdict(session, trials)
            _store_flags(transaction, _changed_flags(trials, per_trial))
            _record_verdict(session, reasons)
        excluded += bool(reasons)
    return {"sessions": len(sessions), "excluded": excluded}
