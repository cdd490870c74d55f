"""Storing a participant's trials at most once, the practice gate, and completion.
(What the browser is told of its session is :mod:`webapp.participant.state`.)

Every trial insert is one short transaction guarded by the unique keys: an IntegrityError on
``(session_id, client_uuid)`` is a replay (200), on ``(session_id, trial_index)`` with another
uuid a conflict (409).  Correct answers come from the stored schedule, never the browser.

Like every participant call (see :mod:`webapp.participant.sessions`), a trial POST runs on one Core
connection: a SELECT of the session row with its study's design, and one short write
transaction that runs an UPDATE of ``last_seen_at`` (which also checks, inside the
transaction, that the session is still in progress) and an INSERT.  The replay lookup runs
only when the database refuses the insert.  Anything that changes a session (the practice
gate, completion) re-reads its row inside the write transaction.  The statements live in
:mod:`webapp.participant.store`; what a trial type adds to its row, in its module under
:mod:`experiments.trial_types`.
"""
from __future__ import annotations

from sqlalchemy import Connection, Row
from sqlalchemy.exc import IntegrityError

from experiments import adaptive_schedule, exclusions, verdict
from experiments import schedule as scheduling
from experiments.designs import Design
from experiments.trial_types import (
    TRIAL_TYPES,
    PayloadError,
    is_technical,
    technical_reasons,
    validate,
)
from experiments.trial_types.video import check_frame_counts
from webapp.database import write_transaction
from webapp.extensions import db
from webapp.participant import adaptive, sessions, store
from webapp.stimuli import presentations
from webapp.stimuli.catalog import load_catalog

FLAGS = ("timed_out", "focus_lost", "fullscreen_exited", "restarted")


class ApiError(Exception):
    """An answer other than success: HTTP ``status`` with a JSON ``code`` and ``message``."""

    def __init__(self, http_status: int, code: str, message: str, **extra):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = http_status, code, message, extra


def practice_records(connection: Connection, session_id: int) -> list[dict]:
    """Index, correctness and technical flag of the stored practice trials: all the practice
    gate reads.

    Main trials check the gate on every POST, so this reads a few narrow rows, not every trial.
    """
    rows = store.practice_rows(connection, session_id)
    return [{"trial_index": index, "correct": correct, "extra": {"technical": bool(technical)}}
            for index, correct, technical in rows]


def stored_record(trial: Row) -> dict:
    """What the exclusion rules and the practice gate read of a stored trial."""
    return {name: getattr(trial, name) for name in exclusions.RECORD_FIELDS} | {
        "extra": trial.extra or {}}


def practice_passed(status: str, schedule: list[dict], records: list[dict], design) -> bool | None:
    """True / False once decided, None while practice is under way (or has no trials)."""
    if status == verdict.FAILED_PRACTICE:
        return False
    scheduled = [t for t in schedule if t["block"] == scheduling.PRACTICE]
    if not scheduled:
        return True
    last = max(t.get("practice_attempt", 1) for t in scheduled)
    wanted = {t["trial_index"] for t in scheduled if t.get("practice_attempt", 1) == last}
    done = [r for r in records if r["trial_index"] in wanted]
    if len(done) < len(wanted):
        return None
    return exclusions.practice_passes(done, design.practice.min_accuracy)


def _row(session_id: int, scheduled: dict, fields: dict, rules, received_at,
         served: dict) -> dict:
    """The trial table row to insert (column values); ``served``: what the server knows of the
    trial's presentation, kept in ``extra`` (:func:`_served`)."""
    extra = {flag: fields[flag] for flag in FLAGS} | served
    # The server decides the flag from the validated events; the browser cannot send it.
    extra.update(technical_events=fields["technical_events"], technical=is_technical(fields))
    if reasons := technical_reasons(fields):
        extra["technical_reasons"] = reasons
    # direction, response, onset_method, dropped_frames and more extra: the type's to say.
    parts = TRIAL_TYPES[scheduled["trial_type"]].row_parts(fields, scheduled)
    extra.update(parts.pop("extra"))
    if "practice_attempt" in scheduled:
        extra["practice_attempt"] = scheduled["practice_attempt"]
    if adaptive_schedule.KEY in scheduled:  # the level and the posterior that chose it
        extra[adaptive_schedule.KEY] = {k: v for k, v in scheduled[adaptive_schedule.KEY].items()
                                        if k != "pool"}
    response = parts["response"]
    row = dict(session_id=session_id, client_uuid=fields["client_uuid"],
               trial_index=fields["trial_index"], trial_type=scheduled["trial_type"],
               block=scheduled["block"], stimulus_id=scheduled["stimulus_id"],
               correct_response=scheduled["correct_response"],
               correct=response is not None and response == scheduled["correct_response"],
               rt_ms=fields["rt_ms"], extra=extra, received_at=received_at, **parts)
    reasons = exclusions.trial_reasons({name: row[name] for name in exclusions.RECORD_FIELDS},
                                       rules)
    return row | {"excluded": bool(reasons), "exclusion_reasons": reasons}


def _existing(connection: Connection, session_id: int, fields: dict,
              unmatched: ApiError) -> dict:
    """Answer for a trial that was not stored: a replay of a stored one, a clash, or ``unmatched``."""
    stored_index = store.stored_index(connection, session_id, fields["client_uuid"])
    if stored_index is None:
        raise unmatched
    if stored_index != fields["trial_index"]:
        raise ApiError(409, "uuid_reused", f"client_uuid already stored for trial {stored_index}")
    return {"stored": False, "duplicate": True, "trial_index": stored_index}


class _Ended(Exception):
    """The session was no longer in progress inside the trial's write transaction."""


def store_trial(connection: Connection, target: Row, payload) -> tuple[int, dict]:
    """Validate and store one trial of session ``target``; returns (HTTP status, answer)."""
    received_at = store.now()  # the server's clock, before any work of its own
    if not isinstance(payload, dict):
        raise PayloadError("wrong_type", "body must be a JSON object")
    index = payload.get("trial_index")
    scheduled = next((t for t in target.schedule if t["trial_index"] == index), None) \
        if isinstance(index, int) and not isinstance(index, bool) else None
    fields = validate(payload, scheduled, key_mapping=target.condition.get("key_mapping"))
    if scheduled is None:
        raise ApiError(400, "unknown_trial", f"trial_index {index} is not in this session's schedule")
    if adaptive_schedule.skipped(scheduled):
        raise ApiError(409, "not_needed", f"trial {index} was skipped: its sweep stopped early")
    if adaptive_schedule.pending(scheduled):  # its video was never served: nothing was shown
        raise ApiError(409, "not_presented", f"trial {index} has no level yet: its video was "
                                             "never asked for")
    if target.status != verdict.IN_PROGRESS:  # a replay may still arrive after the session ended
        return 200, _existing(connection, target.id, fields, _not_in_progress(target,
                                                                              target.status))
    served = _served(connection, target, scheduled) if "frames_total" in fields else {}
    if served:  # the server knows the clip it served
        fields = check_frame_counts(fields, served["clip_frames"])
    design = Design.from_snapshot(target)
    practice = scheduled["block"] == scheduling.PRACTICE
    if not practice and practice_passed(target.status, target.schedule, practice_records(
            connection, target.id), design) is not True:
        raise ApiError(409, "practice_not_passed", "the practice block is not passed yet")
    row = _row(target.id, scheduled, fields, design.exclusions, received_at, served)
    answer = {"stored": True, "trial_index": fields["trial_index"]}
    try:
        # One short transaction per trial, guarded by the unique keys.  The status is checked
        # again by its first statement, so a session stopped (or ended) since it was read
        # above stores nothing more; the practice gate is decided inside it, so two last
        # practice trials cannot both add an attempt.
        with write_transaction(connection):
            if not store.touch_running_session(connection, target.id):
                raise _Ended
            store.insert_trials(connection, [row])
            if design.adaptive_stop_halfwidth and adaptive_schedule.KEY in scheduled:
                answer.update(adaptive.stop_if_reached(connection, target.id,
                                                       scheduled["trial_index"],
                                                       design.adaptive_stop_halfwidth))
            if practice:
                answer.update(_practice_gate(connection, target, design))
    except IntegrityError:
        return 200, _existing(connection, target.id, fields, ApiError(
            409, "trial_index_taken",
            f"trial {fields['trial_index']} is already stored with another client_uuid"))
    except _Ended:
        status = store.session_status(connection, target.id)
        return 200, _existing(connection, target.id, fields, _not_in_progress(target, status))
    return 201, answer


def _served(connection: Connection, target: Row, scheduled: dict) -> dict:
    """What timing quality holds a clip trial's counts to, which the browser cannot change
    (:mod:`experiments.timing_quality`): the clip served (``clip_frames``, ``clip_fps``);
    empty without a served clip."""
    clip = presentations.served_clip(connection, target, scheduled)
    return {} if clip is None else {"clip_frames": clip[0], "clip_fps": clip[1]}


def _not_in_progress(session: Row, status: str) -> ApiError:
    """409 ``not_in_progress``, with the ending of an ended session to show."""
    ended = sessions.ending(session, status) if status in verdict.ENDED else {}
    return ApiError(409, "not_in_progress", f"this session is {status!r}", **ended)


def _practice_gate(connection: Connection, target: Row, design) -> dict:
    """Decide the gate once a practice attempt is complete (inside the trial's transaction)."""
    current = store.locked_session(connection, target.id)
    passed = practice_passed(current.status, current.schedule,
                             practice_records(connection, target.id), design)
    answer = {"practice_passed": passed}
    if passed is not False:
        return answer
    attempts = max(t.get("practice_attempt", 1) for t in current.schedule)
    technical = technical_attempts(current.schedule, practice_records(connection, target.id))
    if len(technical) > MAX_TECHNICAL_ATTEMPTS:
        _end_technical(connection, target)
        return answer
    if attempts - len(technical) < design.practice.max_attempts:
        catalog = load_catalog(connection, target.stimulus_set, design.catch_set)
        extra = scheduling.practice_trials(design, catalog, target.seed, target.session_number,
                                           attempt=attempts + 1)
        store.update_session(connection, target.id, schedule=scheduling.insert_practice_attempt(
            current.schedule, extra))
        answer.update(practice_passed=None, schedule_changed=True)
    else:
        _fail_practice(connection, target, design)  # its last attempt: no schedule change
    return answer


# A practice attempt the browser could not measure (every trial technical: a background tab,
# fullscreen left each time) shows nothing of the participant: it is run again, said as such
# (state.py practice_rerun), without counting toward the design's max_attempts; after this
# many the session ends screened out (all_technical), never failed_practice.
MAX_TECHNICAL_ATTEMPTS = 2


def technical_attempts(schedule: list[dict], records: list[dict]) -> list[int]:
    """The practice attempts (numbers) whose stored trials are all technical."""
    attempt_of = {t["trial_index"]: t.get("practice_attempt", 1) for t in schedule
                  if t["block"] == scheduling.PRACTICE}
    by_attempt: dict[int, list[dict]] = {}
    for record in records:
        if record["trial_index"] in attempt_of:
            by_attempt.setdefault(attempt_of[record["trial_index"]], []).append(record)
    return sorted(attempt for attempt, done in by_attempt.items()
                  if all(exclusions.is_technical(r) for r in done))


def _end_technical(connection: Connection, session: Row) -> None:
    """End a session whose practice could not be measured (:data:`MAX_TECHNICAL_ATTEMPTS`
    exceeded) as a session whose main trials were all technical ends: screened out, with the
    screen-out code, its place given back."""
    store.update_session(connection, session.id, status=verdict.SCREENED_OUT,
                         completed_at=store.now(), excluded=True,
                         exclusion_reasons=[exclusions.ALL_TECHNICAL])
    if session.session_number == 1 and not session.simulated:
        store.count_cell(connection, session.study_id, session.condition["cell"], -1)


def _fail_practice(connection: Connection, session: Row, design) -> None:
    """End a session at the practice gate, with the plausibility rules applied to the
    practice trials it sent: a script that guesses practice ends here, not completed."""
    trials = store.stored_trials(connection, session.id)
    judged = _judge(connection, design, session, trials, verdict.FAILED_PRACTICE)
    store.flag_trials(connection, _changed_flags(trials, judged.trial_reasons))
    store.update_session(connection, session.id, completed_at=store.now(),
                         **judged.session_columns())


def complete(connection: Connection, session: Row) -> dict:
    """Finish a session once every scheduled trial is stored; computes exclusions.

    The verdict (:func:`experiments.verdict.judge`) is worked out before the write lock is
    taken: once every scheduled trial is stored no trial can still arrive, so the write
    transaction only records it (or finds that a concurrent /complete recorded it first).
    A session that ends ``screened_out`` (every main trial technical) gets the screen-out
    code instead of the completed one.
    """
    if session.status in verdict.ENDED:
        return sessions.ending(session, session.status)
    if session.status != verdict.IN_PROGRESS:
        raise ApiError(409, "not_started", "consent first")
    trials = store.stored_trials(connection, session.id)
    stored = {t.trial_index for t in trials}
    missing = [t["trial_index"] for t in adaptive_schedule.to_run(session.schedule)
               if t["trial_index"] not in stored]
    if missing:
        raise ApiError(409, "missing_trials", f"{len(missing)} trial(s) not stored yet",
                       missing=missing)
    judged = _judge(connection, Design.from_snapshot(session), session, trials,
                    verdict.IN_PROGRESS)
    changed = _changed_flags(trials, judged.trial_reasons)
    with write_transaction(connection):
        if not store.update_session(connection, session.id, if_status=verdict.IN_PROGRESS,
                                    **judged.session_columns(), completed_at=store.now()):
            # a concurrent /complete recorded the verdict first
            current = store.locked_session(connection, session.id)
            return sessions.ending(session, current.status)
        store.flag_trials(connection, changed)
        if judged.status == verdict.SCREENED_OUT and session.session_number == 1 \
                and not session.simulated:  # it gives its place back, as a screen-out does
            store.count_cell(connection, session.study_id, session.condition["cell"], -1)
    return sessions.ending(session, judged.status)


def _judge(connection: Connection, design, session: Row, trials: list[Row],
           status: str) -> verdict.Verdict:
    """The verdict on a session's stored trials (:func:`experiments.verdict.judge`)."""
    records = [stored_record(t) | {"received_at": t.received_at} for t in trials]
    return verdict.judge(design, session.schedule, records,
                         store.media_served(connection, session.id),
                         simulated=session.simulated, status=status)


def _changed_flags(trials: list[Row], per_trial: list[list[str]]) -> dict[int, list[str]]:
    """Exclusion reasons by trial id, for the trials whose stored flags differ."""
    return {t.id: reasons for t, reasons in zip(trials, per_trial)
            if (t.excluded, t.exclusion_reasons) != (bool(reasons), reasons)}


def recompute_study(study) -> dict[str, int]:
    """Re-apply the study's exclusion rules to every finished human session (flags only; a
    session that failed practice keeps that status), and label the study with the version
    of the rules applied.

    For use after a rule change; sessions still running are left to their own completion.
    Returns the number of sessions checked and of those now excluded.
    """
    design = Design.from_snapshot(study)
    excluded = 0
    with db.engine.connect() as connection:
        finished_sessions = store.finished_human_sessions(connection, study.id)
        for session in finished_sessions:
            with write_transaction(connection):
                trials = store.stored_trials(connection, session.id)
                judged = _judge(connection, design, session, trials, session.status)
                store.flag_trials(connection, _changed_flags(trials, judged.trial_reasons))
                store.update_session(connection, session.id, **judged.session_columns())
            excluded += judged.excluded
        with write_transaction(connection):
            store.record_rules_version(connection, study.id, design.exclusions.version)
    return {"sessions": len(finished_sessions), "excluded": excluded}
