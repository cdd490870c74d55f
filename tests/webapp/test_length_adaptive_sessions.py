"""An aot-length-adaptive session over HTTP: the level is the number of frames shown from the
clip's start, chosen on the server from the stored answers, and nothing a participant fetches
tells the level or the direction."""
import uuid

import pytest
from sqlalchemy import select

from experiments.adaptive_schedule import KEY, pending, resolve
from experiments.length_sweep import SWEEP
from tests.webapp.test_adaptive_sessions import Participant, _schedule, _start
from webapp.extensions import db
from webapp.models import Session, Stimulus, Trial

LEVELS = (2, 6, 12, 18)


@pytest.fixture
def study(app, factory):
    factory.stimulus_set("tiny", per_category=1, files=True)  # full clips: practice
    factory.length_set("tiny", files=True, levels=LEVELS)
    factory.catch_set(files=True)
    return factory.open_study("aot-length-adaptive", stimulus_set="tiny", adaptive_trials=8,
                              main_blocks=2)


def _unresolved(schedule):
    fresh = [dict(t) for t in schedule]
    for t in fresh:
        if KEY in t:
            t.update(stimulus_id=None, source_clip_id=None)
            t[KEY] = {k: t[KEY][k] for k in ("sweep", "slot", "pool", "curve_direction")}
    return fresh


def test_the_lengths_follow_from_the_stored_trials_alone(app, study):
    client = app.test_client()
    token, api = _start(client)
    state = Participant(app, client, token, api).run()
    assert state["adaptive"] is True
    schedule = _schedule(app, token)
    slots = [t for t in schedule if KEY in t]
    assert len(slots) == 8 and {t[KEY]["sweep"] for t in slots} == {SWEEP}
    assert not any(pending(t) for t in slots)
    assert {t[KEY]["level"] for t in slots} <= set(map(float, LEVELS))
    with app.app_context():
        shown = {s.id: s.source_clip.params.get("n_frames") for s in db.session.query(Stimulus)}
    # each slot shows the cut of its level
    assert all(shown[t["stimulus_id"]] == t[KEY]["level"] for t in slots)
    answers = _stored_answers(app, token)
    fresh = _unresolved(schedule)
    for t in slots:
        fresh = resolve(fresh, t["trial_index"], answers)
    assert fresh == schedule


def _stored_answers(app, token):
    with app.app_context():
        rows = db.session.scalars(select(Trial).join(Session).where(Session.token == token))
        return {r.trial_index: None if r.response is None else bool(r.correct) for r in rows}


def test_reload_and_replay_cannot_change_a_length(app, study):
    client = app.test_client()
    token, api = _start(client)
    person = Participant(app, client, token, api)
    first, second = [t["trial_index"] for t in _schedule(app, token) if KEY in t][:2]
    person.run(until=first)
    assert person.video(first).status_code == 200
    assert person.video(second).status_code == 409  # its length waits for the answer before
    chosen = _schedule(app, token)[first]
    assert app.test_client().get(f"/media/{token}/{first}").status_code == 200  # a reload
    assert _schedule(app, token)[first] == chosen
    body = person.body(first)
    assert person.post(body).status_code == 201
    person.run(until=second)
    assert person.video(second).status_code == 200
    level = _schedule(app, token)[second]
    assert person.post(body).get_json()["duplicate"] is True  # a replayed post
    flipped = {**body, "client_uuid": str(uuid.uuid4()),
               "response": {"F": "B", "B": "F"}[body["response"]]}
    flipped["key"] = next(k for k, v in client.get(api).get_json()["key_mapping"].items()
                          if v == flipped["response"])
    assert person.post(flipped).status_code == 409
    assert _schedule(app, token)[second] == level and _schedule(app, token)[first] == chosen


def test_media_tell_neither_length_nor_direction(app, study):
    """Every video of the session, forward or reversed, short or long cut, comes at one URL
    shape, one size and the same headers (the cuts' own files differ in size by level)."""
    client = app.test_client()
    token, api = _start(client)
    person = Participant(app, client, token, api)
    seen, views = {}, set()
    while True:
        state = client.get(api).get_json()
        index = state["next_trial_index"]
        if index >= len(state["trials"]):
            break
        public = state["trials"][index]
        assert public["stimulus"]["url"].endswith(f"/media/{token}/{index}")
        views.add(repr({k: v for k, v in public.items() if k not in ("trial_index", "stimulus", "block")}))
        response = person.video(index)
        headers = {k: v for k, v in response.headers.items() if k != "Date"}
        response.close()
        trial = _schedule(app, token)[index]
        if KEY in trial:
            seen[(trial[KEY]["level"], trial["direction"])] = headers
        person.post(person.body(index))
    assert len({level for level, _ in seen}) >= 2 and {d for _, d in seen} == {"forward", "backward"}
    assert len({tuple(sorted(h.items())) for h in seen.values()}) == 1, seen
    assert len(views) <= 2, views  # practice and main trials: no level, no direction


def test_a_video_fetched_again_after_the_session_is_the_same_size(app, study):
    """SECURITY.md: every video of a session is served at one size, however far it has run."""
    client = app.test_client()
    token, api = _start(client)
    before = client.get(f"/media/{token}/0")
    size = before.headers["Content-Length"]
    before.close()
    Participant(app, client, token, api).run()
    assert not any(pending(t) for t in _schedule(app, token))
    again = client.get(f"/media/{token}/0")
    assert again.status_code == 200 and again.headers["Content-Length"] == size
    again.close()


def test_a_catch_trial_is_held_to_its_variant_s_frame_count_all_session(app, study):
    """The catch variants are made on the first video request, each like one clip the session
    may show; the frame count a catch trial's posted counts are held to stays that clip's
    however the adaptive slots resolve (the set it was picked from shrank as they did)."""
    from webapp.stimuli import presentations

    client = app.test_client()
    token, api = _start(client)
    participant = Participant(app, client, token, api)
    participant.video(0).close()

    def served():
        with app.app_context(), db.engine.connect() as connection:
            session = connection.execute(select(Session.__table__)
                                         .where(Session.token == token)).one()
            return {t["trial_index"]: presentations.served_clip(connection, session, t)
                    for t in session.schedule if t["trial_type"] == "catch"}

    before = served()
    participant.run()
    assert before and None not in before.values() and served() == before
