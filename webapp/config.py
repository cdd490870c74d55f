"""Configuration defaults; overridden by the instance folder, CHRONOSCOPE_* variables and tests."""


class Defaults:
    SECRET_KEY = "dev-only-change-me"
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
