"""Researcher accounts: passwords, login and logout, and the app's security settings.

Participants never log in (their unguessable session token is their credential); every
researcher page and export sits behind Flask-Login, and every form behind Flask-WTF's CSRF.

Signing in is the one place where anyone can make the server run a deliberately slow hash, in
the workers that also serve participants, so an attempt is (1) refused before any hash once
its address or account is over its rate limit, (2) refused when another password hash is
running on this machine (one at a time, across worker processes; both in
:mod:`webapp.sign_in_guard`), and (3) hashed at low priority.  A sign-in lives as long as the researcher's ``auth_epoch``: logging out or changing
the password raises it, and every session and remember cookie issued before is refused.
"""
import re
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Flask,
    current_app,
    flash,
    has_request_context,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask.sessions import SecureCookieSessionInterface
from flask_login import current_user, login_required, login_user, logout_user
from flask_wtf import FlaskForm
from sqlalchemy import select
from werkzeug.security import check_password_hash, generate_password_hash
from wtforms import BooleanField, PasswordField, StringField, ValidationError
from wtforms.validators import EqualTo, InputRequired, Length

from webapp import sign_in_guard
from webapp.extensions import csrf, db, login_manager
from webapp.models import Researcher
from webapp.priority import low_priority

bp = Blueprint("auth", __name__, url_prefix="/auth")

MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 1024
_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{1,79}$")


def init_security(app: Flask) -> None:
    """Bind Flask-Login and CSRF, exempt the token-authenticated participant API, harden cookies."""
    login_manager.init_app(app)
    login_manager.login_view = "auth.login"
    login_manager.session_protection = "strong"
    # Before CSRFProtect's hook: a refused attempt costs no token check, form or page either,
    # so a flood that is refused takes as little as possible from participants' requests.
    sign_in_guard.init_app(app)
    # Tests post forms without tokens unless they switch CSRF on (tests/webapp/test_csrf.py).
    app.config.setdefault("WTF_CSRF_ENABLED", not app.testing)
    csrf.init_app(app)
    api = app.blueprints.get("api")
    if api is not None and api.url_prefix is not None:
        # The participant API authenticates by the token in its URL, never by a cookie.
        csrf.exempt(api)
        app.session_interface = ResearcherCookieSessions(api.url_prefix.split("<", 1)[0])
    relaxed = app.debug or app.testing or app.config["DEVELOPMENT"]
    for key in ("SESSION_COOKIE_SECURE", "REMEMBER_COOKIE_SECURE"):
        if app.config.get(key) is None:
            app.config[key] = not relaxed


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


@login_manager.user_loader
def _load_researcher(user_id: str) -> Researcher | None:
    """The researcher of a session or remember cookie, unless their epoch has moved on since."""
    researcher_id, _, epoch = user_id.partition(":")
    if not (researcher_id.isdigit() and epoch.isdigit()):
        return None  # malformed, or signed before epochs existed
    researcher = db.session.get(Researcher, int(researcher_id))
    return researcher if researcher is not None and researcher.auth_epoch == int(epoch) else None


def check_password_policy(password: str, username: str) -> None:
    """The one password policy, for new accounts and password changes alike.

    The login form accepts every password this accepts (it asks only for some input of at
    most MAX_PASSWORD_LENGTH characters, spaces included).

    Raises
    ------
    ValueError
        For fewer than MIN_PASSWORD_LENGTH or more than MAX_PASSWORD_LENGTH characters, only
        whitespace, or the username itself (ignoring case and surrounding spaces).
    """
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValueError(f"password must be at least {MIN_PASSWORD_LENGTH} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise ValueError(f"password must be at most {MAX_PASSWORD_LENGTH} characters")
    if password.isspace():
        raise ValueError("password must not be only spaces")
    if password.strip().casefold() == username.strip().casefold():
        raise ValueError("password must not be the username")


def create_researcher(username: str, password: str, is_admin: bool = False) -> Researcher:
    """Store a new researcher with a salted hash of ``password``.

    Raises
    ------
    ValueError
        For a malformed or taken username, or a password the policy refuses.
    """
    if not _USERNAME.match(username or ""):
        raise ValueError("username must be 2-80 letters, digits, '.', '_', '@' or '-'")
    check_password_policy(password, username)
    if find_researcher(username) is not None:
        raise ValueError(f"researcher {username!r} already exists")
    researcher = Researcher(username=username, password_hash=_hash(password), is_admin=is_admin)
    db.session.add(researcher)
    db.session.commit()
    return researcher


def set_password(researcher: Researcher, password: str) -> None:
    """Give ``researcher`` a new password and sign them out everywhere.

    Raises
    ------
    ValueError
        For a password the policy refuses.
    """
    check_password_policy(password, researcher.username)
    researcher.password_hash = _hash(password)
    end_sessions(researcher)


def change_password(researcher: Researcher, current: str, new: str) -> bool:
    """Set ``new`` if ``current`` is the researcher's password; False (nothing changed) if not."""
    check_password_policy(new, researcher.username)  # before any hash is spent
    if not _matches(researcher.password_hash, current):
        return False
    set_password(researcher, new)
    return True


def end_sessions(researcher: Researcher) -> None:
    """Make every session and remember cookie issued to ``researcher`` so far worthless."""
    researcher.auth_epoch = Researcher.auth_epoch + 1  # in SQL: two browsers at once both count
    db.session.commit()


def find_researcher(username: str) -> Researcher | None:
    return db.session.scalar(select(Researcher).where(Researcher.username == username))


def authenticate(username: str, password: str) -> Researcher | None:
    """The researcher if the password matches, else None.

    Exactly one hash either way: for an unknown username the attempt's password is hashed and
    thrown away, so a miss costs what a wrong password costs and tells no one which usernames
    exist.
    """
    researcher = find_researcher(username)
    if researcher is None:
        _hash(password)
        return None
    return researcher if _matches(researcher.password_hash, password) else None


def _hash(password: str) -> str:
    return _slowly(generate_password_hash, password, current_app.config["PASSWORD_HASH_METHOD"])


def _matches(stored_hash: str, password: str) -> bool:
    return _slowly(check_password_hash, stored_hash, password)


def _slowly(function, *args):
    """Run a password hash function at low priority in a request (webapp.priority), so that
    participants' requests in the other workers go first; directly elsewhere (the CLI)."""
    return low_priority(function)(*args) if has_request_context() else function(*args)


def safe_next(target: str | None) -> str:
    """Only same-site paths are followed after login, never another host."""
    if target:
        parts = urlsplit(target)
        if not parts.scheme and not parts.netloc and target.startswith("/") \
                and not target.startswith("//") and "\\" not in target:
            return target
    return url_for("researcher.studies")


class LoginForm(FlaskForm):
    username = StringField("Username", validators=[InputRequired(), Length(max=80)])
    # InputRequired, not DataRequired: a password of spaces is a password (see the policy).
    password = PasswordField("Password",
                             validators=[InputRequired(), Length(max=MAX_PASSWORD_LENGTH)])
    remember = BooleanField("Keep me signed in")


class PasswordForm(FlaskForm):
    current_password = PasswordField(
        "Current password", validators=[InputRequired(), Length(max=MAX_PASSWORD_LENGTH)])
    new_password = PasswordField("New password", validators=[InputRequired()])
    confirm_password = PasswordField("New password again", validators=[
        InputRequired(), EqualTo("new_password", message="The new passwords do not match.")])

    def validate_new_password(self, field):
        try:
            check_password_policy(field.data, current_user.username)
        except ValueError as error:
            raise ValidationError(str(error)) from error


@bp.route("/login", methods=["GET", "POST"])
def login():
    form = LoginForm()
    if form.validate_on_submit():
        return _sign_in(form)
    if current_user.is_authenticated and request.method == "GET":
        return redirect(url_for("researcher.studies"))
    status = 400 if request.method == "POST" else 200
    return render_template("auth/login.html", form=form), status


def _sign_in(form: LoginForm):
    username = form.username.data
    # The machine's hashing slot is held for this request (see _guard_password_attempts).
    researcher = authenticate(username, form.password.data)
    if researcher is None:
        sign_in_guard.note_failure(username)
        flash("Unknown username or wrong password.", "error")
        return render_template("auth/login.html", form=form), 401
    target = safe_next(request.args.get("next"))
    session.clear()  # a fresh session on login: nothing from before carries over
    login_user(researcher, remember=form.remember.data)
    response = redirect(target)
    sign_in_guard.remember_browser(response, username)
    return response


@bp.route("/password", methods=["GET", "POST"])
@login_required
def password():
    form = PasswordForm()
    if not form.validate_on_submit():
        status = 400 if request.method == "POST" else 200
        return render_template("auth/password.html", form=form), status
    researcher = current_user._get_current_object()
    changed = change_password(researcher, form.current_password.data, form.new_password.data)
    if not changed:
        sign_in_guard.note_failure(researcher.username)
        form.current_password.errors.append("The current password is wrong.")
        return render_template("auth/password.html", form=form), 401
    # Every other browser is signed out; this one goes on under the new epoch.
    login_user(researcher, remember=current_app.config.get(
        "REMEMBER_COOKIE_NAME", "remember_token") in request.cookies)
    flash("Password changed. Every other browser signed in as you has been signed out.", "info")
    return redirect(url_for("researcher.studies"), 303)


@bp.post("/logout")
@login_required
def logout():
    end_sessions(current_user._get_current_object())  # the cookies of every browser, not just these
    logout_user()
    session.clear()
    flash("Signed out.", "info")
    return redirect(url_for("auth.login"))
