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
    # Seed of the built-in synthetic stimulus set.
    SYNTHETIC_SEED = 20231
