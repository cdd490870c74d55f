"""Participant services on a running session: its token, consent, device, heartbeat, the
tab that runs it, the screen-out, and the completion codes and redirect it ends with.

Views stay thin: they parse, call one function here (or in :mod:`webapp.participant.entry`,
:mod:`webapp.participant.progress`) and render.

Participant calls are most of the server's work, so they skip the ORM Session: each call runs
on one Core connection that its view opens (``with db.engine.connect() as connection``), reads
plain rows, and writes in short :func:`~webapp.database.write_transaction` blocks on it.
The SQL itself lives in :mod:`webapp.participant.store`.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

from flask import current_app
from sqlalchemy import Connection, Row

from experiments.verdict import ENDED, UNFINISHED
from webapp.database import write_transaction
from webapp.participant import store, texts
from webapp.participant.store import count_cell, locked_session, now, touch_session, update_session

# Why a device check screens a participant out (static/js/device.js problems()).
SCREEN_OUT_REASONS = ("device", "browser", "window", "fullscreen", "video", "keyboard")
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete?cc={code}"
FULL = "This study has all the participants it needs. Thank you for your interest."


def plausible_token(token: str) -> bool:
    """Tokens are ``token_urlsafe(32)``; anything far from that is not looked up."""
    return 0 < len(token) <= 64


def session_by_token(connection: Connection, token: str) -> Row | None:
    if not plausible_token(token):
        return None
    return store.session_by_token(connection, token)


def completion_codes(slug: str) -> dict[str, str]:
    """A study's completion codes by outcome, derived from the app secret and its slug
    (stable, so they can be entered in Prolific once; shown on the study's dashboard page)."""
    secret = current_app.config["SECRET_KEY"].encode()

    def code(outcome: str) -> str:
        digest = hmac.new(secret, f"code:{slug}:{outcome}".encode(), hashlib.sha256)
        return base64.b32encode(digest.digest()).decode()[:8]

    return {outcome: code(outcome) for outcome in ENDED}


def ending(session: Row, status: str) -> dict:
    """Status, completion code and redirect of a session that ended with ``status``."""
    code = completion_codes(session.slug).get(status)
    prolific = "PROLIFIC_PID" in (session.recruitment or {})
    return {"status": status, "completion_code": code,
            "redirect_url": PROLIFIC_COMPLETE.format(code=code) if prolific and code else None}


def record_consent(connection: Connection, session: Row, consent: bool,
                   language: str | None = None) -> dict:
    """Record the participant's answer to the consent form, with what they read: its
    ``language``, the version of its text (:func:`texts.consent_version`) and the study's
    configuration version."""
    record: dict = {"given": consent, "at": now().isoformat()}
    if language is not None:
        record.update(language=language, text_version=texts.consent_version(session, language),
                      study_version=session.study_version)
    with write_transaction(connection):
        current = locked_session(connection, session.id)
        status = current.status
        # Consenting is joining: a closed study takes nobody new, and a full one nobody more.
        if status == "started" and consent and session.study_status == "closed":
            raise ConsentRefused("study_closed", "This study has closed. Thank you for your "
                                                 "interest.")
        if status == "started" and consent and session.session_number == 1 \
                and not session.simulated and store.study_full(connection, session.study_id):
            raise ConsentRefused("study_full", FULL)
        if status in UNFINISHED:
            status = "in_progress" if consent else "no_consent"
            ended: dict[str, Any] = {} if consent else {"completed_at": now()}
            update_session(connection, session.id, status=status, **ended, device_info={
                **(current.device_info or {}), "consent": record})
            if not consent and session.session_number == 1 and not session.simulated:
                count_cell(connection, session.study_id, session.condition["cell"], -1)
    if status == "no_consent":
        return ending(session, status)
    return {"ok": True}


class ConsentRefused(Exception):
    """Consent that cannot be taken: the study closed or filled up since the participant
    entered (``code``: study_closed | study_full)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def consent_state(status: str) -> bool | None:
    if status == "started":
        return None
    return status != "no_consent"


def record_device(connection: Connection, session: Row, fields: dict) -> None:
    with write_transaction(connection):
        current = locked_session(connection, session.id)
        update_session(connection, session.id, last_seen_at=now(), device_info={
            **(current.device_info or {}), "device": fields, "device_at": now().isoformat()})


# Resumes kept per session: a page reloaded in a loop must not grow the row without bound.
MAX_RESUMES = 100


class ResumeRefused(ValueError):
    """A claim naming a trial the session's schedule does not hold."""


def claim(connection: Connection, session: Row, client: str, trial_index: int | None = None,
          restarted: bool = False) -> None:
    """Make browser tab ``client`` the one that runs the session (the newest tab wins).

    A claim after an earlier one is a resume, kept in ``resumes`` (at most
    :data:`MAX_RESUMES`): when, the time away (from the session's last sign of life, on the
    server's clock, to this claim), the trial the page goes on with (``trial_index``, as the
    browser says) and whether that trial was on screen when the page went away, so that it
    is shown again from its start (``restarted``; the trial is then stored with
    ``restarted`` true).

    Raises
    ------
    ResumeRefused
        If ``trial_index`` is not in the session's schedule.
    """
    with write_transaction(connection):
        current = locked_session(connection, session.id)
        scheduled = {t.get("trial_index") for t in current.schedule or []}
        if trial_index is not None and trial_index not in scheduled:
            raise ResumeRefused(f"trial_index {trial_index} is not in the session's schedule")
        moment = now()
        values: dict = {"active_client": client, "last_seen_at": moment}
        resumes = list(current.resumes or [])
        if current.active_client is not None and len(resumes) < MAX_RESUMES:
            away = (moment - current.last_seen_at).total_seconds()
            values["resumes"] = [*resumes, {
                "at": moment.isoformat(), "away_s": round(max(0.0, away), 3),
                "trial_index": trial_index, "restarted": restarted}]
        update_session(connection, session.id, **values)


def heartbeat(connection: Connection, session: Row) -> None:
    with write_transaction(connection):
        touch_session(connection, session.id)


class ScreenOutRefused(ValueError):
    """A screen-out asked for when there is none to give: after consent, or with trials
    stored (the participant has begun the study; the screen-out code would pay for it)."""


def screen_out(connection: Connection, session: Row, reasons: list[str]) -> dict:
    """End a session whose device check failed before consent: it is marked
    ``screened_out``, takes no place, and gets the study's screen-out code.

    Raises
    ------
    ScreenOutRefused
        If the session is past consent or has trials stored (the view has checked that
        ``reasons`` names at least one).
    """
    with write_transaction(connection):
        current = locked_session(connection, session.id)
        if current.status == "started" and store.stored_trials(connection, session.id):
            raise ScreenOutRefused("this session has stored trials: it cannot be screened out")
        if current.status == "in_progress":
            raise ScreenOutRefused("this session is past consent: it cannot be screened out")
        if current.status == "started":
            update_session(connection, session.id, status="screened_out", completed_at=now(),
                           excluded=True, exclusion_reasons=["screened_out"], device_info={
                               **(current.device_info or {}),
                               "screen_out": {"reasons": reasons, "at": now().isoformat()}})
            # Its cell counted it at entry; like a refused consent, it leaves the cell again.
            if session.session_number == 1 and not session.simulated:
                count_cell(connection, session.study_id, session.condition["cell"], -1)
            return ending(session, "screened_out")
        status = current.status
    return ending(session, status) if status in ENDED else {"status": status}
