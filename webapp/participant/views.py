"""Participant pages: the entry link and the runner page (no login; the token is the key)."""
from flask import (Blueprint, current_app, make_response, redirect, render_template, request,
                   url_for)

from webapp.participant import sessions
from webapp.extensions import db

bp = Blueprint("participant", __name__)


def simulation_allowed() -> bool:
    """The built-in simulated participant is for development and tests only (researchers
    preview a study with it from the dashboard, in any mode)."""
    app = current_app
    return bool(app.testing or app.debug or app.config["DEVELOPMENT"])


@bp.get("/p/<slug>")
def entry(slug):
    admission = sessions.Admission(
        address=request.remote_addr or "",
        simulated="simulate" in request.args and simulation_allowed())
    with db.engine.connect() as connection:
        result = sessions.enter(connection, slug, request.args, admission)
    if result.outcome == "run":
        return redirect(url_for("participant.run", token=result.token), code=303)
    if result.outcome == "done":
        return render_template("participant/done.html", message=result.message), 200
    if result.outcome == "wait":
        return render_template("participant/wait.html", opens_at=result.opens_at), 200
    status = {"invalid": 400, "full": 409, "busy": 429, "unavailable": 503}.get(result.outcome, 404)
    response = make_response(render_template("participant/closed.html", message=result.message),
                             status)
    if result.outcome == "busy":
        response.headers["Retry-After"] = "60"
    return response


@bp.get("/run/<token>")
def run(token):
    with db.engine.connect() as connection:
        session = sessions.session_by_token(connection, token)
    if session is None:
        return render_template("participant/closed.html",
                               message="This link is not valid."), 404
    response = make_response(render_template(
        "participant/run.html", token=session.token,
        api_base=url_for("api.state", token=session.token)))
    # Cross-origin isolation: Chromium then reports Element Timing unrounded, which the onset
    # clock (static/js/onset.js) uses; every resource of the page is same-origin.
    response.headers["Cross-Origin-Opener-Policy"] = "same-origin"
    response.headers["Cross-Origin-Embedder-Policy"] = "require-corp"
    return response


@bp.after_request
def _private(response):
    # The token is in the URL: never send it on as a referrer, never cache these pages.
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response
