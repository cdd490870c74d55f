"""A screen-out is only for a device check that fails before consent, and names why
(webapp/participant/api.py screen_out, sessions.screen_out)."""
import pytest
from sqlalchemy import select

from tests.webapp.test_api import answer, schedule_of, start
from webapp.extensions import db
from webapp.models import Session


@pytest.fixture
def study(factory):
    factory.aot_study()


def _status(app):
    with app.app_context():
        return db.session.scalar(select(Session.status))


def test_a_screen_out_without_a_reason_is_refused(app, client, study):
    api = start(client, consent=None)
    refused = client.post(f"{api}/screen-out", json={"reasons": []})
    assert refused.status_code == 400 and refused.json["error"] == "no_reason"
    assert "completion_code" not in refused.json and _status(app) == "started"


def test_a_session_past_consent_with_trials_cannot_be_screened_out(app, client, study):
    api = start(client)
    first = schedule_of(app, api)[0]
    assert client.post(f"{api}/trials", json=answer(first)).status_code == 201
    for reasons in ([], ["device"]):
        refused = client.post(f"{api}/screen-out", json={"reasons": reasons})
        assert refused.status_code in (400, 409) and "completion_code" not in refused.json
    assert refused.json["error"] == "screen_out_refused"
    assert "cannot be screened out" in refused.json["message"]
    assert _status(app) == "in_progress"
