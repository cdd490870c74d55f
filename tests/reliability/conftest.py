"""Fixtures for the reliability tests: a study with stored media files and fresh sessions.

Fuzzing goes through the app's test client (no HTTP), so thousands of bodies stay fast.
"""
import itertools
from pathlib import Path

import pytest

from tests.webapp.participant_study import add_catch_set, add_stimulus_set, open_study
from webapp.extensions import db
from webapp.models import Stimulus


@pytest.fixture
def study(app):
    root = app.config["STIMULUS_ROOT"]
    with app.app_context():
        add_stimulus_set(root=Path(root))
        add_catch_set()
        open_study(main_blocks=2)
        open_study(design="frame-ordering", slug="order", main_blocks=1)
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
def media(study):
    """(clip public id, its file's bytes, a frame-set public id) of the stored study."""
    with study.app_context():
        clip = db.session.query(Stimulus).filter_by(kind="clip").first()
        frames = db.session.query(Stimulus).filter_by(kind="frame_set").first()
        data = (Path(study.config["STIMULUS_ROOT"]) / clip.path).read_bytes()
        return clip.public_id, data, frames.public_id
