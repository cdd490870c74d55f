"""The app's secret key: it signs researcher cookies and derives completion codes and media keys,
so a guessable one gives away every study.  Outside development and tests the app refuses to
start without a strong key; development keeps one generated key in the instance folder.
"""
import os
import secrets
from pathlib import Path

from flask import Flask

KEY_FILE = "secret_key"
MIN_LENGTH = 32
# Keys that have been public (shipped defaults, documentation examples): never accepted.
KNOWN_KEYS = frozenset({"dev-only-change-me", "dev", "secret", "changeme", "change-me",
                        "test-secret", "reliability-bench"})


class UnsafeSecretKey(RuntimeError):
    """Refusing to serve with a missing, public or short secret key."""


def configure_secret_key(app: Flask) -> None:
    """Set ``SECRET_KEY`` from the configuration, else from ``instance/secret_key``; in
    development (``DEVELOPMENT`` or debug) a missing key is generated and stored there.

    Raises
    ------
    UnsafeSecretKey
        Outside development and tests, for a missing key, a known public key or one shorter
        than MIN_LENGTH characters.
    """
    key_file = Path(app.instance_path) / KEY_FILE
    key = app.config.get("SECRET_KEY") or _read(key_file)
    relaxed = app.testing or app.debug or app.config.get("DEVELOPMENT")
    if not key and relaxed:  # tests get a throwaway key; development keeps one on disk
        key = secrets.token_hex(32) if app.testing else _create(key_file)
    if not relaxed:
        problem = ("is not set" if not key else "is a publicly known key" if key in KNOWN_KEYS
                   else f"is shorter than {MIN_LENGTH} characters" if len(key) < MIN_LENGTH
                   else None)
        if problem:
            raise UnsafeSecretKey(
                f"CHRONOSCOPE_SECRET_KEY {problem}: anyone could forge researcher sessions and "
                f"compute completion codes. Set it to a random value, e.g. "
                f"CHRONOSCOPE_SECRET_KEY=$(python -c 'import secrets; print(secrets.token_hex(32))'), "
                f"or put one in {key_file} (mode 600).")
    app.config["SECRET_KEY"] = key


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except FileNotFoundError:
        return None


def _create(path: Path) -> str:
    """A new random key in ``path``, readable by its owner only (kept if another process won)."""
    key = secrets.token_hex(32)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read(path) or key
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key + "\n")
    return key
