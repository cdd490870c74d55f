"""Web-app fixtures: a signed-in researcher (rows come from the ``factory`` fixture of
tests/conftest.py)."""
from datetime import datetime, timedelta, timezone

import pytest

from tests.factories import RESEARCHER, RESEARCHER_PASSWORD
from webapp import auth


@pytest.fixture
def researcher(app):
    # A cheap hash keeps sign-in fast in tests; production uses scrypt (test_auth checks it).
    app.config["PASSWORD_HASH_METHOD"] = "pbkdf2:sha256:1000"
    with app.app_context():
        auth.create_researcher(RESEARCHER, RESEARCHER_PASSWORD)
    return {"username": RESEARCHER, "password": RESEARCHER_PASSWORD}


@pytest.fixture
def login(client, researcher):
    """Sign ``client`` in as the researcher (CSRF is off under TESTING unless a test enables it)."""
    def sign_in(username=researcher["username"], password=researcher["password"]):
        return client.post("/auth/login", data={"username": username, "password": password})
    return sign_in


@pytest.fixture
def logged_in(client, login):
    response = login()
    assert response.status_code == 302
    return client


def minutes_ago(minutes: float) -> datetime:
    return datetime.now(timezone.utc) - timedelta(minutes=minutes)
