"""Shared fixtures: an app on a temporary database, its client and CLI runner.

Database tests that take ``any_db_app`` run on SQLite and on a real PostgreSQL server.
PostgreSQL is found at $CHRONOSCOPE_TEST_POSTGRES_URL (default: the local server of this
machine kind); when it is unreachable those tests are skipped, except under CI=true, where
they fail so that CI never silently loses them.
"""
import os
import uuid

import pytest
import sqlalchemy as sa

from webapp import create_app
from webapp.extensions import db

DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def _make_app(tmp_path, database_url, **overrides):
    config = {
        "TESTING": True,
        "SECRET_KEY": "test-secret",
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "DATABASE_URL": database_url,
        "STIMULUS_ROOT": str(tmp_path / "stimuli"),
        **overrides,
    }
    app = create_app(config)
    with app.app_context():
        db.create_all()
    return app


@pytest.fixture
def app(tmp_path):
    app = _make_app(tmp_path, f"sqlite:///{tmp_path / 'test.db'}")
    yield app
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture(scope="session")
def postgres_server_url():
    url = os.environ.get("CHRONOSCOPE_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect():
            pass
    except sa.exc.OperationalError as error:
        engine.dispose()
        message = f"PostgreSQL unreachable at {url}: {error.orig}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    yield engine
    engine.dispose()


@pytest.fixture
def postgres_url(postgres_server_url):
    """A fresh, empty database on the PostgreSQL server, dropped afterwards."""
    name = f"chronoscope_test_{uuid.uuid4().hex[:12]}"
    with postgres_server_url.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    yield postgres_server_url.url.set(database=name).render_as_string(hide_password=False)
    with postgres_server_url.connect() as connection:
        connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db_app(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'test.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    app = _make_app(tmp_path, url)
    yield app
    with app.app_context():
        db.session.remove()
        db.engine.dispose()
