"""Storage errors that clear by themselves answer 503 + Retry-After, and lose nothing.

A participant's browser retries a 503 with the same client UUID, so a transient failure
must leave the stored rows as they were and the retry must store the trial exactly once.
"""
import psycopg
import pytest
from sqlalchemy import event, select
from sqlalchemy.exc import OperationalError

from tests.factories import Factory
from tests.webapp.test_api import answer, schedule_of, start
from webapp.errors import is_retryable
from webapp.extensions import db
from webapp.models import Session, Trial

# The servers' own wording (SQLite's sqlite3_errstr, PostgreSQL's postmaster and backends).
TRANSIENT = [
    "database or disk is full",
    'connection failed: connection to server at "127.0.0.1", port 5432 failed: FATAL:  '
    "the database system is shutting down",
    'connection failed: connection to server at "127.0.0.1", port 5432 failed: FATAL:  '
    "the database system is starting up",
    "FATAL:  the database system is not yet accepting connections",
    "FATAL:  the database system is in recovery mode",
    "FATAL:  sorry, too many clients already",
    'could not extend file "base/16384/16397": No space left on device',
]
CALLBACK = {"presentedFrames": 1, "mediaTime": 0.0125, "presentationTime": 1234.5678,
            "expectedDisplayTime": 1250.9012}
PERMANENT = ["no such table: trial", 'relation "trial" does not exist',
             'password authentication failed for user "postgres"']


@pytest.mark.parametrize("message", TRANSIENT)
def test_transient_storage_errors_are_retryable(message):
    assert is_retryable(OperationalError("INSERT", {}, Exception(message)))


@pytest.mark.parametrize("message", PERMANENT)
def test_lasting_storage_errors_are_not(message):
    assert not is_retryable(OperationalError("INSERT", {}, Exception(message)))


def _study(app):
    Factory(app).aot_study()


def _stored(app) -> tuple[list, list]:
    """Every column of every trial and session row, to compare before and after."""
    with app.app_context():
        trials = [tuple(row) for row in db.session.execute(select(Trial.__table__))]
        sessions = [tuple(row) for row in db.session.execute(select(Session.__table__))]
    return trials, sessions


def _assert_retry_later(response):
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    if response.mimetype == "application/json":
        assert response.get_json()["error"] == "busy"
    else:  # a page a person opened: a page that says to reload, not raw JSON
        assert response.mimetype == "text/html" and b"reload this page" in response.data


def test_a_full_sqlite_database_answers_503_and_keeps_what_it_stored(app):
    """The real error: the database may not grow by a page, so an insert fills it."""
    _study(app)
    client = app.test_client()
    api = start(client)
    with app.app_context():
        engine = db.engine
    with engine.connect() as connection:
        pages = connection.exec_driver_sql("PRAGMA page_count").scalar()

    def cap(dbapi_connection, _record):  # per connection: max_page_count is not stored
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    event.listen(engine, "connect", cap)
    engine.dispose()
    full = None
    for trial in [t for t in schedule_of(app, api) if t["trial_type"] == "aot"]:
        before = _stored(app)
        payload = answer(trial, onset_callbacks=[CALLBACK] * 4)  # big rows fill a page sooner
        response = client.post(f"{api}/trials", json=payload)
        if response.status_code != 201:
            full = response
            break
    assert full is not None, "the capped database never filled up"
    _assert_retry_later(full)
    assert _stored(app) == before

    event.remove(engine, "connect", cap)
    engine.dispose()
    assert client.post(f"{api}/trials", json=payload).status_code == 201  # the browser's retry
    trials, _ = _stored(app)
    assert trials[:-1] == before[0] and len(trials) == len(before[0]) + 1
    assert client.post(f"{api}/trials", json=payload).json["duplicate"] is True


@pytest.fixture
def postgres_app(postgres_url, tmp_path):
    from tests.factories import make_app

    app = make_app(tmp_path, postgres_url)
    _study(app)
    yield app
    with app.app_context():
        db.session.remove()
        db.engine.dispose()


@pytest.mark.parametrize("message", TRANSIENT[1:3])
def test_a_restarting_postgresql_answers_503_and_keeps_what_it_stored(postgres_app, monkeypatch,
                                                                       message):
    """While the server shuts down or starts up, every new connection is refused with
    the message psycopg raises; the pool is emptied as it is after a server restart."""
    app = postgres_app
    client = app.test_client()
    api = start(client)
    first, second = schedule_of(app, api)[:2]
    assert client.post(f"{api}/trials", json=answer(first)).status_code == 201
    before = _stored(app)
    with app.app_context():
        engine = db.engine

    def refuse(*args, **kwargs):
        raise psycopg.OperationalError(message)

    engine.dispose()
    with monkeypatch.context() as patched:
        patched.setattr(engine.dialect, "connect", refuse)
        payload = answer(second)
        _assert_retry_later(client.post(f"{api}/trials", json=payload))
        _assert_retry_later(client.get(api))
        _assert_retry_later(client.get("/p/study", query_string={"participant": "late"}))
    assert _stored(app) == before
    assert client.post(f"{api}/trials", json=payload).status_code == 201
    trials, _ = _stored(app)
    assert trials[0] == before[0][0] and len(trials) == 2
