"""``GET /api/openapi.json``: the participant API's OpenAPI description, kept in the repo."""
from flask import Blueprint, Response

from webapp.openapi import SCHEMA_FILE

bp = Blueprint("openapi", __name__)


@bp.get("/api/openapi.json")
def participant_api():
    # Read per request: a few kB, and it keeps the file the single source that is served.
    return Response(SCHEMA_FILE.read_bytes(), mimetype="application/json",
                    headers={"Cache-Control": "public, max-age=300"})
