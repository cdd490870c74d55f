"""What stands before every password attempt (sign-in, password change): rate limits that
hold the attacker and not the account's owner, and one password hash at a time per server.

Signing in is the one place where anyone can make the server run a deliberately slow hash, in
the workers that also serve participants, so an attempt is refused (429) before any hash once
its address or account is over its limit, and refused (503) while another password hash runs
on this machine.  Both answers are a small page: no form, no flash, no session write.

Limits (webapp.config): every attempt counts against its address; a wrong password against the
address and account together and against the account.  The account's own count would let
anyone lock its owner out, so it applies only to browsers the account never signed in on: a
successful sign-in leaves a signed cookie naming the account and that browser, whose wrong
passwords count against that browser alone.  Nobody without the password can obtain one.
"""
import fcntl
import math
import os
import secrets
from pathlib import Path

from flask import Flask, current_app, g, make_response, render_template, request
from flask_login import current_user
from itsdangerous import BadSignature, URLSafeTimedSerializer

from webapp import rate_limits

# In the instance folder: every worker process of one server sees the same file.
HASH_LOCK_FILE = "password-hash.lock"
BUSY_RETRY_AFTER_S = 1
BROWSER_COOKIE = "chronoscope_signed_in_before"
BROWSER_COOKIE_AGE_S = 400 * 86400  # browsers cap a cookie's life at 400 days


def init_app(app: Flask) -> None:
    # Registered before CSRFProtect's hook: a refused attempt costs no token check, form or
    # page either, so a flood that is refused takes as little as possible from participants.
    app.before_request(_guard_password_attempts)
    app.teardown_request(_release_hashing_slot)


def note_failure(username: str) -> None:
    """Count a wrong password (successful sign-ins never count)."""
    for limit in _failure_limits(username):
        rate_limits.add(*limit)


def remember_browser(response, username: str) -> None:
    """After a successful sign-in: mark this browser as one ``username`` signs in on."""
    value = _browser_signer().dumps({"account": username, "browser": secrets.token_hex(16)})
    response.set_cookie(BROWSER_COOKIE, value, max_age=BROWSER_COOKIE_AGE_S, path="/auth/",
                        secure=bool(current_app.config["SESSION_COOKIE_SECURE"]),
                        httponly=True, samesite="Lax")


def _browser_signer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt="sign-in-browser")


def _known_browser(username: str) -> str | None:
    """This browser's id if ``username`` signed in on it before, else None."""
    try:
        mark = _browser_signer().loads(request.cookies.get(BROWSER_COOKIE, ""),
                                       max_age=BROWSER_COOKIE_AGE_S)
    except BadSignature:
        return None
    return mark.get("browser") if isinstance(mark, dict) and mark.get("account") == username \
        else None


def _failure_limits(username: str) -> list[tuple[str, ...]]:
    """The limits a wrong password for ``username`` from this request counts against."""
    config, client = current_app.config, rate_limits.client()
    browser = _known_browser(username)
    if browser:
        return [("LOGIN_FAILURES_PER_BROWSER", config["LOGIN_FAILURES_PER_BROWSER"], browser)]
    return [(name, config[name], *scope) for name, scope in (
        ("LOGIN_FAILURES_PER_ADDRESS_AND_ACCOUNT", (client, username)),
        ("LOGIN_FAILURES_PER_ACCOUNT", (username,)))]


def _take_hashing_slot() -> int | None:
    """This machine's one password-hashing slot (a descriptor to close when done), or None
    while another process or request holds it.

    One hash at a time across all worker processes caps what a flood of sign-ins from any
    number of addresses can take from participants at one low-priority core.  The flock does
    not wait: a worker that finds it taken answers at once instead of queueing behind it.
    """
    descriptor = os.open(Path(current_app.instance_path) / HASH_LOCK_FILE,
                         os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


# The endpoints that check a password, and how each names the account it is tried against.
_ACCOUNT_OF = {
    "auth.login": lambda: request.form.get("username", ""),
    "auth.password": lambda: current_user.username if current_user.is_authenticated else "",
}


def _guard_password_attempts():
    """Before any other work is done on a password attempt: 429 when it is over a rate limit,
    503 while another password hash runs on this machine, else hold the hashing slot for the
    rest of the request (released in _release_hashing_slot)."""
    account_of = _ACCOUNT_OF.get(request.endpoint)
    wait_s = _seconds_until_allowed(account_of) if request.method == "POST" and account_of \
        else None
    if wait_s is None:  # not a password attempt, or one the form or login_required refuses
        return None
    if wait_s:
        wait = f"{wait_s} seconds" if wait_s <= 90 else f"{math.ceil(wait_s / 60)} minutes"
        return _retry_later(429, wait_s, f"Too many sign-in attempts. Please try again in {wait}.")
    g.hashing_slot = _take_hashing_slot()
    if g.hashing_slot is None:
        return _retry_later(503, BUSY_RETRY_AFTER_S, "Another sign-in is being checked right "
                                                     "now; please try again in a moment.")
    return None


def _seconds_until_allowed(account_of) -> int | None:
    """Count the attempt against its address, then check the limits on wrong passwords for
    the account it names: 0, the seconds to wait, or None where it names no account."""
    # The address's count is written first, before anything reads through this request's ORM
    # session: on SQLite a read transaction that began before another connection's write
    # cannot write after it (the password page's own write would then fail).
    config = current_app.config
    wait_s = rate_limits.hit("LOGIN_ATTEMPTS_PER_ADDRESS", config["LOGIN_ATTEMPTS_PER_ADDRESS"],
                             rate_limits.client())
    account = account_of()
    if not account:
        return None
    if len(account) > 80:  # the login form refuses it: not looked up
        return wait_s
    return max([wait_s, *(rate_limits.seconds_to_wait(*limit)
                          for limit in _failure_limits(account))])


def _release_hashing_slot(_error=None) -> None:
    descriptor = g.pop("hashing_slot", None)
    if descriptor is not None:
        os.close(descriptor)  # releases the flock


def _retry_later(status: int, retry_after_s: int, message: str):
    """A small page: no form, no flash, no session write (floods are answered with these)."""
    response = make_response(render_template("auth/retry_later.html", message=message), status)
    response.headers["Retry-After"] = str(retry_after_s)
    return response
