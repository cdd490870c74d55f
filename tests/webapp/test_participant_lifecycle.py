"""What a participant can do against a study's lifecycle, its places and their own session:
closing (finish or stop), caps and entry rate limits, one tab at a time, and simulation."""
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from experiments.trial_types import presented_type
from tests.factories import Factory
from webapp import create_app
from webapp.extensions import db
from webapp.models import CellCount, Session, Study, Subject, Trial
from webapp.participant import sessions
from webapp.researcher import lifecycle, studies


@pytest.fixture
def study(factory):
    factory.aot_study()
    return "study"


def enter(client, participant, **params):
    return client.get("/p/study", query_string={"participant": participant, **params})


def start(client, participant="p-1", **params):
    response = enter(client, participant, **params)
    assert response.status_code == 303, response.data
    api = "/api/session/" + response.headers["Location"].rsplit("/", 1)[-1]
    assert client.post(f"{api}/consent", json={"consent": True}).status_code == 200
    return api


def session_row(app, api):
    """The session, each scheduled trial given ``keys``: the key of each response in the
    session's key mapping (read only here, never stored)."""
    with app.app_context():
        row = db.session.scalar(select(Session).where(Session.token == api.rsplit("/", 1)[-1]))
        keys = {label: key for key, label in row.condition["key_mapping"].items()}
        for trial in row.schedule:
            trial["keys"] = keys
        return row


def answer(trial):
    return {"client_uuid": str(uuid.uuid4()), "trial_index": trial["trial_index"],
            "trial_type": presented_type(trial["trial_type"]), "rt_ms": 800.0,
            "timed_out": False, "response": trial["correct_response"],
            "key": trial["keys"][trial["correct_response"]]}


def store_practice(client, app, api, query=""):
    for trial in session_row(app, api).schedule:
        if trial["block"] == "practice":
            assert client.post(f"{api}/trials{query}", json=answer(trial)).status_code == 201


def act(app, action):
    with app.app_context():
        return lifecycle.transition("study", action)


# --- closing -----------------------------------------------------------------------------

def test_close_lets_current_participants_finish_but_admits_nobody_new(app, client, study):
    api = start(client)
    act(app, "close")
    store_practice(client, app, api)  # the participant already in goes on
    assert enter(client, "p-1").status_code == 303  # and can come back to their session
    refused = enter(client, "p-new")
    assert refused.status_code == 404 and b"not open" in refused.data
    with app.app_context():
        assert db.session.scalar(select(Study.close_mode)) == "finish"


def test_stop_ends_sessions_in_progress_and_keeps_what_they_stored(app, client, study):
    api = start(client)
    store_practice(client, app, api)
    with app.app_context():
        stored = db.session.scalar(select(func.count(Trial.id)))
    act(app, "stop")
    row = session_row(app, api)
    assert row.status == "stopped" and row.completed_at is not None
    main = next(t for t in row.schedule if t["block"] != "practice")
    late = client.post(f"{api}/trials", json=answer(main))
    assert late.status_code == 409 and late.json["status"] == "stopped"
    assert late.json["completion_code"]  # the participant is told, with the stopped code
    assert client.post(f"{api}/heartbeat", json={}).json["status"] == "stopped"
    state = client.get(api).json
    assert state["status"] == "stopped" and state["completion_code"] == late.json["completion_code"]
    assert client.post(f"{api}/complete").json["status"] == "stopped"
    with app.app_context():
        assert db.session.scalar(select(func.count(Trial.id))) == stored  # nothing lost
    again = enter(client, "p-1")
    assert b"stopped this study" in again.data
    assert b"stopped" in enter(client, "p-new").data


def test_a_closed_study_can_still_be_stopped_but_not_reopened(app, client, study):
    act(app, "close")
    with pytest.raises(studies.StudyError, match="cannot open"):
        act(app, "open")
    assert act(app, "stop").close_mode == "stop"
    with pytest.raises(studies.StudyError, match="cannot stop"):
        act(app, "stop")


# --- places and rate limits --------------------------------------------------------------

def test_a_cap_of_places_refuses_new_participants_never_returning_ones(app, client, study):
    with app.app_context():
        db.session.execute(db.update(Study).values(max_participants=2))
        db.session.commit()
    first = start(client, "p-1")
    start(client, "p-2")
    full = enter(client, "p-3")
    assert full.status_code == 409 and b"all the participants" in full.data
    assert enter(client, "p-1").headers["Location"].endswith(first.rsplit("/", 1)[-1])
    with app.app_context():
        assert db.session.scalar(select(func.count(Subject.id))) == 2


def test_a_participant_who_refuses_consent_frees_their_place(app, client, study):
    with app.app_context():
        db.session.execute(db.update(Study).values(max_participants=1))
        db.session.commit()
    api = "/api/session/" + enter(client, "p-1").headers["Location"].rsplit("/", 1)[-1]
    client.post(f"{api}/consent", json={"consent": False})
    assert enter(client, "p-2").status_code == 303


def test_invented_ids_from_one_address_are_rate_limited(tmp_path):
    # The red team made 200 sessions with made-up PROLIFIC_PIDs at 56/s.
    app = _app(tmp_path, NEW_SESSIONS_PER_ADDRESS="5 per hour",
               NEW_SESSIONS_PER_ADDRESS_PER_STUDY="100 per hour")
    client = app.test_client()
    codes = [client.get("/p/study", query_string={"PROLIFIC_PID": f"fake{n}"}).status_code
             for n in range(8)]
    assert codes == [303] * 5 + [429] * 3
    busy = client.get("/p/study", query_string={"PROLIFIC_PID": "fake-9"})
    assert busy.headers["Retry-After"] and b"try again" in busy.data
    # A returning participant is never refused, and another address still gets in.
    assert client.get("/p/study", query_string={"PROLIFIC_PID": "fake0"}).status_code == 303
    other = client.get("/p/study", query_string={"PROLIFIC_PID": "x1"},
                       environ_base={"REMOTE_ADDR": "10.0.0.7"})
    assert other.status_code == 303
    with app.app_context():
        assert db.session.scalar(select(func.count(Session.id))) == 6
        db.engine.dispose()


def test_sessions_per_study_are_rate_limited_across_addresses(tmp_path):
    app = _app(tmp_path, NEW_SESSIONS_PER_STUDY="3 per minute")
    client = app.test_client()
    codes = [client.get("/p/study", query_string={"participant": f"p{n}"},
                        environ_base={"REMOTE_ADDR": f"10.0.0.{n}"}).status_code for n in range(5)]
    assert codes == [303, 303, 303, 429, 429]
    with app.app_context():
        db.engine.dispose()


def test_one_script_cannot_fill_a_study_s_places(tmp_path):
    """The red team filled all 5 places of a study in 0.23 s from one address."""
    app = _app(tmp_path)  # the shipped limits
    with app.app_context():
        db.session.execute(db.update(Study).values(max_participants=5))
        db.session.commit()
    client = app.test_client()
    codes = []
    for n in range(5):  # each from a new address of one IPv6 /64, consenting at once
        response = client.get("/p/study", query_string={"PROLIFIC_PID": f"bot{n}"},
                              environ_base={"REMOTE_ADDR": f"2001:db8:0:1::{n + 1:x}"})
        codes.append(response.status_code)
        if response.status_code == 303:
            token = response.headers["Location"].rsplit("/", 1)[-1]
            client.post(f"/api/session/{token}/consent", json={"consent": True})
    assert codes == [303] * 3 + [429] * 2
    refused = client.get("/p/study", query_string={"PROLIFIC_PID": "bot9"},
                         environ_base={"REMOTE_ADDR": "2001:db8:0:1::99"})
    assert b"from your network" in refused.data  # not "in a minute": it may be an hour
    # A person from elsewhere still gets one of the places left.
    assert client.get("/p/study", query_string={"PROLIFIC_PID": "person"},
                      environ_base={"REMOTE_ADDR": "198.51.100.7"}).status_code == 303
    with app.app_context():
        db.engine.dispose()


def test_a_participant_refused_behind_a_nat_is_told_when_the_limit_admits_again(tmp_path):
    """A fourth person from one campus address within the hour (3 an hour per address and
    study): Retry-After was 60 whatever the limit, while the sliding hour needs 20 to 80
    minutes to admit one more."""
    app = _app(tmp_path)  # the shipped limits
    codes, waits = [], []
    for n in range(5):
        response = app.test_client().get("/p/study", query_string={"PROLIFIC_PID": f"s{n}"},
                                         environ_base={"REMOTE_ADDR": "192.0.2.50"})
        codes.append(response.status_code)
        waits.append(int(response.headers.get("Retry-After", 0)))
    assert codes == [303] * 3 + [429] * 2
    assert waits[:3] == [0] * 3 and all(1200 <= wait <= 4800 for wait in waits[3:])
    with app.app_context():
        db.engine.dispose()


def _app(tmp_path, **config):
    app = create_app({"TESTING": True, "INSTANCE_PATH": str(tmp_path / "inst"),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'limits.db'}", **config})
    with app.app_context():
        db.create_all()
    Factory(app).aot_study()
    return app


# --- one tab at a time -------------------------------------------------------------------

def test_a_second_tab_takes_over_and_the_first_is_told(app, client, study):
    api = start(client)
    assert client.post(f"{api}/claim", json={"client": "tab-1"}).status_code == 204
    assert client.post(f"{api}/heartbeat?client=tab-1", json={}).status_code == 204
    assert client.post(f"{api}/claim", json={"client": "tab-2"}).status_code == 204
    trial = session_row(app, api).schedule[0]
    refused = client.post(f"{api}/trials?client=tab-1", json=answer(trial))
    assert refused.status_code == 409 and refused.json["error"] == "other_tab"
    assert "another tab" in refused.json["message"]
    assert client.post(f"{api}/heartbeat?client=tab-1", json={}).json["error"] == "other_tab"
    assert client.post(f"{api}/complete?client=tab-1").json["error"] == "other_tab"
    assert client.post(f"{api}/trials?client=tab-2", json=answer(trial)).status_code == 201
    with app.app_context():
        assert db.session.scalar(select(func.count(Trial.id))) == 1


def test_claims_are_validated(app, client, study):
    api = start(client)
    assert client.post(f"{api}/claim", json={}).status_code == 400
    assert client.post(f"{api}/claim", json={"client": "x" * 65}).status_code == 400
    assert client.post(f"{api}/heartbeat?client={'x' * 65}", json={}).status_code == 400


# --- simulation ----------------------------------------------------------------------------

def test_simulate_on_a_production_link_is_ignored(tmp_path):
    app = create_app({"SECRET_KEY": "k" * 40, "INSTANCE_PATH": str(tmp_path / "prod"),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'prod.db'}"})
    with app.app_context():
        db.create_all()
    Factory(app).aot_study()
    client = app.test_client()
    api = start(client, "p-1", simulate="1")
    assert client.get(api).json["simulated"] is False
    assert session_row(app, api).simulated is False
    with app.app_context():
        db.engine.dispose()


def test_simulated_sessions_are_marked_excluded_and_take_no_place(app, client, study):
    with app.app_context():
        db.session.execute(db.update(Study).values(max_participants=1))
        db.session.commit()
    api = start(client, "robot", simulate="1")
    assert client.get(api).json["simulated"] is True
    for trial in session_row(app, api).schedule:
        assert client.post(f"{api}/trials", json=answer(trial)).status_code == 201
    ended = client.post(f"{api}/complete").json
    row = session_row(app, api)
    assert row.simulated and row.excluded and "simulated" in row.exclusion_reasons
    assert ended["status"] == "completed"
    assert start(client, "a-person")  # the simulated session took no place
    with app.app_context():
        lifecycle.transition("study", "pause")
        from webapp.participant.progress import recompute_study

        recompute_study(studies.get_study("study"))
    assert "simulated" in session_row(app, api).exclusion_reasons


def test_entry_works_with_rate_limits_switched_off(tmp_path):
    app = _app(tmp_path, RATELIMIT_ENABLED=False, NEW_SESSIONS_PER_ADDRESS="1 per hour")
    client = app.test_client()
    assert [client.get("/p/study", query_string={"participant": f"p{n}"}).status_code
            for n in range(3)] == [303] * 3
    with app.app_context():
        db.engine.dispose()


def test_a_researcher_previews_a_draft_as_the_simulated_participant(app, factory, logged_in):
    factory.stimulus_set("tiny", per_category=2)
    factory.catch_set()
    study = factory.study(status="draft", stimulus_set="tiny", owner="ada")
    client = logged_in
    page = client.get(f"/researcher/studies/{study.slug}").get_data(as_text=True)
    assert 'id="preview"' in page
    answer = client.post(f"/researcher/studies/{study.slug}/preview")
    assert answer.status_code == 303 and "/run/" in answer.headers["Location"]
    token = answer.headers["Location"].rsplit("/", 1)[-1]
    assert client.get(f"/api/session/{token}").get_json()["simulated"] is True
    with app.app_context():
        row = db.session.scalar(select(Session).where(Session.token == token))
        assert row.simulated and row.subject.external_id.startswith("preview-")
        assert not db.session.scalar(select(func.count()).select_from(CellCount))


@pytest.mark.parametrize("action", ["close", "pause"])
def test_participants_already_in_go_on_to_their_next_session(app, client, study, action):
    # The red team: after "close", a participant due for session 2 of 2 was told "not open".
    api = start(client, "two-days")
    with app.app_context():
        row = db.session.scalar(select(Session).where(Session.token == api.rsplit("/", 1)[-1]))
        row.status, row.completed_at = "completed", sessions.now() - timedelta(days=2)
        db.session.commit()
    act(app, action)
    again = enter(client, "two-days")
    assert again.status_code == 303
    assert session_row(app, "/" + again.headers["Location"].rsplit("/", 1)[-1]).session_number == 2
    assert enter(client, "newcomer").status_code == 404


def test_a_claimed_session_refuses_writes_that_name_no_tab(app, client, study):
    # The red team: after tab B claimed, writes with no client (or client=) were still stored.
    api = start(client)
    client.post(f"{api}/claim", json={"client": "tab-b"})
    trial = session_row(app, api).schedule[0]
    for query in ("", "?client=", "?client=tab-a&client=tab-b"):
        answer_ = client.post(f"{api}/trials{query}", json=answer(trial))
        assert answer_.status_code == 409 and answer_.json["error"] == "other_tab", query
    assert client.post(f"{api}/complete").json["error"] == "other_tab"


def test_a_stopped_session_takes_no_consent_device_or_claim(app, client, study):
    # The red team: after Stop, claim and device answered 204 and consent 200 {ok: true}.
    api = "/api/session/" + enter(client, "late").headers["Location"].rsplit("/", 1)[-1]
    act(app, "stop")
    device = {"user_agent": "x", "screen_w": 1, "screen_h": 1, "window_w": 1, "window_h": 1,
              "refresh_hz": 60.0, "device_pixel_ratio": 1.0, "touch": False,
              "video_check_ok": True}
    for path, body in (("/consent", {"consent": True}), ("/device", device),
                       ("/claim", {"client": "t"}), ("/heartbeat", {})):
        refused = client.post(f"{api}{path}", json=body)
        assert refused.status_code == 409 and refused.json["status"] == "stopped", path
    assert session_row(app, api).active_client is None



def test_entries_that_never_consent_take_no_place(app, client, study):
    # The red team filled a capped study with HEAD requests and made-up ids.
    with app.app_context():
        db.session.execute(db.update(Study).values(max_participants=2))
        db.session.commit()
    client.head("/p/study", query_string={"participant": "unfurler"})
    idle = [enter(client, f"idle-{n}").headers["Location"].rsplit("/", 1)[-1] for n in range(4)]
    start(client, "p-1")
    start(client, "p-2")
    late = client.post(f"/api/session/{idle[0]}/consent", json={"consent": True})
    assert late.status_code == 409 and late.json["error"] == "study_full"
    assert "all the participants" in late.json["message"]
    assert session_row(app, "/" + idle[0]).status == "started"  # nothing else changed
    assert enter(client, "p-3").status_code == 409


def test_consenting_again_never_loses_a_place(app, client, study):
    # The recheck: a participant holding the last place who sent consent twice (a retry after
    # a lost answer) was told the study was full.
    with app.app_context():
        db.session.execute(db.update(Study).values(max_participants=1))
        db.session.commit()
    api = start(client, "only")
    again = client.post(f"{api}/consent", json={"consent": True})
    assert again.status_code == 200 and session_row(app, api).status == "in_progress"


def test_nobody_joins_a_closed_study_by_consenting_late(app, client, study):
    # The recheck: an id opened before "close" could consent after it and join.
    api = "/api/session/" + enter(client, "early").headers["Location"].rsplit("/", 1)[-1]
    act(app, "close")
    late = client.post(f"{api}/consent", json={"consent": True})
    assert late.status_code == 409 and late.json["error"] == "study_closed"
    assert session_row(app, api).status == "started"


def test_any_tab_may_read_the_state_of_a_claimed_session(app, client, study):
    api = start(client)
    client.post(f"{api}/claim", json={"client": "tab-b"})
    assert client.get(api).status_code == 200
    assert client.get(f"{api}?client=tab-a").status_code == 200
