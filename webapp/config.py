"""Configuration defaults; overridden by the instance folder, CHRONOSCOPE_* variables and tests."""
from flask import Flask

_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off", "")


class Defaults:
    # None: read from instance/secret_key, or refused outside development (webapp.secret_key).
    SECRET_KEY: str | None = None
    # Development mode (`make run` sets CHRONOSCOPE_DEVELOPMENT=true): a generated secret key,
    # and the simulated participant on any entry link.
    DEVELOPMENT = False
    # Rate limits (Flask-Limiter).  memory:// counts per worker process, so with N gunicorn
    # workers a limit allows up to N times its count; use redis:// for one shared count.
    RATELIMIT_STORAGE_URI = "memory://"
    RATELIMIT_HEADERS_ENABLED = True
    RATELIMIT_ENABLED = True  # explicit: the limiter is shared by every app of the process
    # New participant sessions: per client address (generous for a lab or campus behind one
    # address), and per study (a launch on Prolific brings bursts; a script inventing ids is
    # held to this rate).
    NEW_SESSIONS_PER_ADDRESS = "60 per hour"
    NEW_SESSIONS_PER_STUDY = "300 per minute"
    # Known ids entered without their resume key (another browser, or someone probing for
    # ids); a participant returning in their own browser is never counted.
    RETURNING_ENTRIES_PER_ADDRESS = "10 per hour"
    RETURNING_ENTRIES_PER_STUDY = "60 per hour"
    # Sign-in attempts: every attempt counts against its address, only failed ones against the
    # account (so a researcher who signs in often is never locked out by their own sign-ins).
    LOGIN_ATTEMPTS_PER_ADDRESS = "10 per minute"
    LOGIN_FAILURES_PER_ACCOUNT = "20 per hour"
    # Reverse proxies in front of the app: their X-Forwarded-For / -Proto are trusted (ProxyFix),
    # so rate limits see participants' addresses instead of the proxy's.
    PROXY_HOPS = 0
    # Filled in by create_app from DATABASE_URL or the instance folder.
    DATABASE_URL: str | None = None
    # Relative paths are resolved against the instance folder.
    STIMULUS_ROOT = "stimuli"
    SQLALCHEMY_ENGINE_OPTIONS: dict = {}
    SQLITE_BUSY_TIMEOUT_MS = 5000
    MAX_CONTENT_LENGTH = 256 * 1024
    SESSION_COOKIE_HTTPONLY = True
    SESSION_COOKIE_SAMESITE = "Lax"
    # None = automatic: secure cookies everywhere except under debug or testing (webapp.auth).
    SESSION_COOKIE_SECURE: bool | None = None
    REMEMBER_COOKIE_SECURE: bool | None = None
    REMEMBER_COOKIE_HTTPONLY = True
    REMEMBER_COOKIE_SAMESITE = "Lax"
    # werkzeug method for researcher passwords (scrypt: memory-hard, salted).
    PASSWORD_HASH_METHOD = "scrypt"
    # Base of participant links printed by the CLI (the dashboard uses the request's host).
    PUBLIC_URL = "http://127.0.0.1:5000"
    # A started, unfinished session with no heartbeat for this long shows as abandoned.
    ABANDONED_AFTER_MINUTES = 15
    # Seed of the built-in synthetic stimulus set.
    SYNTHETIC_SEED = 20231


def read_switches(app: Flask, names=("DEVELOPMENT", "DEBUG", "TESTING")) -> None:
    """Read on/off settings strictly: an environment variable arrives as text, and "False" or
    "no" must never switch development mode on.

    Raises
    ------
    ValueError
        For a value that is neither a boolean nor one of true/false, 1/0, yes/no, on/off.
    """
    for name in names:
        value = app.config.get(name)
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            value = value.strip().lower() in _TRUE
        elif isinstance(value, int) and value in (0, 1):  # JSON-parsed 0 / 1, and booleans
            value = bool(value)
        else:
            raise ValueError(f"CHRONOSCOPE_{name} must be true or false, got {value!r}")
        app.config[name] = value
