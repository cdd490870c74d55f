"""Engine set-up that depends on the backend, and the write transaction every writer uses.

SQLite serves many concurrent writers here: WAL lets long reads (exports) run beside one
writer, and writes take the write lock at BEGIN (``BEGIN IMMEDIATE``), so a busy database makes
the writer wait up to the busy timeout and then fail cleanly with a retryable error, instead of
failing half-way when a read transaction tries to upgrade to a write.
"""
from contextlib import contextmanager

from flask import Flask
from sqlalchemy import event
from sqlalchemy.engine import Engine

from webapp.extensions import db

_BEGIN_OPTION = "sqlite_begin"


def configure_engine_events(app: Flask) -> None:
    with app.app_context():
        engine = db.engine
    if engine.dialect.name == "sqlite":
        _tune_sqlite(engine, app.config["SQLITE_BUSY_TIMEOUT_MS"])


def _tune_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # Hand transaction control to SQLAlchemy so that BEGIN can be IMMEDIATE for writes.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable in WAL mode except for the last commits on power loss; never corrupts.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection):
        mode = connection.get_execution_options().get(_BEGIN_OPTION, "DEFERRED")
        connection.exec_driver_sql(f"BEGIN {mode}")


@contextmanager
def write_transaction():
    """A short write transaction on ``db.session``: committed on success, rolled back on error.

    On SQLite it begins IMMEDIATE (see the module docstring); elsewhere it is a plain one.
    """
    session = db.session()
    if session.in_transaction():
        session.rollback()  # end the implicit read transaction of this request
    session.connection(execution_options={_BEGIN_OPTION: "IMMEDIATE"})
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
