"""Errors as clients need them: JSON for the API, and 503 + Retry-After while the database is
busy or briefly unavailable."""
from flask import Flask, jsonify, make_response, render_template, request
from sqlalchemy.exc import OperationalError
from werkzeug.exceptions import HTTPException

from webapp.extensions import db
from webapp.participant import texts as participant_texts

# Messages of conditions that clear by themselves, so a client should retry rather than give up:
# SQLite busy/locked or full (space freed or the cap raised), PostgreSQL lock timeouts,
# serialization failures and deadlocks, dropped connections, a server shutting down, starting
# up or recovering, one out of connection slots or out of disk.
_RETRYABLE = ("database is locked", "database is busy", "database or disk is full",
              "could not obtain lock", "lock timeout", "deadlock detected", "could not serialize",
              "server closed the connection", "connection refused", "terminating connection",
              "the database system is shutting down", "the database system is starting up",
              "the database system is not yet accepting connections",
              "the database system is in recovery mode", "too many clients already",
              "no space left on device")
RETRY_AFTER_S = 1


def is_retryable(error: OperationalError) -> bool:
    message = str(error.orig if error.orig is not None else error).lower()
    return any(fragment in message for fragment in _RETRYABLE)


def wants_json() -> bool:
    return request.path.startswith("/api/") or request.accept_mimetypes.best == "application/json"


def busy_response():
    """503 + Retry-After, for a store (the database, the rate limits' Redis) that is busy or
    briefly unavailable."""
    if wants_json():
        response = jsonify(error="busy", message="The database is busy or briefly "
                                                 "unavailable; retry shortly.")
    else:  # a person opening a page (e.g. the entry link) reads a page, not JSON
        response = make_response(render_template("errors/busy.html"))
    response.status_code = 503
    response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return response


def error_page(error: HTTPException):
    """A page for an error outside any study (a mistyped address), in the language the
    browser asks for among the shipped ones, on the participant pages' look."""
    if error.code is None or error.code < 400:
        return error
    language, texts = participant_texts.page_texts(None, None, request.accept_languages)
    response = make_response(render_template(
        "errors/http.html", lang=language, texts=texts, not_found=error.code == 404,
        status=str(error.code)), error.code)
    if error.code == 405 and (allowed := error.get_headers()):
        response.headers.extend(header for header in allowed if header[0] == "Allow")
    return response


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(OperationalError)
    def _database_unavailable(error):
        db.session.rollback()
        if not is_retryable(error):
            raise error
        app.logger.warning("retryable database error on %s: %s", request.path, error.orig)
        return busy_response()

    @app.errorhandler(HTTPException)
    def _http_error(error):
        if not wants_json():
            return error_page(error)
        code = (error.name or "error").lower().replace(" ", "_")
        response = jsonify(error=code, message=error.description)
        response.status_code = error.code or 500
        return response
