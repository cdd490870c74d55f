import json
import uuid
import weakref

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from experiments.trial_types import presented_type
from tests.factories import preload
from webapp.extensions import db
from webapp.models import Session, Trial


@pytest.fixture
def study(factory):
    factory.aot_study()
    factory.open_study(design="frame-ordering", slug="order", main_blocks=3)


def start(client, participant="p-1", slug="study", consent=True):
    response = client.get(f"/p/{slug}", query_string={"PROLIFIC_PID": participant})
    token = response.headers["Location"].rsplit("/", 1)[-1]
    api = f"/api/session/{token}"
    if consent is not None:
        assert client.post(f"{api}/consent", json={"consent": consent}).status_code == 200
    if consent:
        preload(client, api)  # as the runner does (the plausibility rules check it)
    return api


def schedule_of(app, api):
    """The session's scheduled trials, each with ``keys``: the key that gives each response
    in the session's key mapping (what a participant presses)."""
    with app.app_context():
        session = db.session.scalar(select(Session).where(Session.token == api.rsplit("/", 1)[-1]))
        keys = {label: key for key, label in (session.condition.get("key_mapping") or {}).items()}
        return [{**trial, "keys": keys} for trial in session.schedule]


def answer(trial, correct=True, **overrides):
    payload = {"client_uuid": str(uuid.uuid4()), "trial_index": trial["trial_index"],
               "trial_type": presented_type(trial["trial_type"]), "rt_ms": 812.5,
               "timed_out": False}
    if trial["trial_type"] == "frame_order":
        n = trial["params"]["n_frames"]
        truth = [label - 1 for label in json.loads(trial["correct_response"])]
        final = truth if correct else list(reversed(truth))
        if not correct and trial["params"]["hint_positions"]:
            final = truth
        payload.update(initial_order=list(range(n)), final_order=final, rt_ms=4200.0,
                       moves=[{"t_ms": 1000.0, "from": 0, "to": 1, "via": "keyboard"}],
                       ignored_inputs=[{"t_ms": 120.0, "kind": "click"}])
    else:
        wrong = {"F": "B", "B": "F"}[trial["correct_response"]]
        response = trial["correct_response"] if correct else wrong
        payload.update(response=response, key=trial.get("keys", {}).get(response, "f"),
                       onset_method="element-timing", dropped_frames=0, total_frames=90,
                       ignored_inputs=[{"t_ms": -120.0, "kind": "key"}])
    payload.update(overrides)
    if trial["trial_type"] != "frame_order" and "onset_time_ms" not in overrides:
        # The runner's clock: the key's time is the onset's plus the RT.
        # (An RT that is no number, sent to test its refusal, gets no key time.)
        rt = payload["rt_ms"]
        number = isinstance(rt, (int, float)) and not isinstance(rt, bool)
        payload.update(onset_time_ms=5000.0, key_time_ms=5000.0 + rt if number else None)
    return payload


def run_all(client, app, api, correct=True, skip=(), **overrides):
    for trial in schedule_of(app, api):
        if trial["trial_index"] in skip:
            continue
        response = client.post(f"{api}/trials", json=answer(
            trial, correct or trial["block"] == "practice", **overrides))
        assert response.status_code == 201, response.json


def test_get_state_shape_and_no_main_answers(app, client, study):
    api = start(client, consent=None)
    state = client.get(api).json
    assert state["status"] == "started" and state["consent"] is None
    assert state["session_number"] == 1 and state["next_trial_index"] == 0
    assert set(state["key_mapping"].values()) == {"F", "B"} and state["response_keys"] == ["f", "j"]
    assert state["response_window_ms_after_clip"] == 2000 and state["practice_passed"] is None
    assert [b["name"] for b in state["blocks"]] == ["practice", "main-1", "main-2"]
    for trial in state["trials"]:
        assert trial["stimulus"]["url"].startswith("/media/")
        text = json.dumps(trial)  # practice too: its feedback comes once the answer is stored
        assert "correct" not in text and "forward" not in text and "backward" not in text
        assert "instructed_key" not in text and "preview_answer" not in text
        assert trial["params"].get("feedback", False) is (trial["block"] == "practice")


def test_frame_order_state_hides_the_true_order(app, client, study):
    api = start(client, slug="order")
    state = client.get(api).json
    main = [t for t in state["trials"] if t["trial_type"] == "frame_order" and t["block"] != "practice"]
    assert len(main) == 12 - 2  # practice clips set aside
    for trial in main:
        n = trial["params"]["n_frames"]
        assert len(trial["stimulus"]["frames"]) == n and trial["params"]["presented_order"] == list(range(n))
        assert trial["stimulus"]["frames"] == [f"/media/{api.rsplit('/', 1)[-1]}/"
                                               f"{trial['trial_index']}/{slot}" for slot in range(n)]
        assert "correct" not in json.dumps(trial)


def test_consent_declined_ends_with_its_code(client, study):
    api = start(client, consent=None)
    answer_ = client.post(f"{api}/consent", json={"consent": False}).json
    assert answer_["status"] == "no_consent" and len(answer_["completion_code"]) == 8
    assert answer_["redirect_url"].endswith(answer_["completion_code"])
    assert client.get(api).json["consent"] is False


def test_store_replay_and_conflict(app, client, study):
    api = start(client)
    trial = schedule_of(app, api)[0]
    payload = answer(trial)
    first = client.post(f"{api}/trials", json=payload)
    assert first.status_code == 201 and first.json == {"stored": True, "trial_index": 0,
                                                       "practice_passed": None,
                                                       "feedback": {"correct": True}}
    replay = client.post(f"{api}/trials", json=payload)
    assert replay.status_code == 200 and replay.json["duplicate"] is True
    clash = client.post(f"{api}/trials", json={**payload, "client_uuid": str(uuid.uuid4())})
    assert clash.status_code == 409 and clash.json["error"] == "trial_index_taken"
    reused = client.post(f"{api}/trials", json=answer(schedule_of(app, api)[1], client_uuid=payload["client_uuid"]))
    assert reused.status_code == 409 and reused.json["error"] == "uuid_reused"
    with app.app_context():
        rows = db.session.scalars(select(Trial)).all()
        assert len(rows) == 1 and rows[0].correct is True and rows[0].rt_ms == 812.5
        assert rows[0].correct_response == trial["correct_response"]
        assert rows[0].direction == trial["direction"] and rows[0].stimulus_id == trial["stimulus_id"]


def test_sendbeacon_text_plain_body_accepted(app, client, study):
    api = start(client)
    body = json.dumps(answer(schedule_of(app, api)[0]))
    response = client.post(f"{api}/trials", data=body, content_type="text/plain;charset=UTF-8")
    assert response.status_code == 201


@pytest.mark.parametrize("mutate, code", [
    (lambda p: {**p, "surprise": 1}, "unknown_field"),
    (lambda p: {**p, "rt_ms": True}, "wrong_type"),
    (lambda p: {**p, "rt_ms": "fast"}, "wrong_type"),
    (lambda p: {**p, "rt_ms": -5}, "out_of_range"),
    (lambda p: {**p, "response": "X"}, "out_of_range"),
    (lambda p: {**p, "final_order": [0, 1]}, "unknown_field"),
    (lambda p: {**p, "trial_type": "frame_order"}, "trial_type_mismatch"),
    (lambda p: {**p, "trial_index": 9999}, "unknown_trial"),
    (lambda p: {k: v for k, v in p.items() if k != "client_uuid"}, "missing_field"),
])
def test_bad_trials_are_400(app, client, study, mutate, code):
    api = start(client)
    response = client.post(f"{api}/trials", json=mutate(answer(schedule_of(app, api)[0])))
    assert response.status_code == 400 and response.json["error"] == code
    assert response.json["message"]


def test_an_answer_must_be_the_label_of_its_key_in_the_sessions_mapping(app, client, study):
    # A hostile client posting the other label for its key (or a key the session does not
    # use) would turn a wrong answer right; the server knows the mapping and refuses it.
    api = start(client)
    trial = schedule_of(app, api)[0]
    other = {"F": "B", "B": "F"}[trial["correct_response"]]
    for key in (trial["keys"][other], "q"):
        payload = answer(trial, correct=True, key=key)
        response = client.post(f"{api}/trials", json=payload)
        assert response.status_code == 400 and response.json["error"] == "inconsistent"
    assert client.post(f"{api}/trials", json=answer(trial)).status_code == 201
    with app.app_context():
        assert db.session.scalar(select(func.count(Trial.id))) == 1


@pytest.mark.parametrize("raw, code", [
    ('{"rt_ms": NaN}', "non_finite"), ('{"rt_ms": Infinity}', "non_finite"),
    ('{"rt_ms": -Infinity}', "non_finite"), ("[1, 2]", "wrong_type"), ("", "empty_body"),
    ("{not json", "invalid_json"), ('"text"', "wrong_type"),
])
def test_bad_bodies_are_400(client, study, raw, code):
    api = start(client)
    response = client.post(f"{api}/trials", data=raw, content_type="application/json")
    assert response.status_code == 400 and response.json["error"] == code


def test_nan_inside_a_valid_trial_and_huge_numbers(app, client, study):
    api = start(client)
    body = json.dumps(answer(schedule_of(app, api)[0])).replace('"rt_ms": 812.5', '"rt_ms": NaN')
    assert client.post(f"{api}/trials", data=body, content_type="application/json").json["error"] == "non_finite"
    body = body.replace('"rt_ms": NaN', '"rt_ms": 1e999')
    assert client.post(f"{api}/trials", data=body, content_type="application/json").json["error"] == "non_finite"


def test_oversize_body_is_413_json(client, study):
    api = start(client)
    response = client.post(f"{api}/trials", data="x" * (300 * 1024), content_type="application/json")
    assert response.status_code == 413 and response.json["error"] == "too_large"


def test_form_body_is_415(client, study):
    api = start(client)
    response = client.post(f"{api}/trials", data={"a": "b"})
    assert response.status_code == 415


def test_unknown_token_is_404_everywhere(client, study):
    for path, method in [("", "get"), ("/trials", "post"), ("/consent", "post"), ("/complete", "post"),
                         ("/heartbeat", "post"), ("/device", "post")]:
        response = getattr(client, method)(f"/api/session/nope{path}", json={})
        assert response.status_code == 404 and response.json["error"] == "unknown_session"


def test_participant_isolation(app, client, study):
    api_a, api_b = start(client, "A"), start(client, "B")
    payload_b = answer(schedule_of(app, api_b)[0])
    assert client.post(f"{api_b}/trials", json=payload_b).status_code == 201
    # B's exact payload through A's token is A's own trial: no "duplicate" leaks B's data,
    # and it is judged against A's schedule, not B's.
    through_a = client.post(f"{api_a}/trials", json={**payload_b, **answer(schedule_of(app, api_a)[0]),
                                                     "client_uuid": payload_b["client_uuid"]})
    assert through_a.status_code == 201 and "duplicate" not in through_a.json
    assert client.get(api_a).json["stored_indices"] == [0] and client.get(api_b).json["stored_indices"] == [0]
    with app.app_context():
        rows = {t.session.token: t for t in db.session.scalars(select(Trial))}
        token_a, token_b = api_a.rsplit("/", 1)[-1], api_b.rsplit("/", 1)[-1]
        assert rows[token_a].stimulus_id == schedule_of(app, api_a)[0]["stimulus_id"]
        assert rows[token_b].stimulus_id == schedule_of(app, api_b)[0]["stimulus_id"]
    # A token that is not exactly B's (a prefix, a suffix, another case) reaches nothing.
    for wrong in (token_b[:-1], token_b + "x", token_b.swapcase(), "", "%00"):
        response = client.get(f"/api/session/{wrong}")
        assert response.status_code in (404, 405) and "trials" not in (response.json or {})
        assert client.post(f"/api/session/{wrong}/trials", json=payload_b).status_code in (404, 405)
    assert client.get(f"/run/{token_b[:-1]}").status_code == 404


def test_trials_need_consent_and_practice_first(app, client, study):
    api = start(client, consent=None)
    schedule = schedule_of(app, api)
    assert client.post(f"{api}/trials", json=answer(schedule[0])).json["error"] == "not_in_progress"
    client.post(f"{api}/consent", json={"consent": True})
    main = next(t for t in schedule if t["block"] != "practice")
    assert client.post(f"{api}/trials", json=answer(main)).json["error"] == "practice_not_passed"


def test_resume_reports_next_unsaved_trial(app, client, study):
    api = start(client)
    schedule = schedule_of(app, api)
    for trial in schedule[:6]:
        if trial["trial_index"] != 4:
            assert client.post(f"{api}/trials", json=answer(trial)).status_code == 201
    state = client.get(api).json
    assert state["next_trial_index"] == 4 and state["stored_indices"] == [0, 1, 2, 3, 5]
    assert state["practice_passed"] is True


def test_practice_gate_retry_then_fail(app, client, study):
    api = start(client)
    for trial in schedule_of(app, api)[:4]:
        last = client.post(f"{api}/trials", json=answer(trial, correct=False))
    assert last.json["schedule_changed"] is True and last.json["practice_passed"] is None
    schedule = schedule_of(app, api)
    assert [t["block"] for t in schedule[:8]] == ["practice"] * 8 and len(schedule) == 18
    state = client.get(api).json
    assert state["next_trial_index"] == 4 and state["practice_passed"] is None
    for trial in schedule[4:8]:
        last = client.post(f"{api}/trials", json=answer(trial, correct=False))
    assert last.json["practice_passed"] is False
    state = client.get(api).json
    assert state["status"] == "failed_practice" and state["completion_code"]
    ending = client.post(f"{api}/complete", json={}).json
    assert ending["status"] == "failed_practice"


@pytest.mark.usefixtures("person_pace")
def test_complete_requires_every_trial_then_codes(app, client, study):
    api = start(client)
    run_all(client, app, api, skip={7})
    missing = client.post(f"{api}/complete", json={})
    assert missing.status_code == 409 and missing.json == {
        "error": "missing_trials", "message": "1 trial(s) not stored yet", "missing": [7]}
    client.post(f"{api}/trials", json=answer(schedule_of(app, api)[7]))
    done = client.post(f"{api}/complete")
    assert done.status_code == 200 and done.json["status"] == "completed"
    assert done.json["redirect_url"] == \
        f"https://app.prolific.com/submissions/complete?cc={done.json['completion_code']}"
    assert client.post(f"{api}/complete").json == done.json  # idempotent
    with app.app_context():
        session = db.session.scalars(select(Session)).one()
        assert session.completed_at is not None and session.excluded is False


def test_a_replay_after_completion_is_still_a_duplicate(app, client, study):
    """A queued retry may land after /complete: acknowledged, never stored, never a 409."""
    api = start(client)
    first = answer(schedule_of(app, api)[0])
    assert client.post(f"{api}/trials", json=first).status_code == 201
    with app.app_context():
        seen = db.session.scalars(select(Session)).one().last_seen_at
    for trial in schedule_of(app, api)[1:]:
        assert client.post(f"{api}/trials", json=answer(trial)).status_code == 201
    assert client.post(f"{api}/complete").json["status"] == "completed"
    replay = client.post(f"{api}/trials", json=first)
    assert replay.status_code == 200 and replay.json == {"stored": False, "duplicate": True,
                                                         "trial_index": 0,
                                                         "feedback": {"correct": True}}
    late = client.post(f"{api}/trials", json={**first, "client_uuid": str(uuid.uuid4())})
    assert late.status_code == 409 and late.json["error"] == "not_in_progress"
    with app.app_context():
        session = db.session.scalars(select(Session)).one()
        assert session.last_seen_at > seen  # every stored trial marks the session as alive
        assert db.session.scalar(select(db.func.count()).select_from(Trial)) == len(session.schedule)


def test_failed_catch_trials_give_failed_attention(app, client, study):
    api = start(client)
    for trial in schedule_of(app, api):
        correct = trial["trial_type"] != "catch"
        assert client.post(f"{api}/trials", json=answer(trial, correct)).status_code == 201
    done = client.post(f"{api}/complete").json
    assert done["status"] == "failed_attention"
    codes = {done["completion_code"]}
    with app.app_context():
        session = db.session.scalars(select(Session)).one()
        assert session.excluded and {"catch_failed", "catch_accuracy"} <= set(session.exclusion_reasons)
        assert db.session.scalar(select(db.func.count()).select_from(Trial)) == len(session.schedule)
    other = start(client, "B")
    run_all(client, app, other)
    codes.add(client.post(f"{other}/complete").json["completion_code"])
    assert len(codes) == 2


def test_trial_exclusions_flagged_on_store(app, client, study):
    api = start(client)
    trial = schedule_of(app, api)[0]
    client.post(f"{api}/trials", json=answer(trial, rt_ms=120.0, focus_lost=True, stalls=2))
    with app.app_context():
        row = db.session.scalars(select(Trial)).one()
        assert row.excluded and row.exclusion_reasons == ["anticipation", "stall", "focus_lost"]
        assert row.extra["stalls"] == 2 and row.extra["focus_lost"] is True


def test_frame_order_trial_stored_in_analysis_labels(app, client, study):
    api = start(client, slug="order")
    schedule = schedule_of(app, api)
    for trial in schedule[:2]:
        assert client.post(f"{api}/trials", json=answer(trial)).status_code == 201
    main = next(t for t in schedule if t["trial_type"] == "frame_order" and t["block"] != "practice")
    assert client.post(f"{api}/trials", json=answer(main)).status_code == 201
    with app.app_context():
        row = db.session.scalar(select(Trial).where(Trial.trial_index == main["trial_index"]))
        assert row.response == row.correct_response == main["correct_response"] and row.correct
        assert row.extra["condition"] == main["condition"]
        assert row.extra["hint_frames"] == [h + 1 for h in main["params"]["hint_positions"]]
        # Frame orders have no playback direction: empty, as on model rows and in the codebook.
        assert row.dropped_frames is None and row.direction is None


def test_keys_pressed_before_the_onset_are_stored_with_clip_and_catch_trials(app, client, study):
    api = start(client)
    schedule = schedule_of(app, api)
    shown = [schedule[0], next(t for t in schedule if t["trial_type"] == "catch")]
    for trial in schedule:
        if trial["block"] == "practice" or trial in shown:
            assert client.post(f"{api}/trials", json=answer(trial)).status_code == 201
    with app.app_context():
        rows = {row.trial_index: row for row in db.session.scalars(select(Trial))}
    for trial in shown:
        row = rows[trial["trial_index"]]
        assert row.extra["ignored_inputs"] == [{"t_ms": -120.0, "kind": "key"}], trial["trial_type"]
        assert not row.excluded


def test_an_unchanged_order_mashed_through_the_done_guard_is_excluded(app, client, study):
    """Issue 15: Done clicked through the 300 ms guard gave the initial order as an answer
    (rt 450 ms, no moves, ignored clicks); stored, it is excluded with its own reason."""
    api = start(client, slug="order")
    schedule = schedule_of(app, api)
    practice = [t for t in schedule if t["block"] == "practice"]
    for trial in practice:
        assert client.post(f"{api}/trials", json=answer(trial)).status_code == 201
    main = [t for t in schedule if t["trial_type"] == "frame_order" and t["block"] != "practice"]
    def unchanged(trial, **overrides):  # the order as shown, frames in presented slots
        return answer(trial, moves=[], final_order=list(range(trial["params"]["n_frames"])),
                      **overrides)

    clicks = [{"t_ms": 40.0, "kind": "click"}, {"t_ms": 210.0, "kind": "click"}]
    mashed = unchanged(main[0], rt_ms=450.0, ignored_inputs=clicks)
    considered = unchanged(main[1], rt_ms=6000.0, ignored_inputs=clicks)
    for body in (mashed, considered):
        assert client.post(f"{api}/trials", json=body).status_code == 201
    with app.app_context():
        rows = {row.trial_index: row for row in db.session.scalars(select(Trial))}
    assert rows[main[0]["trial_index"]].exclusion_reasons == ["no_moves_after_ignored_input"]
    assert rows[main[1]["trial_index"]].exclusion_reasons == []


def test_device_heartbeat(app, client, study):
    api = start(client)
    device = {"user_agent": "Mozilla/5.0", "screen_w": 1920, "screen_h": 1080, "window_w": 1800,
              "window_h": 1000, "refresh_hz": 59.94, "device_pixel_ratio": 1.0, "touch": False,
              "video_check_ok": True}
    assert client.post(f"{api}/device", json=device).status_code == 204
    assert client.post(f"{api}/device", json={**device, "screen_w": True}).status_code == 400
    assert client.post(f"{api}/device", json={**device, "gpu": "x"}).status_code == 400
    with app.app_context():
        before = db.session.scalars(select(Session)).one().last_seen_at
    assert client.post(f"{api}/heartbeat", json={}).status_code == 204
    assert client.post(f"{api}/heartbeat", json={"x": 1}).status_code == 400
    with app.app_context():
        session = db.session.scalars(select(Session)).one()
        assert session.last_seen_at > before and session.device_info["device"]["refresh_hz"] == 59.94


@pytest.fixture
def any_db_study(any_db_app, factory):
    factory.aot_study()
    factory.open_study(design="frame-ordering", slug="order", main_blocks=3)
    return any_db_app


DEVICE = {"user_agent": "Mozilla/5.0", "screen_w": 1920, "screen_h": 1080, "window_w": 1800,
          "window_h": 1000, "refresh_hz": 59.94, "device_pixel_ratio": 1.0, "touch": False,
          "video_check_ok": True}
# High, low, one inside text, and the first half of an emoji: JSON can spell them all
# ("\ud800"), Python decodes them, and neither database can store them.
LONE_SURROGATES = ("\ud800", "\udfff", "rvfc\udc00", "\ud83d")


def _string_fields(fields, path=()):
    """(path into the body, field) of every declared string field, nested ones included."""
    for spec in fields:
        if spec.kind == "str":
            yield (*path, spec.name), spec
        elif spec.kind == "object":
            yield from _string_fields(spec.keys, (*path, spec.name))
        elif spec.kind == "list" and spec.items.kind == "object":
            yield from _string_fields(spec.items.keys, (*path, spec.name, 0))


def _surrogate_cases():
    from experiments.trial_types import TRIAL_TYPES
    from webapp.participant.api import DEVICE_FIELDS

    targets = [("study", "trials", TRIAL_TYPES["aot"].FIELDS),
               ("order", "trials", TRIAL_TYPES["frame_order"].FIELDS),
               ("study", "device", DEVICE_FIELDS)]
    return [pytest.param(slug, endpoint, path, id=f"{slug}-{endpoint}-{'.'.join(map(str, path))}")
            for slug, endpoint, fields in targets for path, _ in _string_fields(fields)]


def _with(body, path, value):
    body = json.loads(json.dumps(body))
    *parents, last = path
    target = body
    for key in parents:
        target = target[key]
    target[last] = value
    return body


@pytest.mark.parametrize("slug, endpoint, path", _surrogate_cases())
def test_lone_surrogates_are_400_naming_the_field(any_db_study, slug, endpoint, path):
    app, client = any_db_study, any_db_study.test_client()
    api = start(client, slug=slug)
    # A valid body with every nested list present, so each nested string can be replaced.
    reoffered = [{"kind": "fullscreen_exited_timeout", "presentation": 1}]
    valid = answer(schedule_of(app, api)[0], technical_events=reoffered) \
        if endpoint == "trials" else DEVICE
    for text in LONE_SURROGATES:
        raw = json.dumps(_with(valid, path, text))  # ensure_ascii: the wire holds "\ud800"
        response = client.post(f"{api}/{endpoint}", data=raw, content_type="application/json")
        assert response.status_code == 400, (text, response.status_code)
        assert set(response.json) == {"error", "message"} and path[-1] in response.json["message"]
    state = client.get(api).json
    assert state["stored_indices"] == []
    with app.app_context():
        assert "device" not in db.session.scalars(select(Session)).one().device_info


def _every_declared_string_field():
    """Every string field the participant API declares (trial types and the api module's
    field tuples, nested fields included), so a field added later is covered too."""
    from experiments.trial_types import TRIAL_TYPES, Field
    from webapp.participant import api

    declared = [spec for module in TRIAL_TYPES.values() for spec in module.FIELDS]
    for value in vars(api).values():
        if isinstance(value, Field):
            declared.append(value)
        elif isinstance(value, tuple) and value and all(isinstance(v, Field) for v in value):
            declared.extend(value)
    by_label = {".".join(map(str, path)): spec for path, spec in _string_fields(declared)}
    return [pytest.param(label, spec, id=label) for label, spec in sorted(by_label.items())]


@pytest.mark.parametrize("label, spec", _every_declared_string_field())
def test_every_string_field_refuses_lone_surrogates(label, spec):
    from experiments.trial_types import PayloadError

    for text in LONE_SURROGATES:
        with pytest.raises(PayloadError) as refused:
            spec.check(text, label)
        assert refused.value.code == "invalid_string" and label in refused.value.message


def test_lone_surrogate_in_onset_method_is_an_invalid_string(app, client, study):
    api = start(client)
    raw = json.dumps(answer(schedule_of(app, api)[0], onset_method="\ud800"))
    response = client.post(f"{api}/trials", data=raw, content_type="application/json")
    assert response.status_code == 400 and response.json["error"] == "invalid_string"
    assert "onset_method" in response.json["message"]


def test_surrogate_pairs_and_surrogate_keys(any_db_study):
    """A pair of surrogate escapes is one real character and is stored; a lone surrogate as a
    key is an undeclared field on every endpoint."""
    app, client = any_db_study, any_db_study.test_client()
    api = start(client)
    device = {"user_agent": "Mozilla/5.0 \U0001F600", "screen_w": 1920, "screen_h": 1080,
              "window_w": 1800, "window_h": 1000, "refresh_hz": 60.0, "device_pixel_ratio": 1.0,
              "touch": False, "video_check_ok": True}
    raw = json.dumps(device)
    assert "\\ud83d\\ude00" in raw
    response = client.post(f"{api}/device", data=raw, content_type="application/json")
    assert response.status_code == 204
    with app.app_context():
        stored = db.session.scalars(select(Session)).one().device_info["device"]
        assert stored["user_agent"] == "Mozilla/5.0 \U0001F600"
    for endpoint in ("consent", "device", "trials", "heartbeat", "complete"):
        response = client.post(f"{api}/{endpoint}", data='{"\\ud800": 1}',
                               content_type="application/json")
        assert response.status_code == 400 and response.json["error"] in (
            "unknown_field", "unknown_trial_type"), endpoint


@pytest.mark.parametrize("query", ["participant=%ED%A0%80", "PROLIFIC_PID=a%ED%B0%80b",
                                   "participant=p-1&STUDY_ID=%ED%A0%80"])
def test_entry_link_cannot_carry_a_surrogate(any_db_study, query):
    """Werkzeug decodes the query as UTF-8 with replacement characters, which the recruitment
    id pattern (ASCII only) refuses: nothing undecodable reaches the database."""
    client = any_db_study.test_client()
    assert client.get(f"/p/study?{query}").status_code == 400
    assert client.get("/p/%ED%A0%80?participant=p-1").status_code == 404
    assert client.get("/run/%ED%A0%80").status_code == 404
    assert client.get("/api/session/%ED%A0%80").status_code == 404


def test_idempotent_under_concurrent_replays(any_db_study):
    """Eight simultaneous posts of one trial and two rivals for its index: one row stored."""
    from concurrent.futures import ThreadPoolExecutor

    app = any_db_study
    client = app.test_client()
    api = start(client)
    trial = schedule_of(app, api)[0]
    payload = answer(trial)
    rival = {**payload, "client_uuid": str(uuid.uuid4())}

    def post(body):
        return app.test_client().post(f"{api}/trials", json=body).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(post, [payload] * 8 + [rival] * 2))
    assert statuses.count(201) == 1  # stored once; no 500s and no busy 503s
    assert set(statuses[:8]) <= {200, 201} and set(statuses[8:]) <= {201, 409}
    with app.app_context():
        assert db.session.scalar(select(db.func.count()).select_from(Trial)) == 1


@pytest.mark.usefixtures("person_pace")
def test_canonical_table_reads_stored_trials(app, client, study):
    from webapp.trials import trials_frame

    api = start(client)
    run_all(client, app, api)
    client.post(f"{api}/complete")
    with app.app_context():
        frame = trials_frame("study")
    assert len(frame) == 14 and frame["trial_index"].tolist() == list(range(14))
    aot = frame[frame["trial_type"] == "aot"]
    assert set(aot["direction"]) == {"forward", "backward"} and aot["correct"].all()
    assert set(aot["response"]) <= {"F", "B"} and (aot["categories"].map(len) == 1).all()
    assert set(frame["block"]) == {"practice", "main-1", "main-2"} and not frame["excluded"].any()


_FUZZ_SESSIONS = weakref.WeakKeyDictionary()
# Text includes lone surrogates ("\ud800" in JSON), which Hypothesis leaves out unless asked.
CHARACTERS = st.characters() | st.characters(categories=["Cs"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) |
    st.text(CHARACTERS, max_size=20),
    lambda inner: st.lists(inner, max_size=4) |
    st.dictionaries(st.text(CHARACTERS, max_size=12), inner, max_size=4),
    max_leaves=12)
FIELD_NAMES = st.sampled_from(["client_uuid", "trial_index", "trial_type", "rt_ms", "timed_out",
                               "response", "key", "onset_method", "onset_callbacks",
                               "dropped_frames", "stalls", "initial_order", "final_order", "moves",
                               "focus_lost", "bogus"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=8), st.booleans())
def test_fuzzed_trials_never_500(app, client, study, body, from_valid):
    """Whatever JSON object arrives, the answer is a 2xx/4xx with a JSON error, never a 500."""
    if app not in _FUZZ_SESSIONS:  # fixtures are shared by all examples: one session for all
        _FUZZ_SESSIONS[app] = start(client, "fuzz")
    api = _FUZZ_SESSIONS[app]
    if from_valid:
        body = {**answer(schedule_of(app, api)[0]), **body}
    response = client.post(f"{api}/trials", data=json.dumps(body), content_type="application/json")
    assert response.status_code in (200, 201, 400, 409), response.json
    if response.status_code >= 400:
        assert response.json["error"] and response.json["message"]


@pytest.mark.usefixtures("person_pace")
def test_trial_flags_follow_a_rule_changed_mid_study(app, client, study):
    """/complete and the CLI recompute both rewrite stored trial flags; no row is deleted."""
    from webapp.models import Study

    def set_min_rt(ms):
        with app.app_context():
            row = db.session.scalar(select(Study).where(Study.slug == "study"))
            snapshot = dict(row.design_snapshot)
            snapshot["exclusions"] = {**snapshot["exclusions"], "min_rt_ms": ms}
            row.design_snapshot = snapshot
            db.session.commit()

    def flags():
        with app.app_context():
            return [(t.excluded, t.exclusion_reasons)
                    for t in db.session.scalars(select(Trial).order_by(Trial.trial_index))]

    api = start(client)
    run_all(client, app, api)  # every RT is 812.5 ms
    assert flags() == [(False, [])] * 14
    set_min_rt(1000.0)
    client.post(f"{api}/complete")
    assert flags() == [(True, ["anticipation"])] * 14
    set_min_rt(200.0)
    assert app.test_cli_runner().invoke(args=["exclusions", "recompute", "study"]).exit_code == 0
    assert flags() == [(False, [])] * 14


@pytest.mark.usefixtures("person_pace")
def test_exclusions_recomputed_by_cli_flags_only(app, client, study):
    from webapp.models import Study

    api = start(client)
    run_all(client, app, api)
    assert client.post(f"{api}/complete").json["status"] == "completed"
    with app.app_context():
        row = db.session.scalar(select(Study).where(Study.slug == "study"))
        snapshot = dict(row.design_snapshot)
        snapshot["exclusions"] = {**snapshot["exclusions"], "min_mean_trial_ms": 5000.0}
        row.design_snapshot = snapshot
        db.session.commit()
    result = app.test_cli_runner().invoke(args=["exclusions", "recompute", "study"])
    assert result.exit_code == 0 and "1 excluded" in result.output
    with app.app_context():
        session = db.session.scalars(select(Session)).one()
        assert session.excluded and session.exclusion_reasons == ["too_little_time"]
        assert db.session.scalar(select(db.func.count()).select_from(Trial)) == len(session.schedule)
    missing = app.test_cli_runner().invoke(args=["exclusions", "recompute", "nope"])
    assert missing.exit_code != 0 and "nope" in missing.output


def test_recompute_labels_the_study_with_the_rules_it_applied(app, client, study):
    from webapp.models import Study

    api = start(client)
    run_all(client, app, api)
    client.post(f"{api}/complete")
    with app.app_context():
        row = db.session.scalar(select(Study).where(Study.slug == "study"))
        snapshot = dict(row.design_snapshot)
        snapshot["exclusions"] = {**snapshot["exclusions"], "version": "2099.1-test",
                                  "min_mean_trial_ms": 5000.0}
        row.design_snapshot = snapshot
        db.session.commit()
    assert app.test_cli_runner().invoke(args=["exclusions", "recompute", "study"]).exit_code == 0
    with app.app_context():
        row = db.session.scalar(select(Study).where(Study.slug == "study"))
        assert row.exclusion_rules_version == "2099.1-test"
