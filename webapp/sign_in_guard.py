"""What stands before every password attempt (sign-in, password change): rate limits by
address and by account, and one password hash at a time per server.

Signing in is the one place where anyone can make the server run a deliberately slow hash, in
the workers that also serve participants, so an attempt is refused (429) before any hash once
its address or account is over its limit, and refused (503) while another password hash runs
on this machine.  Both answers are a small page: no form, no flash, no session write.
"""
import fcntl
import math
import os
import time
from pathlib import Path

from flask import Flask, current_app, g, make_response, render_template, request
from flask_limiter.util import get_remote_address
from flask_login import current_user
from limits import parse as parse_limit

from webapp.extensions import limiter

# In the instance folder: every worker process of one server sees the same file.
HASH_LOCK_FILE = "password-hash.lock"
BUSY_RETRY_AFTER_S = 1


def init_app(app: Flask) -> None:
    # Registered before CSRFProtect's hook: a refused attempt costs no token check, form or
    # page either, so a flood that is refused takes as little as possible from participants.
    app.before_request(_guard_password_attempts)
    app.teardown_request(_release_hashing_slot)


def note_failure(username: str) -> None:
    """Count a wrong password against the account (successful sign-ins never count)."""
    if limiter.enabled:
        limiter.limiter.hit(parse_limit(current_app.config["LOGIN_FAILURES_PER_ACCOUNT"]),
                            "login-account", username)


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
    account = account_of() if request.method == "POST" and account_of else ""
    if not account:  # not a password attempt, or one the form or login_required refuses
        return None
    wait_s = _seconds_until_allowed(account)
    if wait_s:
        wait = f"{wait_s} seconds" if wait_s <= 90 else f"{math.ceil(wait_s / 60)} minutes"
        return _retry_later(429, wait_s, f"Too many sign-in attempts. Please try again in {wait}.")
    g.hashing_slot = _take_hashing_slot()
    if g.hashing_slot is None:
        return _retry_later(503, BUSY_RETRY_AFTER_S, "Another sign-in is being checked right "
                                                     "now; please try again in a moment.")
    return None


def _release_hashing_slot(_error=None) -> None:
    descriptor = g.pop("hashing_slot", None)
    if descriptor is not None:
        os.close(descriptor)  # releases the flock


def _retry_later(status: int, retry_after_s: int, message: str):
    """A small page: no form, no flash, no session write (floods are answered with these)."""
    response = make_response(render_template("auth/retry_later.html", message=message), status)
    response.headers["Retry-After"] = str(retry_after_s)
    return response


def _seconds_until_allowed(username: str) -> int:
    """0 if the client's address and ``username`` may try a password now, else the seconds to
    wait.  Counts the attempt against the address (failures count against the account later,
    in note_failure); a username the login form would refuse is not looked up."""
    if not limiter.enabled:
        return 0
    config, windows = current_app.config, limiter.limiter
    account = (parse_limit(config["LOGIN_FAILURES_PER_ACCOUNT"]), "login-account", username)
    address = (parse_limit(config["LOGIN_ATTEMPTS_PER_ADDRESS"]), "login-address",
               get_remote_address())
    checks = [(windows.hit, address)]
    if 0 < len(username) <= 80:
        checks.insert(0, (windows.test, account))
    for check, limit in checks:
        if not check(*limit):
            reset_at = windows.get_window_stats(*limit).reset_time
            return max(1, math.ceil(reset_at - time.time()))
    return 0
