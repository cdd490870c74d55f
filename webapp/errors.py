"""Errors as clients need them: JSON for the API, and 503 + Retry-After for a busy database."""
from flask import Flask, jsonify, request
from sqlalchemy.exc import OperationalError
from werkzeug.exceptions import HTTPException

from webapp.extensions import db

# Messages of conditions that clear by themselves: SQLite busy/locked, PostgreSQL lock timeouts,
# serialization failures and deadlocks, and dropped connections.
_RETRYABLE = ("database is locked", "database is busy", "could not obtain lock", "lock timeout",
              "deadlock detected", "could not serialize", "server closed the connection",
              "connection refused", "terminating connection")
RETRY_AFTER_S = 1


def is_retryable(error: OperationalError) -> bool:
    message = str(error.orig if error.orig is not None else error).lower()
    return any(fragment in message for fragment in _RETRYABLE)


def wants_json() -> bool:
    return request.path.startswith("/api/") or request.accept_mimetypes.best == "application/json"


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(OperationalError)
    def _database_unavailable(error):
        db.session.rollback()
        if not is_retryable(error):
            raise error
        app.logger.warning("retryable database error on %s: %s", request.path, error.orig)
        response = jsonify(error="busy", message="The database is busy; retry shortly.")
        response.status_code = 503
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
        return response

    @app.errorhandler(HTTPException)
    def _http_error(error):
        if not wants_json():
            return error
        code = (error.name or "error").lower().replace(" ", "_")
        response = jsonify(error=code, message=error.description)
        response.status_code = error.code or 500
        return response
