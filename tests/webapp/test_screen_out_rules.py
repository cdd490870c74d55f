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


def test_a_window_too_small_after_consent_ends_with_the_screen_out_code(app, client, study):
    """Fullscreen refused after consent and a window that cannot be enlarged left the
    participant on the window screen with no way out and no code (outside review, issue 28):
    before any trial, the window is a reason to screen out after consent too; a device or
    browser is not (it was checked before consent)."""
    api = start(client)
    refused = client.post(f"{api}/screen-out", json={"reasons": ["browser"]})
    assert refused.status_code == 409 and _status(app) == "in_progress"
    done = client.post(f"{api}/screen-out", json={"reasons": ["window"]})
    assert done.status_code == 200 and done.json["status"] == "screened_out"
    assert done.json["completion_code"] and _status(app) == "screened_out"
