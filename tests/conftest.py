"""Shared fixtures: an app on a temporary database, its client and CLI runner, the test-data
``factory`` (tests/factories.py), the live ``site`` (tests/live_site.py) and Chromium's ``page``.

Database tests that take ``any_db_app`` run on SQLite and on a real PostgreSQL server.
PostgreSQL is found at $CHRONOSCOPE_TEST_POSTGRES_URL (default: the local server of this
machine kind); when it is unreachable those tests are skipped, except under CI=true, where
they fail so that CI never silently loses them.
"""
import os

# One intra-op thread for torch and the BLAS (read when they load, hence before the imports
# below): `make test` runs three workers on two cores, and each torch op of a tiny model split
# over more threads waits on cores the other workers hold: bench/probe.py's tiny models
# took 20 to 300 times longer a clip on two threads than on one (docs/measurements.md).
# A value already set is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Stimulus builds in the test process, not a pool: the workers already hold the cores, and
# each pool process first spends about 0.4 s of CPU importing what it builds with
# (docs/measurements.md, The test suite). Set, not defaulted: a value from the shell would
# bring the pools back, or fail every build; the pools' own tests ask for theirs.
os.environ["CHRONOSCOPE_STIMULUS_WORKERS"] = "1"
import shutil
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from bench.harness.tabs import CHROMIUM, launch_chromium
from tests.factories import Factory, PersonClock, make_app
from tests.live_site import site  # noqa: F401  (fixture: the live site, one per test process)
from webapp.extensions import db

DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture
def app(tmp_path):
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'test.db'}")
    yield app
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def person_pace(monkeypatch):
    """The participant path's clock moves on 3 s at each reading (tests/factories.py), so
    that sessions the test client answers at once arrive at a person's pace."""
    from webapp.participant import store

    monkeypatch.setattr(store, "now", PersonClock())


@pytest.fixture
def factory(request):
    """The row factories of tests/factories.py on the test's database (``any_db_app``'s when
    the test takes that one)."""
    name = "any_db_app" if "any_db_app" in request.fixturenames else "app"
    return Factory(request.getfixturevalue(name))


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
    app = make_app(tmp_path, url)
    yield app
    with app.app_context():
        db.session.remove()
        db.engine.dispose()


# One Playwright instance per test process: the sync API refuses a second one while the first
# runs, so every browser test (tests/browser, tests/reliability) shares this fixture.
@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        message = "Debian chromium is not installed (make debian)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.js_errors = errors
    yield page
    context.close()
