"""A study's refresh-rate range held at the server (review 30, finding 6): the browser's
device check refuses a rate outside it, and a client that consents anyway is screened out
for it, as one that gave up at the check is."""
import pytest
from sqlalchemy import select

from tests.factories import open_site_study, tiny_designs
from tests.webapp.test_api import answer, schedule_of, start
from webapp.extensions import db
from webapp.models import Session

DEVICE = {"user_agent": "test", "screen_w": 1920, "screen_h": 1080, "window_w": 1920,
          "window_h": 1080, "device_pixel_ratio": 1.0, "touch": False, "video_check_ok": True}


@pytest.fixture
def study(app, factory):
    factory.stimulus_set("tiny", per_category=2)
    factory.catch_set()
    open_site_study(app, "refresh-100", tiny_designs()["aot"], min_refresh_hz=100)


def consent_after_device(client, participant, refresh_hz):
    api = start(client, participant, slug="refresh-100", consent=None)
    if refresh_hz is not ...:
        device = client.post(f"{api}/device", json={**DEVICE, "refresh_hz": refresh_hz})
        assert device.status_code == 204
    return api, client.post(f"{api}/consent", json={"consent": True})


def session_row(app, api):
    with app.app_context():
        return db.session.scalar(select(Session).where(Session.token == api.rsplit("/", 1)[-1]))


@pytest.mark.parametrize("refresh_hz", [60.0, None, ...])  # slow, unmeasured, never checked
def test_a_rate_outside_the_range_is_screened_out_at_consent(app, client, study, refresh_hz):
    api, consented = consent_after_device(client, f"p-{refresh_hz}", refresh_hz)
    assert consented.status_code == 200 and consented.json["status"] == "screened_out"
    row = session_row(app, api)
    assert row.status == "screened_out"
    assert row.device_info["screen_out"]["reasons"] == ["refresh"]
    trial = next(t for t in schedule_of(app, api) if t["block"] == "practice")
    assert client.post(f"{api}/trials", json=answer(trial)).status_code == 409


def test_a_rate_inside_the_range_consents(app, client, study):
    api, consented = consent_after_device(client, "p-120", 120.0)
    assert consented.status_code == 200 and consented.json == {"ok": True}
    assert session_row(app, api).status == "in_progress"
