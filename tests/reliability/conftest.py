"""Fixtures for the reliability tests: a study with stored media files and fresh sessions.

Fuzzing goes through the app's test client (no HTTP), so thousands of bodies stay fast.
"""
import itertools
from pathlib import Path

import pytest

from webapp.extensions import db
from webapp.models import Session, Stimulus


@pytest.fixture
def study(app, factory):
    factory.stimulus_set("tiny", per_category=2, files=True)
    factory.catch_set()
    factory.open_study(main_blocks=2)
    factory.open_study(design="frame-ordering", slug="order", main_blocks=1)
    return app


class Sessions:
    """Hands out fresh sessions (consented unless asked), each a new participant."""

    def __init__(self, client):
        self.client = client
        self.serial = itertools.count()

    def new(self, slug="study", consent=True) -> str:
        answer = self.client.get(f"/p/{slug}", query_string={"participant": f"fz-{next(self.serial)}"})
        api = "/api/session/" + answer.headers["Location"].rsplit("/", 1)[-1]
        if consent:
            assert self.client.post(f"{api}/consent", json={"consent": True}).status_code == 200
        return api


@pytest.fixture
def sessions(study):
    return Sessions(study.test_client())


@pytest.fixture
def media(study, sessions):
    """(the URL of a session's first clip, the bytes served for it, the URL of a frame-ordering
    trial's frame set without its slot)."""
    client = study.test_client()
    token = sessions.new().rsplit("/", 1)[-1]
    with study.app_context():
        schedule = db.session.query(Session).filter_by(token=token).one().schedule
        path = db.session.get(Stimulus, schedule[0]["stimulus_id"]).path
    data = (Path(study.config["STIMULUS_ROOT"]) / path).read_bytes()
    # Served as the file's boxes and one padding box, at the session's one video size.
    served = client.get(f"/media/{token}/0").data
    assert served.startswith(data) and served[len(data) + 4:len(data) + 8] == b"free"
    order = client.get(sessions.new("order")).get_json()["trials"][0]["stimulus"]["frames"][0]
    return f"/media/{token}/0", served, order.rsplit("/", 1)[0]
