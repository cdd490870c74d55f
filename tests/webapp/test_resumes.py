"""Resume bookkeeping: every claim after the first is a resume, stored with the trial the page
goes on with, the time away on the server's clock and whether that trial was restarted; in
participants.csv (and its codebook)."""
import csv
import io
import json
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from webapp.extensions import db
from webapp.models import Session
from webapp.participant import sessions
from webapp.researcher import exports
from webapp.researcher.codebook import CODEBOOK


@pytest.fixture
def api(factory, client):
    factory.aot_study()
    response = client.get("/p/study", query_string={"participant": "p-resume"})
    api = "/api/session/" + response.headers["Location"].rsplit("/", 1)[-1]
    assert client.post(f"{api}/consent", json={"consent": True}).status_code == 200
    return api


def resumes(app, api):
    with app.app_context():
        return db.session.scalar(select(Session.resumes)
                                 .where(Session.token == api.rsplit("/", 1)[-1]))


def away_for(app, api, seconds):
    """The session's last sign of life ``seconds`` ago (the participant was away)."""
    with app.app_context():
        token = api.rsplit("/", 1)[-1]
        seen = db.session.scalar(select(Session.last_seen_at).where(Session.token == token))
        db.session.execute(update(Session).where(Session.token == token)
                           .values(last_seen_at=seen - timedelta(seconds=seconds)))
        db.session.commit()


def test_each_claim_after_the_first_is_a_resume(app, client, api):
    assert client.post(f"{api}/claim", json={"client": "tab-1", "trial_index": 0}) \
        .status_code == 204
    assert not resumes(app, api)  # the first page to take the session up: no resume
    away_for(app, api, 90)
    assert client.post(f"{api}/claim", json={"client": "tab-2", "trial_index": 3,
                                             "restarted": True}).status_code == 204
    assert client.post(f"{api}/claim", json={"client": "tab-3"}).status_code == 204
    first, second = resumes(app, api)
    assert (first["trial_index"], first["restarted"]) == (3, True)
    assert 90 <= first["away_s"] < 120
    assert (second["trial_index"], second["restarted"]) == (None, False)
    assert 0 <= second["away_s"] < 30

    with app.app_context():
        files = exports.build_export("study")
    row = next(csv.DictReader(io.StringIO(files["participants.csv"].decode())))
    assert [r["trial_index"] for r in json.loads(row["resumes"])] == [3, None]
    assert ("participants.csv", "resumes") in {(f, c) for f, c, _, _ in CODEBOOK}


@pytest.mark.parametrize("body", [
    {"client": "t", "trial_index": 10_000},  # not in the session's schedule
    {"client": "t", "trial_index": -1},
    {"client": "t", "trial_index": "3"},
    {"client": "t", "restarted": True},  # restarted, but which trial?
    {"client": "t", "trial_index": 0, "restarted": "yes"},
])
def test_a_claim_naming_an_impossible_resume_is_refused(app, client, api, body):
    client.post(f"{api}/claim", json={"client": "first"})
    assert client.post(f"{api}/claim", json=body).status_code == 400
    assert not resumes(app, api)


def test_resumes_are_capped(app, client, api, monkeypatch):
    monkeypatch.setattr(sessions, "MAX_RESUMES", 2)
    for n in range(4):
        assert client.post(f"{api}/claim", json={"client": f"tab-{n}"}).status_code == 204
    assert len(resumes(app, api)) == 2
