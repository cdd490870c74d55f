"""Researcher accounts: password hashing, login and logout, and the app's security settings.

Participants never log in (their unguessable session token is their credential); every
researcher page and export sits behind Flask-Login, and every form behind Flask-WTF's CSRF.
"""
import re
from urllib.parse import urlsplit

from flask import (Blueprint, Flask, current_app, flash, redirect, render_template, request,
                   session, url_for)
from flask.sessions import SecureCookieSessionInterface
from flask_login import current_user, login_required, login_user, logout_user
from flask_wtf import FlaskForm
from sqlalchemy import select
from werkzeug.security import check_password_hash, generate_password_hash
from wtforms import BooleanField, PasswordField, StringField
from wtforms.validators import DataRequired, Length

from webapp.extensions import csrf, db, login_manager
from webapp.models import Researcher

bp = Blueprint("auth", __name__, url_prefix="/auth")

DEV_SECRET_KEY = "dev-only-change-me"
MIN_PASSWORD_LENGTH = 10
_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{1,79}$")
# Checked when the username is unknown, so a miss costs as long as a wrong password.
_dummy_hashes: dict[str, str] = {}


def init_security(app: Flask) -> None:
    """Bind Flask-Login and CSRF, exempt the token-authenticated participant API, harden cookies."""
    login_manager.init_app(app)
    login_manager.login_view = "auth.login"
    login_manager.session_protection = "strong"
    # Tests post forms without tokens unless they switch CSRF on (tests/webapp/test_csrf.py).
    app.config.setdefault("WTF_CSRF_ENABLED", not app.testing)
    csrf.init_app(app)
    if "api" in app.blueprints:
        # The participant API authenticates by the token in its URL, never by a cookie.
        csrf.exempt(app.blueprints["api"])
        app.session_interface = ResearcherCookieSessions(
            app.blueprints["api"].url_prefix.split("<", 1)[0])
    relaxed = app.debug or app.testing
    for key in ("SESSION_COOKIE_SECURE", "REMEMBER_COOKIE_SECURE"):
        if app.config.get(key) is None:
            app.config[key] = not relaxed
    if app.config["SECRET_KEY"] in (None, "", DEV_SECRET_KEY) and not relaxed:
        _warn_on_first_request(app)


class ResearcherCookieSessions(SecureCookieSessionInterface):
    """Cookie sessions are for researchers: requests under ``token_paths`` (the participant
    API) get an empty session that can't be written, so no cookie is read or set there, and
    the participant's hot path skips the cookie work."""

    def __init__(self, token_paths: str):
        self.token_paths = token_paths

    def open_session(self, app, request):
        if request.path.startswith(self.token_paths):
            return self.make_null_session(app)
        return super().open_session(app, request)


def _warn_on_first_request(app: Flask) -> None:
    """Say it once, when the app serves: CLI commands never use sessions and stay quiet."""
    warned = []

    @app.before_request
    def _warn_development_secret_key():
        if not warned:
            warned.append(True)
            app.logger.warning(
                "SECRET_KEY is the development default: anyone can forge researcher sessions. "
                "Set CHRONOSCOPE_SECRET_KEY (or SECRET_KEY in instance/config.py) before going "
                "live.")


@login_manager.user_loader
def _load_researcher(user_id: str) -> Researcher | None:
    return db.session.get(Researcher, int(user_id)) if user_id.isdigit() else None


def create_researcher(username: str, password: str) -> Researcher:
    """Store a new researcher with a salted scrypt hash of ``password``.

    Raises
    ------
    ValueError
        For a malformed or taken username, or a password shorter than MIN_PASSWORD_LENGTH.
    """
    if not _USERNAME.match(username or ""):
        raise ValueError("username must be 2-80 letters, digits, '.', '_', '@' or '-'")
    if len(password or "") < MIN_PASSWORD_LENGTH:
        raise ValueError(f"password must be at least {MIN_PASSWORD_LENGTH} characters")
    if find_researcher(username) is not None:
        raise ValueError(f"researcher {username!r} already exists")
    researcher = Researcher(username=username, password_hash=_hash(password))
    db.session.add(researcher)
    db.session.commit()
    return researcher


def _hash(password: str) -> str:
    return generate_password_hash(password, method=current_app.config["PASSWORD_HASH_METHOD"])


def find_researcher(username: str) -> Researcher | None:
    return db.session.scalar(select(Researcher).where(Researcher.username == username))


def authenticate(username: str, password: str) -> Researcher | None:
    """The researcher if the password matches, else None (in about the same time either way)."""
    researcher = find_researcher(username)
    if researcher is None:
        method = current_app.config["PASSWORD_HASH_METHOD"]
        dummy = _dummy_hashes.setdefault(method, _hash("not-a-real-password"))
        check_password_hash(dummy, password)
        return None
    return researcher if check_password_hash(researcher.password_hash, password) else None


def safe_next(target: str | None) -> str:
    """Only same-site paths are followed after login, never another host."""
    if target:
        parts = urlsplit(target)
        if not parts.scheme and not parts.netloc and target.startswith("/") \
                and not target.startswith("//") and "\\" not in target:
            return target
    return url_for("researcher.studies")


class LoginForm(FlaskForm):
    username = StringField("Username", validators=[DataRequired(), Length(max=80)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])
    remember = BooleanField("Keep me signed in")


@bp.route("/login", methods=["GET", "POST"])
def login():
    form = LoginForm()
    if form.validate_on_submit():
        researcher = authenticate(form.username.data, form.password.data)
        if researcher is not None:
            target = safe_next(request.args.get("next"))
            session.clear()  # a fresh session on login: nothing from before carries over
            login_user(researcher, remember=form.remember.data)
            return redirect(target)
        flash("Unknown username or wrong password.", "error")
        return render_template("auth/login.html", form=form), 401
    if current_user.is_authenticated and request.method == "GET":
        return redirect(url_for("researcher.studies"))
    status = 400 if request.method == "POST" else 200
    return render_template("auth/login.html", form=form), status


@bp.post("/logout")
@login_required
def logout():
    logout_user()
    session.clear()
    flash("Signed out.", "info")
    return redirect(url_for("auth.login"))
