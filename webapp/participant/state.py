"""What the browser is told of its session (the GET answer): its schedule without the
main trials' answers, what is stored, the practice gate, and the ending once it ended."""
from __future__ import annotations

from sqlalchemy import Connection, Row

from experiments import adaptive_schedule, verdict
from experiments import schedule as scheduling
from experiments.designs import Design
from experiments.trial_types import ATTENTION_CHECK, TASKS
from webapp.participant import sessions, store
from webapp.participant.progress import practice_passed, stored_record, technical_attempts
from webapp.stimuli.files import media_url_maker


def session_state(connection: Connection, session: Row) -> dict:
    """The GET answer: the browser's view of the session (no main-trial answers)."""
    records = [stored_record(t) for t in store.stored_trials(connection, session.id)]
    stored = [r["trial_index"] for r in records]
    design = Design.from_snapshot(session)
    media_url = media_url_maker(session.token)
    done = set(stored)
    schedule = adaptive_schedule.to_run(session.schedule)  # no slot a stopped sweep skipped
    pending = [t["trial_index"] for t in schedule if t["trial_index"] not in done]
    state = {
        "status": session.status, "session_number": session.session_number,
        "sessions": design.sessions, "consent": sessions.consent_state(session.status),
        "key_mapping": session.condition.get("key_mapping"),
        "response_keys": list(design.response_keys),
        # The design's task (its trial type) says what the instructions explain: catch trials
        # are presented as clips of another type, so the trials' types cannot.
        "task": design.task,
        "trials": [_public_trial(session, t, media_url) for t in schedule],
        "next_trial_index": pending[0] if pending else len(session.schedule),
        "stored_indices": stored,
        "response_window_ms_after_clip": design.response_window_ms_after_clip,
        "inter_trial_ms": design.inter_trial_ms,
        # Every main trial (catch trials too, so none stands out) is loaded only once the
        # answers before it are stored: an adaptive slot's level is chosen from them.
        "adaptive": design.adaptive_trials > 0,
        "practice": {"min_accuracy": design.practice.min_accuracy,
                     "max_attempts": design.practice.max_attempts},
        "practice_passed": practice_passed(session.status, session.schedule, records, design),
        "practice_rerun": _practice_rerun(session.schedule, records),
        "blocks": scheduling.blocks_summary(schedule),
        # Whether some trials check attention (the instructions say so), never which ones.
        "attention_checks": any(t["trial_type"] == ATTENTION_CHECK for t in session.schedule),
        "simulated": session.simulated,
        "preview": bool(session.preview),
    }
    if session.status in verdict.ENDED:
        state.update(sessions.ending(session, session.status))
    return state


def _practice_rerun(schedule: list[dict], records: list[dict]) -> str | None:
    """Why the current practice attempt runs: ``technical`` (the last one could not be
    measured, and does not count), ``failed`` (its accuracy was too low), None for the first."""
    attempt = max((t.get("practice_attempt", 1) for t in schedule
                   if t["block"] == scheduling.PRACTICE), default=1)
    if attempt == 1:
        return None
    return "technical" if attempt - 1 in technical_attempts(schedule, records) else "failed"


def _public_trial(session: Row, trial: dict, media_url) -> dict:
    """What the browser sees of ``trial``.  Only the simulated participant is ever told an
    answer (``preview_answer``), so that it can pass practice at its set accuracy: a practice
    trial's in any simulated session (always excluded), and in a researcher's preview a catch
    trial's instructed key too, so that the preview reaches the debrief.  No participant's
    session is ever sent one."""
    view = scheduling.public_trial(trial, media_url)
    if session.preview and trial["trial_type"] == ATTENTION_CHECK:
        view["preview_answer"] = {"instructed_key": trial["instructed_key"],
                                  "correct_response": trial["correct_response"]}
    elif session.simulated and trial["block"] == scheduling.PRACTICE:
        # Practice trials are of the design's task, whose type says its answer as feedback.
        answer = TASKS[trial["trial_type"]].feedback_answer(trial)
        view["preview_answer"] = {"correct_response": answer}
    return view
