"""Configuration defaults; overridden by the instance folder, CHRONOSCOPE_* variables and tests."""
from flask import Flask

_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off", "")


class Defaults:
    # None: read from instance/secret_key, or refused outside development (webapp.secret_key).
    SECRET_KEY: str | None = None
    # Development mode (`make run` sets CHRONOSCOPE_DEVELOPMENT=true): a generated secret key,
    # and the simulated participant on any entry link.
    DEVELOPMENT = False
    # Rate limits (webapp.rate_limits): counted once for every worker and server, in Redis
    # (redis://127.0.0.1:6379/0, the production setting) or, when unset, in the database.
    RATELIMIT_STORAGE_URI: str | None = None
    RATELIMIT_ENABLED = True
    # New participant sessions (returning participants are never limited); an address is an
    # IPv4 address or an IPv6 /64.  Per address and study: one script cannot take a study's
    # places, but neither can more than 3 people an hour behind one NAT (a campus, a lab) start
    # it; raise it for such a study.  Per address over all studies, and per study from all
    # addresses (a Prolific launch brings bursts; a script with many addresses is held to it).
    NEW_SESSIONS_PER_ADDRESS_PER_STUDY = "3 per hour"
    NEW_SESSIONS_PER_ADDRESS = "60 per hour"
    NEW_SESSIONS_PER_STUDY = "100 per minute"
    # Known ids entered without their resume key (another browser, or someone probing for
    # ids); a participant returning in their own browser is never counted.
    RETURNING_ENTRIES_PER_ADDRESS = "10 per hour"
    RETURNING_ENTRIES_PER_STUDY = "60 per hour"
    # Sign-in: every attempt counts against its address; failures against the address and
    # account together, and against the account from browsers it never signed in on.  A
    # browser it signed in on (a signed cookie) has its own count, so nobody who lacks the
    # password can lock the owner out of a browser they use (webapp.sign_in_guard).
    LOGIN_ATTEMPTS_PER_ADDRESS = "10 per minute"
    LOGIN_FAILURES_PER_ADDRESS_AND_ACCOUNT = "10 per hour"
    LOGIN_FAILURES_PER_ACCOUNT = "50 per hour"
    LOGIN_FAILURES_PER_BROWSER = "10 per hour"
    # Reverse proxies in front of the app: the last PROXY_HOPS entries of X-Forwarded-For /
    # -Proto / -Host are trusted (ProxyFix), so rate limits see participants' addresses
    # instead of the proxy's; with 0 those headers are ignored (a client could write them).
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
