"""Engine set-up that depends on the backend: SQLite is tuned for many concurrent writers."""
from flask import Flask
from sqlalchemy import event
from sqlalchemy.engine import Engine

from webapp.extensions import db


def configure_engine_events(app: Flask) -> None:
    with app.app_context():
        engine = db.engine
    if engine.dialect.name == "sqlite":
        _tune_sqlite(engine, app.config["SQLITE_BUSY_TIMEOUT_MS"])


def _tune_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # WAL lets readers (exports) run beside one writer; NORMAL is durable in WAL mode
        # except for the last transactions on power loss, never corrupting.
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()
