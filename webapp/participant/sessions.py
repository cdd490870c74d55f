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

from experiments.platforms import PLATFORMS, fill, outcome_of
from experiments.verdict import ENDED, UNFINISHED
from webapp.database import write_transaction
from webapp.participant import store, texts
from webapp.participant.resume import switch_requested
from webapp.participant.store import count_cell, locked_session, now, touch_session, update_session

# Why a device check screens a participant out (static/js/device.js problems()).
SCREEN_OUT_REASONS = ("device", "browser", "window", "fullscreen", "video", "keyboard", "refresh")
# After consent only the window is checked again (fullscreen refused, a window too small):
# a participant who cannot fix it leaves with the screen-out code, not stuck on that screen.
AFTER_CONSENT_REASONS = ("window", "fullscreen")
# The entry link's parameters that bring a participant's id on any platform: Prolific's,
# and ours (a researcher's test link, a pool that sends its own id).
ID_PARAMS = ("PROLIFIC_PID", "participant")
FULL = "This study has all the participants it needs. Thank you for your interest."


def plausible_token(token: str) -> bool:
    """Tokens are ``token_urlsafe(32)``; anything far from that is not looked up."""
    return 0 < len(token) <= 64


def session_by_token(connection: Connection, token: str) -> Row | None:
    if not plausible_token(token):
        return None
    return store.session_by_token(connection, token)


PREVIEW_CODE = "PREVIEW"


def _code(message: str, length: int) -> str:
    secret = current_app.config["SECRET_KEY"].encode()
    digest = hmac.new(secret, message.encode(), hashlib.sha256)
    return base64.b32encode(digest.digest()).decode()[:length]


def completion_codes(slug: str, session_number: int = 1) -> dict[str, str]:
    """A study's shared codes by outcome for one of its sessions, derived from the app secret
    and its slug (stable, so they can be entered on the platform once; shown on the study's
    page).  Each session has its own: a later session's code is not the first one's again."""
    session = "" if session_number == 1 else f":session-{session_number}"
    return {outcome: _code(f"code:{slug}:{outcome}{session}", 8) for outcome in ENDED}


def participant_code(slug: str, session_id: int, status: str) -> str:
    """One session's own code for ``status`` (a platform whose codes are ``unique``): 10
    base32 characters of an HMAC under the app secret, 50 bits a participant cannot guess
    from their own or another's; recomputed, never looked up, to check one."""
    return _code(f"participant-code:{slug}:{session_id}:{status}", 10)


def session_code(slug: str, settings: dict, session_id: int, session_number: int,
                 status: str) -> str | None:
    """The code a session that ended with ``status`` shows, by its study's platform."""
    if status not in ENDED:
        return None
    if PLATFORMS[settings["platform"]].codes == "shared":
        return completion_codes(slug, session_number)[status]
    return participant_code(slug, session_id, status)


def return_url(slug: str, settings: dict, recruitment: dict, session_number: int,
               status: str, code: str) -> str | None:
    """Where the ending sends the participant: the study file's URL for the outcome, else the
    platform's for a participant whose link came from it; placeholders filled."""
    platform = PLATFORMS[settings["platform"]]
    outcome = outcome_of(status)
    if outcome is None:
        return None
    url = (settings.get("return_urls") or {}).get(outcome)
    if url is None and platform.id_param in recruitment:
        url = platform.urls.get(outcome)
    if url is None:
        return None
    participant = next((recruitment[k] for k in (platform.id_param, *ID_PARAMS)
                        if recruitment.get(k)), "")
    return fill(url, platform, {"participant": participant, "code": code, "study": slug,
                                "session": str(session_number)})


def ending(session: Row, status: str) -> dict:
    """Status, completion code and redirect of a session that ended with ``status``.  A
    researcher's preview gets :data:`PREVIEW_CODE` and no redirect: the study's real code,
    seen in a preview (or a screenshot of one), would let anyone claim a payment."""
    if getattr(session, "preview", False):
        return {"status": status, "completion_code": PREVIEW_CODE, "redirect_url": None}
    return ending_of(session.slug, session.design_snapshot, session.recruitment or {},
                     session.id, session.session_number, status)


def ending_of(slug: str, snapshot, recruitment: dict, session_id: int, session_number: int,
              status: str) -> dict:
    settings = texts.study_settings(snapshot)
    code = session_code(slug, settings, session_id, session_number, status)
    url = return_url(slug, settings, recruitment, session_number, status, code) \
        if code else None
    return {"status": status, "completion_code": code, "redirect_url": url}


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


def refresh_outside_range(session: Row) -> bool:
    """Whether the refresh rate the session's device check posted is outside the study's
    range (participants.min_refresh_hz / max_refresh_hz), as the browser's check decides
    (static/js/device.js problems): a rate it could not measure, or none posted, is outside
    any range; without a range, never."""
    settings = texts.study_settings(session.design_snapshot)
    low, high = settings["min_refresh_hz"], settings["max_refresh_hz"]
    if low is None and high is None:
        return False
    rate = ((session.device_info or {}).get("device") or {}).get("refresh_hz")
    return rate is None or (low is not None and rate < low) or (high is not None and rate > high)


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
    A claim after the device check asked for a switch (:func:`request_switch`) closes the
    switch: only the session's token is claimed, so the claim is the refused browser's.

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
        info = current.device_info or {}
        if switch_requested(info):
            # The browser asked to switch took the session up again: it stays this browser's,
            # so no other may take it over with the id alone (the request is kept, closed).
            values["device_info"] = {**info, "switch": {**info["switch"],
                                                        "closed_at": moment.isoformat()}}
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


# What another browser or computer fixes (static/js/device.js SWITCHABLE): the participant is
# asked to switch and continues there with the same id (webapp.participant.resume.unopened).
SWITCH_REASONS = ("device", "browser", "fullscreen", "window")


def request_switch(connection: Connection, session: Row, reasons: list[str]) -> dict:
    """Note that the device check asked the participant to open their link in another browser
    or on another computer: before consent (nothing stored), the session is then handed to
    the next browser that enters with the id, with a new token and resume key, so this
    browser's key and token open nothing more once it has.  Later it changes nothing.
    Returns ``{"switch": bool}``: whether the session can be taken up elsewhere."""
    with write_transaction(connection):
        current = locked_session(connection, session.id)
        if current.status != "started" or session.session_number != 1:
            return {"switch": False}
        update_session(connection, session.id, device_info={
            **(current.device_info or {}),
            "switch": {"reasons": reasons, "at": now().isoformat()}})
    return {"switch": True}


class ScreenOutRefused(ValueError):
    """A screen-out asked for when there is none to give: after consent, or with trials
    stored (the participant has begun the study; the screen-out code would pay for it)."""


def screen_out(connection: Connection, session: Row, reasons: list[str]) -> dict:
    """End a session whose device check failed before consent, or whose window is too small
    after it (fullscreen refused) before any trial: it is marked ``screened_out``, takes no
    place, and gets the study's screen-out code.

    Raises
    ------
    ScreenOutRefused
        If the session has trials stored, or is past consent for another reason than its
        window (the view has checked that ``reasons`` names at least one).
    """
    with write_transaction(connection):
        current = locked_session(connection, session.id)
        if current.status in ("started", "in_progress") and \
                store.stored_trials(connection, session.id):
            raise ScreenOutRefused("this session has stored trials: it cannot be screened out")
        if current.status == "in_progress" and not set(reasons) <= set(AFTER_CONSENT_REASONS):
            raise ScreenOutRefused("this session is past consent: it can be screened out only "
                                   "for its window (" + ", ".join(AFTER_CONSENT_REASONS) + ")")
        if current.status in ("started", "in_progress"):
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
