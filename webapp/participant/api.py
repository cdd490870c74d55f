"""The participant JSON API (``/api/session/<token>``); the token is the credential.

CSRF-exempt by design (the researcher side exempts blueprint ``api``): it authenticates by
the unguessable token in the URL, never by a cookie.  Every error is a 4xx JSON answer
``{"error": code, "message": text}``.
"""
import json

from flask import Blueprint, Response, jsonify, request, url_for
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from experiments import verdict
from experiments.trial_types.base import MAX_INDEX, Field, PayloadError, check_fields
from webapp.extensions import db
from webapp.participant import calendar, feedback, progress, sessions, store, texts
from webapp.participant.progress import ApiError
from webapp.participant.state import session_state
from webapp.stimuli import presentations

bp = Blueprint("api", __name__, url_prefix="/api/session/<token>")

ACCEPTED_TYPES = ("application/json", "text/plain", "")
DEVICE_FIELDS = (
    Field("user_agent", "str", required=True, max_length=1000),
    *(Field(name, "int", required=True, minimum=0, maximum=100_000)
      for name in ("screen_w", "screen_h", "window_w", "window_h")),
    Field("refresh_hz", "number", required=True, nullable=True, minimum=0.0, maximum=1000.0),
    Field("device_pixel_ratio", "number", required=True, minimum=0.0, maximum=16.0),
    Field("touch", "bool", required=True),
    Field("video_check_ok", "bool", required=True),
)
CONSENT_FIELDS = (Field("consent", "bool", required=True),)
SCREEN_OUT_FIELDS = (Field("reasons", "list", required=True, max_length=8, items=Field(
    "reason", "str", required=True, choices=sessions.SCREEN_OUT_REASONS)),)
SWITCH_FIELDS = (Field("reasons", "list", required=True, max_length=8, items=Field(
    "reason", "str", required=True, choices=sessions.SWITCH_REASONS)),)
# The session's reading (GET) may name the participant's language.
STATE_FIELDS = (Field("lang", "str", max_length=16),)


def _reject_constant(name: str):
    raise PayloadError("non_finite", f"{name} is not a JSON number")


def read_body() -> dict:
    """The request body as a JSON object (``application/json`` or sendBeacon's text/plain)."""
    if request.mimetype not in ACCEPTED_TYPES:
        raise ApiError(415, "unsupported_media_type", "send JSON (application/json or text/plain)")
    raw = request.get_data(cache=False)
    if not raw.strip():
        raise PayloadError("empty_body", "the body must be a JSON object")
    try:
        body = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        if isinstance(error, PayloadError):
            raise
        raise PayloadError("invalid_json", f"the body is not valid JSON ({error})") from None
    if not isinstance(body, dict):
        raise PayloadError("wrong_type", "the body must be a JSON object")
    return body


# A random id each runner page makes for itself (api.js).
CLIENT_FIELD = Field("client", "str", max_length=64)
CLAIM_FIELDS = (Field("client", "str", required=True, max_length=64),
                # Where a page that takes the session up goes on (a resume, if it is not the
                # first claim): the trial it runs next, and whether that one was on screen
                # when the page went away (shown again from its start).
                Field("trial_index", "int", nullable=True, minimum=0, maximum=MAX_INDEX),
                Field("restarted", "bool", default=False))


def _found_session(connection, token: str):
    """The session row with ``token``, or 404."""
    session = sessions.session_by_token(connection, token)
    if session is None:
        raise ApiError(404, "unknown_session", "no session with this token")
    return session


def _session(connection, token: str):
    """The session row; refused (409 ``other_tab``) when the request names a browser tab
    (``?client=``) other than the one that holds the session: one tab runs it at a time."""
    session = _found_session(connection, token)
    query = (CLIENT_FIELD,) if request.method == "POST" else (CLIENT_FIELD, *STATE_FIELDS)
    client = check_fields(dict(request.args), query)["client"]
    # Once a tab holds the session, a write must name it (no client is no exception); reading
    # the state is for any tab (the one about to claim the session reads it first).
    if request.method == "POST" and session.active_client and client != session.active_client:
        raise ApiError(409, "other_tab", "This study is running in another tab or window. "
                                         "Continue there, or choose to continue here.")
    return session


def _refuse_ended(session):
    """409 ``not_in_progress``, with the ending to show, for a session that has ended: e.g.
    stopped by the researchers, it takes no consent, device, claim or heartbeat."""
    if session.status in verdict.ENDED:
        raise ApiError(409, "not_in_progress", f"this session is {session.status!r}",
                       **sessions.ending(session, session.status), **_next_session(session))
    return session


def _next_session(session) -> dict:
    """What the ending of a completed session adds when the design has a session after it:
    its number, when it opens (UTC; the browser shows the participant's local time) and the
    address of its calendar file.  Empty otherwise."""
    upcoming = calendar.next_session(session)
    if upcoming is None:
        return {}
    return {"next_session": {
        "session": upcoming["session"], "sessions": upcoming["sessions"],
        "opens_at": calendar.iso_utc(upcoming["opens_at"]),
        "calendar_url": url_for("api.calendar_file", token=session.token)}}


@bp.errorhandler(ApiError)
def _api_error(error: ApiError):
    return jsonify(error=error.code, message=error.message, **error.extra), error.status


@bp.errorhandler(PayloadError)
def _payload_error(error: PayloadError):
    return jsonify(error=error.code, message=error.message), 400


@bp.errorhandler(RequestEntityTooLarge)
def _too_large(error):
    return jsonify(error="too_large", message="the request body is too large"), 413


@bp.errorhandler(HTTPException)
def _http_error(error: HTTPException):
    return jsonify(error=error.name.lower().replace(" ", "_"), message=error.description), error.code


@bp.after_request
def _private(response):
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


# Each call runs on one Core connection of its own (see webapp.participant.sessions).
@bp.get("")
def state(token):
    with db.engine.connect() as connection:
        session = _session(connection, token)
        answer = session_state(connection, session)
    # In the participant's language: ?lang= (the run page passes its own), else the browser's.
    reading = texts.session_reading(session, request.args.get("lang"), request.accept_languages)
    answer["trials"] = texts.annotated(session, answer["trials"], reading["language"])
    return jsonify(answer | _next_session(session) | reading)


@bp.post("/consent")
def consent(token):
    with db.engine.connect() as connection:
        session = _session(connection, token)
        fields = check_fields(read_body(), CONSENT_FIELDS)  # a bad body is a 400 in any state
        # The language the consent form was read in: the session's (chosen at entry from the
        # link's ?lang=, the participant's last session or the browser), else the browser's.
        language = texts.session_language(session, None, request.accept_languages)
        if fields["consent"] and session.status == "started" \
                and sessions.refresh_outside_range(session):
            # The browser's device check lets no such rate consent: a client that does is
            # screened out as one that gave up at the check (review 30, finding 6).
            return jsonify(sessions.screen_out(connection, session, ["refresh"]))
        try:
            return jsonify(sessions.record_consent(connection, _refuse_ended(session),
                                                   fields["consent"], language))
        except sessions.ConsentRefused as error:
            raise ApiError(409, error.code, str(error)) from None


@bp.post("/device")
def device(token):
    with db.engine.connect() as connection:
        session = _session(connection, token)
        fields = check_fields(read_body(), DEVICE_FIELDS)
        sessions.record_device(connection, _refuse_ended(session), fields)
    return "", 204


@bp.post("/screen-out")
def screen_out(token):
    """The device check failed before consent, or the window is too small after it: the
    session ends ``screened_out`` with the screen-out code.  400 ``no_reason`` without a
    reason; 409 ``screen_out_refused`` once trials are stored, or after consent for another
    reason than the window (``sessions.AFTER_CONSENT_REASONS``)."""
    with db.engine.connect() as connection:
        session = _session(connection, token)
        reasons = _reasons(SCREEN_OUT_FIELDS, "a screen-out", sessions.SCREEN_OUT_REASONS)
        try:
            return jsonify(sessions.screen_out(connection, _refuse_ended(session), reasons))
        except sessions.ScreenOutRefused as refused:
            raise ApiError(409, "screen_out_refused", str(refused)) from None


def _reasons(fields, what: str, allowed: tuple[str, ...]) -> list[str]:
    """The body's ``reasons``, checked against ``fields``; 400 ``no_reason`` when empty."""
    reasons = list(check_fields(read_body(), fields)["reasons"])
    if not reasons:
        raise ApiError(400, "no_reason", f"{what} needs at least one reason "
                                         f"({', '.join(allowed)})")
    return reasons


@bp.post("/switch")
def switch(token):
    """The device check asks the participant to open their link in another browser or on
    another computer (a reason a switch fixes): the same id then continues there.  Answers
    ``{"switch": false}`` where it cannot (after consent, or a later session)."""
    with db.engine.connect() as connection:
        session = _session(connection, token)
        reasons = _reasons(SWITCH_FIELDS, "a switch", sessions.SWITCH_REASONS)
        return jsonify(sessions.request_switch(connection, _refuse_ended(session), reasons))


@bp.post("/trials")
def trials(token):
    with db.engine.connect() as connection:
        session = _session(connection, token)
        status, answer = progress.store_trial(connection, session, read_body())
        # Practice feedback: told only once the answer is stored (webapp.participant.feedback).
        answer |= feedback.stored_verdict(connection, session, answer)
    if answer.get("practice_passed") is False:  # the session ended: failed_practice
        presentations.discard(token)
    return jsonify(answer), status


@bp.post("/claim")
def claim(token):
    """This tab takes the session over; any other tab is refused from its next request on."""
    with db.engine.connect() as connection:
        session = _found_session(connection, token)  # any tab may claim: no tab check
        fields = check_fields(read_body(), CLAIM_FIELDS)
        if fields["restarted"] and fields["trial_index"] is None:
            raise PayloadError("inconsistent", "a restarted trial needs its trial_index")
        try:
            sessions.claim(connection, _refuse_ended(session), fields["client"],
                           fields["trial_index"], fields["restarted"])
        except sessions.ResumeRefused as error:
            raise PayloadError("out_of_range", str(error)) from None
    return "", 204


@bp.post("/heartbeat")
def heartbeat(token):
    with db.engine.connect() as connection:
        session = _session(connection, token)
        check_fields(read_body() if request.content_length else {}, ())
        sessions.heartbeat(connection, _refuse_ended(session))
    return "", 204


@bp.post("/complete")
def complete(token):
    with db.engine.connect() as connection:
        session = _session(connection, token)
        check_fields(read_body() if request.content_length else {}, ())
        answer = progress.complete(connection, session)
        presentations.discard(token)
        if answer["status"] == "completed":  # the row read before completing is stale now
            answer |= _next_session(_found_session(connection, token))
    return jsonify(answer)


@bp.get("/calendar.ics")
def calendar_file(token):
    """The next session's calendar file (RFC 5545), in the participant's language (``?lang=``,
    else the browser's); 404 ``no_next_session`` unless this session was completed and the
    design has a session after it.  Only this session's own token reaches it."""
    with db.engine.connect() as connection:
        session = _found_session(connection, token)
    requested = check_fields(dict(request.args), STATE_FIELDS)["lang"]
    upcoming = calendar.next_session(session)
    if upcoming is None:
        raise ApiError(404, "no_next_session", "this session has no next session to come")
    language = texts.session_language(session, requested, request.accept_languages)
    link = calendar.entry_link(session.slug,
                               {**calendar.entry_query(session.recruitment), "lang": language})
    rendered = texts.session_texts(session, language,
                                   {"next_session": upcoming["session"], "link": link})
    body = calendar.calendar_file(
        session, upcoming, calendar.plain_text(rendered["calendar_summary"]),
        calendar.plain_text(rendered["calendar_description"]), link,
        texts.session_minutes(session), store.now())
    name = f"{session.slug}-session-{upcoming['session']}.ics"
    return Response(body, mimetype="text/calendar", headers={
        "Content-Disposition": f'attachment; filename="{name}"'})
