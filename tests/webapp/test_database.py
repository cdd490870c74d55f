"""Write transactions and the handling of a busy database."""
import os
import sqlite3
import stat
import threading

import pytest
from flask import Blueprint, jsonify
from sqlalchemy import func, insert, select

from webapp import create_app
from webapp.database import write_transaction
from webapp.extensions import db
from webapp.models import Study


def _add_experiment(slug, fail=False):
    with db.engine.connect() as connection, write_transaction(connection):
        connection.execute(insert(Study.__table__).values(
            slug=slug, title=slug, design="arrow-of-time", stimulus_set="s"))
        if fail:
            raise RuntimeError


def test_write_transaction_commits_and_rolls_back(any_db_app):
    with any_db_app.app_context():
        _add_experiment("kept")
        with pytest.raises(RuntimeError):
            _add_experiment("lost", fail=True)
        assert [e.slug for e in db.session.query(Study)] == ["kept"]


def test_write_transaction_ends_the_read_transaction_first(any_db_app):
    """A participant call reads, then writes on the same connection; after the write the
    connection is back to plain (deferred) reads."""
    with any_db_app.app_context(), db.engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(Study)) == 0
        with write_transaction(connection):
            connection.execute(insert(Study.__table__).values(
                slug="read-then-write", title="x", design="d", stimulus_set="s"))
        assert connection.scalar(select(func.count()).select_from(Study)) == 1
        assert connection.get_execution_options().get("sqlite_begin", "DEFERRED") == "DEFERRED"


def test_sqlite_writes_begin_immediate(app, tmp_path):
    """A writer holding the lock makes our write wait, then fail with a retryable error."""
    app.config["SQLITE_BUSY_TIMEOUT_MS"] = 5000
    locker = sqlite3.connect(tmp_path / "test.db", isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN IMMEDIATE")
    released = threading.Timer(0.3, locker.rollback)
    released.start()
    with app.app_context():
        _add_experiment("after-wait")  # waits for the lock instead of failing at once
        assert db.session.query(Study).count() == 1
    released.join()
    locker.close()


def test_locked_database_answers_503_with_retry_after(tmp_path):
    from tests.factories import make_app

    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'busy.db'}", SQLITE_BUSY_TIMEOUT_MS=50)
    probe = Blueprint("probe", __name__)

    @probe.post("/api/probe")
    def write():
        _add_experiment("blocked")
        return jsonify(ok=True)

    app.register_blueprint(probe)
    locker = sqlite3.connect(tmp_path / "busy.db", isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    try:
        response = app.test_client().post("/api/probe")
    finally:
        locker.rollback()
        locker.close()
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    assert response.get_json()["error"] == "busy"
    assert app.test_client().post("/api/probe").status_code == 200


def test_tests_read_then_write_beside_a_live_writer(app, tmp_path):
    """The CI flake: a browser test read a row, a live page's request wrote, and the test's
    write then failed at once with "database is locked" (a DEFERRED read cannot upgrade past a
    newer commit).  Tests write through ``tests.live_site.writing``, which begins IMMEDIATE."""
    from sqlalchemy.exc import OperationalError

    from tests.live_site import writing

    def live_request_writes():
        other = sqlite3.connect(tmp_path / "test.db", isolation_level=None, timeout=5)
        other.execute("CREATE TABLE IF NOT EXISTS live (n)")
        other.execute("INSERT INTO live VALUES (1)")
        other.close()

    live_request_writes()
    with app.app_context():
        _add_experiment("row")
        db.session.scalar(select(Study).where(Study.slug == "row"))  # a plain read
        live_request_writes()
        with pytest.raises(OperationalError, match="locked"):
            db.session.execute(db.update(Study).values(title="lost"))
        db.session.rollback()
    with writing(app) as session:
        study = session.scalar(select(Study).where(Study.slug == "row"))
        writer = threading.Thread(target=live_request_writes)  # waits for our commit
        writer.start()
        study.title = "kept"
    writer.join()
    with app.app_context():
        assert db.session.scalar(select(Study.title).where(Study.slug == "row")) == "kept"
        assert db.session.scalar(db.text("SELECT count(*) FROM live")) == 3


@pytest.fixture
def default_umask():
    """The usual umask (022: files world-readable unless made otherwise)."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_instance_folder_and_database_files_are_private(tmp_path, default_umask):
    """They hold password hashes, live session tokens and the secret key."""
    instance, database = tmp_path / "instance", tmp_path / "instance" / "chronoscope.db"
    app = create_app({"TESTING": True, "SECRET_KEY": "k", "INSTANCE_PATH": str(instance)})
    with app.app_context():
        db.create_all()
        _add_experiment("one")  # a write: the WAL, the shared memory and the writer lock
        files = [database, *(database.with_name(f"chronoscope.db{side}")
                             for side in ("-wal", "-shm", "-writer.lock"))]
        assert [(path.name, _mode(path)) for path in files] == \
            [(path.name, 0o600) for path in files]
        db.engine.dispose()
    assert _mode(instance) == 0o700


def test_existing_world_readable_files_are_made_private(tmp_path, default_umask):
    instance, database = tmp_path / "instance", tmp_path / "old.db"
    instance.mkdir(mode=0o755)
    sqlite3.connect(database).close()
    database.chmod(0o644)
    app = create_app({"TESTING": True, "SECRET_KEY": "k", "INSTANCE_PATH": str(instance),
                      "DATABASE_URL": f"sqlite:///{database}"})
    assert (_mode(instance), _mode(database)) == (0o700, 0o600)
    with app.app_context():
        db.engine.dispose()
