"""Participant pages: the entry link and the runner page (no login; the token is the key)."""
from urllib.parse import urlencode

from flask import Blueprint, current_app, make_response, redirect, render_template, request, url_for

from experiments import languages
from webapp.extensions import csrf, db
from webapp.participant import calendar, resume, sessions, store, texts
from webapp.participant.entry import Admission, Entry, enter

bp = Blueprint("participant", __name__)


def simulation_allowed() -> bool:
    """The built-in simulated participant is for development and tests only (researchers
    preview a study with it from the dashboard, in any mode)."""
    app = current_app
    return bool(app.testing or app.debug or app.config["DEVELOPMENT"])


@bp.app_template_filter("text_direction")
def text_direction(language: str | None) -> str:
    """``rtl`` for a language written right to left (the pages' ``dir``), else ``ltr``."""
    return languages.direction(language or "en")


def _texts(snapshot, remembered: str | None = None) -> tuple[str, dict]:
    """The page's language and texts: ``?lang=``, else the participant's session's
    (``remembered``), else the browser's, else the study's first."""
    return texts.page_texts(snapshot, request.args.get("lang"), request.accept_languages,
                            remembered)


@bp.get("/p/<slug>")
def entry(slug):
    if "resume" in request.args:  # a researcher's resume link: a page with one button
        return _resume_page(slug)
    admission = Admission(
        address=request.remote_addr or "",
        simulated="simulate" in request.args and simulation_allowed(),
        resume_keys=resume.held_keys(request.cookies.get(resume.COOKIE)))
    with db.engine.connect() as connection:
        result = enter(connection, slug, request.args, admission, request.accept_languages)
    if result.outcome == "run":
        # The language asked for travels on to the runner page.
        query = {"lang": request.args["lang"]} if request.args.get("lang") else {}
        target = url_for("participant.run", token=result.token)
        response = redirect(f"{target}?{urlencode(query)}" if query else target, code=303)
        if result.resume_key:
            resume.remember(response, slug, result.resume_key)
        return response
    return _entry_page(slug, result)


def _entry_page(slug: str, result: Entry):
    """The page of an entry that does not lead to the runner."""
    snapshot = result.study.design_snapshot if result.study else None
    lang, text = _texts(snapshot, result.language)
    if result.outcome == "ask_id":
        # The link without a participant id: a form that opens the same link with one.
        refused = result.key == "ask_id_invalid"
        return render_template("participant/ask_id.html", lang=lang, texts=text,
                               action=url_for("participant.entry", slug=slug),
                               problem=text[result.key] if refused else None,
                               typed=request.args.get("participant", "") if refused else "",
                               keep_lang=request.args.get("lang") == lang), 400 if refused else 200
    if result.outcome == "screened_out":
        ending = result.ending
        return render_template(
            "participant/screened_out.html", lang=lang, texts=text, code=ending["code"],
            redirect_url=ending["redirect_url"],
            why=texts.screen_out_text(snapshot, lang, ending["reasons"], ending["device"],
                                      ending["code"])), 200
    if result.outcome == "done":
        return render_template("participant/done.html", lang=lang, texts=text,
                               message=text.get(result.key) or result.message), 200
    if result.outcome == "wait" and result.opens_at is not None:
        return render_template("participant/wait.html", lang=lang, texts=text,
                               opens_at=result.opens_at,
                               opens_at_iso=calendar.iso_utc(result.opens_at)), 200
    if result.outcome == "elsewhere":
        return render_template("participant/elsewhere.html", lang=lang, texts=text), 403
    status = {"invalid": 400, "full": 409, "busy": 429, "unavailable": 503}.get(result.outcome, 404)
    response = make_response(render_template(
        "participant/closed.html", lang=lang, texts=text,
        message=text.get(result.key) or result.message), status)
    if result.outcome == "busy":
        response.headers["Retry-After"] = str(result.retry_after_s)
    return response


def _resume_page(slug: str):
    """The page of a resume link: its button, or why the link no longer works."""
    code = request.values.get("resume", "")
    with db.engine.connect() as connection:
        study = store.study_by_slug(connection, slug)
        usable = study is not None and resume.usable_link(connection, slug, code) is not None
    lang, text = _texts(study.design_snapshot if study else None)
    return render_template("participant/resume.html", lang=lang, texts=text, usable=usable,
                           code=code, action=url_for("participant.use_resume_link", slug=slug)
                           ), 200 if usable else 404


# No CSRF token: the participant has no session to forge a request in, and a forged post can
# only use a code its sender already holds.
@csrf.exempt
@bp.post("/p/<slug>")
def use_resume_link(slug):
    """Use a resume link: this browser gets the participant's resume key and enters."""
    with db.engine.connect() as connection:
        redeemed = resume.redeem(connection, slug, request.form.get("resume", ""))
    if redeemed is None:
        return _resume_page(slug)  # now used up or unknown: why it no longer works
    recruitment, key = redeemed
    response = redirect(url_for("participant.entry", slug=slug, **recruitment), code=303)
    resume.remember(response, slug, key)
    return response


@bp.get("/run/<token>")
def run(token):
    with db.engine.connect() as connection:
        session = sessions.session_by_token(connection, token)
    if session is None:
        lang, text = _texts(None)
        return render_template("participant/closed.html", lang=lang, texts=text,
                               message=text["invalid_link"]), 404
    lang, text = _texts(session.design_snapshot,
                        texts.remembered_language(session.device_info))
    response = make_response(render_template(
        "participant/run.html", token=session.token, lang=lang, texts=text,
        api_base=url_for("api.state", token=session.token), preview=bool(session.preview)))
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
