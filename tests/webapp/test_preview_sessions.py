"""A researcher's preview from the dashboard: click by click or with the simulated
participant, which in a preview alone is told each catch trial's instructed key
(webapp/participant/progress.py; researcher.preview; static/js/simulate.js)."""
import json

import pytest
from sqlalchemy import select

from tests.factories import RESEARCHER
from webapp.extensions import db
from webapp.models import Session, Study, access


@pytest.fixture
def study(app, logged_in, factory):
    factory.aot_study()
    with app.app_context():
        access.share(db.session.scalar(select(Study)), RESEARCHER, "owner")
    return "study"


def _preview(client, **form) -> str:
    response = client.post("/researcher/studies/study/preview", data=form)
    assert response.status_code == 303, response.data
    return response.headers["Location"]


def _token(location: str) -> str:
    return location.split("?")[0].rsplit("/", 1)[-1]


def test_the_study_page_offers_both_previews(logged_in, study):
    page = logged_in.get("/researcher/studies/study").get_data(as_text=True)
    assert 'id="preview"' in page and 'id="preview-manual"' in page
    assert '<input type="hidden" name="mode" value="manual">' in page


def test_a_click_by_click_preview_is_a_preview_the_robot_leaves_alone(app, logged_in, study):
    location = _preview(logged_in, mode="manual")
    assert location.endswith("?manual=1")
    with app.app_context():
        row = db.session.scalar(select(Session).where(Session.token == _token(location)))
        assert row.preview and row.simulated


def test_only_a_preview_is_told_the_catch_trials_keys(app, logged_in, study):
    token = _token(_preview(logged_in))
    state = logged_in.get(f"/api/session/{token}").json
    assert state["preview"] is True
    with app.app_context():
        schedule = db.session.scalar(select(Session.schedule).where(Session.token == token))
    catch = {t["trial_index"]: t for t in schedule if t["trial_type"] == "catch"}
    assert catch  # the study has attention checks
    told = {t["trial_index"]: t["preview_answer"] for t in state["trials"] if "preview_answer" in t}
    practice = {t["trial_index"]: {"correct_response": t["correct_response"]}
                for t in schedule if t["block"] == "practice"}
    assert told == practice | {i: {"instructed_key": t["instructed_key"],
                                   "correct_response": t["correct_response"]}
                               for i, t in catch.items()}
    # An ordinary simulated session is told practice answers only (its robot passes practice
    # at its set accuracy; it is always excluded); a participant's session never any answer.
    for query, told_practice in (({"participant": "real-1"}, False),
                                 ({"participant": "sim-1", "simulate": "1"}, True)):
        entered = logged_in.get("/p/study", query_string=query)
        other = logged_in.get(f"/api/session/{_token(entered.headers['Location'])}").json
        assert other["preview"] is False
        assert "instructed_key" not in json.dumps(other)
        told = {t["trial_index"] for t in other["trials"] if "preview_answer" in t}
        assert told == ({t["trial_index"] for t in other["trials"] if t["block"] == "practice"}
                        if told_practice else set())


def test_a_preview_carries_a_banner_and_never_the_real_completion_code(app, logged_in, study):
    from webapp.participant.sessions import PREVIEW_CODE, completion_codes

    location = _preview(logged_in, mode="manual")
    token = _token(location)
    page = logged_in.get(location).get_data(as_text=True)
    assert 'id="preview-banner"' in page and "not a participant" in page
    ended = logged_in.post(f"/api/session/{token}/consent", json={"consent": False})
    assert ended.status_code == 200, ended.data
    with app.app_context():
        real = completion_codes("study")
    state = logged_in.get(f"/api/session/{token}").json
    for shown in (ended.json, state):
        assert shown["completion_code"] == PREVIEW_CODE and not shown.get("redirect_url")
    assert not set(real.values()) & {ended.json["completion_code"], state["completion_code"]}
    assert real["no_consent"] not in logged_in.get(f"/api/session/{token}").get_data(as_text=True)


def test_a_participants_run_page_has_no_preview_banner(app, client, study):
    entered = client.get("/p/study", query_string={"participant": "p-1"})
    run = client.get(entered.headers["Location"]).get_data(as_text=True)
    assert "preview-banner" not in run
