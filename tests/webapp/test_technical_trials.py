"""Trials during which the page left fullscreen (technical events: timed out or answered)
through the participant API: stored with their events, never held against the participant,
and accepted only in the shape the runner sends them."""
import pytest
from sqlalchemy import select

from experiments.exclusions import ExclusionRules
from tests.webapp.test_api import answer, schedule_of, start
from webapp.extensions import db
from webapp.models import Session, Trial

# Sessions answered at a person's pace (tests/factories.py), so only the rules under test flag them.
pytestmark = pytest.mark.usefixtures("person_pace")

def events(n, last="fullscreen_exited_timeout"):
    kinds = ["fullscreen_exited_timeout"] * (n - 1) + [last]
    return [{"kind": kind, "presentation": i + 1} for i, kind in enumerate(kinds[:n])]


def missed(trial, technical: bool):
    """A trial the participant did not answer; ``technical``: the page left fullscreen during
    it and the two re-offers (the shape the runner stores at the cap), else a plain miss in
    fullscreen (a timeout out of fullscreen below the cap is offered again, never sent)."""
    body = answer(trial, rt_ms=None, timed_out=True, response=None, key=None)
    return {**body, "fullscreen_exited": True, "technical_events": events(3)} if technical \
        else body


def answered_out_of_fullscreen(trial, correct=True):
    """A trial answered each time after the page left fullscreen (WebKitGTK's second F), as
    the runner stores it at the cap: its answer is no answer of the participant's."""
    return answer(trial, correct, fullscreen_exited=True,
                  technical_events=events(3, last="fullscreen_exited_answer"))


@pytest.fixture
def study(factory):
    factory.stimulus_set("tiny", per_category=2)
    factory.catch_set()
    factory.open_study(main_blocks=2)


@pytest.fixture
def lenient(factory, study):
    """A study whose technical events never exclude, to see the timeout rule alone."""
    factory.open_study(slug="lenient", main_blocks=2,
                       exclusions=ExclusionRules(max_technical_events=100))


def run(client, app, api, miss=lambda trial: False, technical=True):
    """Stores every trial: the ones ``miss`` picks unanswered, the others correctly."""
    for trial in schedule_of(app, api):
        body = missed(trial, technical) if miss(trial) else answer(trial)
        response = client.post(f"{api}/trials", json=body)
        assert response.status_code == 201, response.json
    return client.post(f"{api}/complete").json


def session_and_trials(app, api):
    with app.app_context():
        session = db.session.scalar(select(Session).where(Session.token == api.rsplit("/", 1)[-1]))
        trials = db.session.scalars(select(Trial).where(Trial.session_id == session.id)
                                    .order_by(Trial.trial_index)).all()
        return session, {t.trial_index: t for t in trials}


def is_catch(trial):
    return trial["trial_type"] == "catch"


def test_a_technical_catch_timeout_never_fails_the_session(app, client, study):
    api = start(client)
    done = run(client, app, api, miss=is_catch)
    assert done["status"] == "completed"
    session, trials = session_and_trials(app, api)
    assert not session.excluded and session.exclusion_reasons == []
    catch = [t for t in trials.values() if t.trial_type == "catch"]
    assert len(catch) == 2
    for trial in catch:
        assert trial.response is None and not trial.correct
        assert trial.extra["technical"] is True and trial.extra["technical_events"] == events(3)
        assert trial.exclusion_reasons == ["technical"]  # kept flagged, never deleted


def test_an_unflagged_catch_timeout_still_fails_the_session(app, client, study):
    api = start(client, "p-2")
    done = run(client, app, api, miss=is_catch, technical=False)
    assert done["status"] == "failed_attention"
    session, trials = session_and_trials(app, api)
    assert {"catch_failed", "catch_accuracy"} <= set(session.exclusion_reasons)
    assert all(not t.extra.get("technical") and t.exclusion_reasons == ["timeout"]
               for t in trials.values() if t.trial_type == "catch")


@pytest.mark.parametrize("technical, reasons", [(True, []), (False, ["too_many_timeouts"])])
def test_technical_timeouts_are_not_counted_as_timeouts(app, client, lenient, technical, reasons):
    api = start(client, slug="lenient")
    three = {t["trial_index"] for t in schedule_of(app, api)
             if t["trial_type"] == "aot" and t["block"] != "practice"}
    three = set(sorted(three)[:3])  # 3 of 8 main trials: over the 0.2 timeout fraction
    done = run(client, app, api, miss=lambda t: t["trial_index"] in three, technical=technical)
    assert done["status"] == "completed"
    session, _ = session_and_trials(app, api)
    assert session.exclusion_reasons == reasons


def test_too_many_technical_events_exclude_without_failing_attention(app, client, study):
    """The excuse is bounded: a browser's word that it left fullscreen buys at most
    ``max_technical_events`` (6: two trials lost three times over) before the session's data
    are excluded; the participant still gets the completion code, not the screen-out one."""
    api = start(client, "p-3")
    first_aot = min(t["trial_index"] for t in schedule_of(app, api)
                    if t["trial_type"] == "aot" and t["block"] != "practice")
    done = run(client, app, api, miss=lambda t: is_catch(t) or t["trial_index"] == first_aot)
    assert done["status"] == "completed"
    session, _ = session_and_trials(app, api)
    assert session.excluded and session.exclusion_reasons == ["too_many_technical"]


@pytest.mark.parametrize("technical, passed", [(1, True), (4, None)])
def test_technical_practice_trials_are_left_out_of_the_gate(any_db_app, factory, technical,
                                                           passed):
    """The gate reads the flag in SQL (on SQLite and PostgreSQL); an attempt of technical
    trials only shows nothing, so a new attempt follows (``None``: practice again)."""
    factory.stimulus_set("tiny", per_category=2)
    factory.catch_set()
    factory.open_study(main_blocks=2)
    client = any_db_app.test_client()
    api = start(client, "p-4")
    practice = [t for t in schedule_of(any_db_app, api) if t["block"] == "practice"]
    assert len(practice) == 4
    for i, trial in enumerate(practice):
        body = missed(trial, technical=True) if i < technical else answer(trial)
        assert client.post(f"{api}/trials", json=body).status_code == 201
    assert client.get(api).json["practice_passed"] is passed


@pytest.mark.parametrize("overrides, code", [
    # The flag needs the stored presentation itself timed out with fullscreen exited.
    ({"fullscreen_exited": False}, "inconsistent"),
    ({"timed_out": False, "rt_ms": 700.0, "response": "F", "key": "f"}, "inconsistent"),
    # Below the cap, the runner would have offered the trial again.
    ({"technical_events": events(1)}, "inconsistent"),
    ({"technical_events": events(4)}, "out_of_range"),
    ({"technical_events": [{"kind": "fullscreen_exited_timeout", "presentation": 2}] * 3},
     "inconsistent"),
    ({"technical_events": [{"kind": "tab_hidden", "presentation": 1}]}, "out_of_range"),
    ({"technical": True}, "unknown_field"),  # the server decides the flag, never the browser
    # Answered after the page left fullscreen: offered again below the cap (issue 15) ...
    ({"timed_out": False, "rt_ms": 700.0, "response": "F", "key": "f", "technical_events": []},
     "inconsistent"),
    ({"timed_out": False, "rt_ms": 700.0, "response": "F", "key": "f",
      "technical_events": events(2, last="fullscreen_exited_answer")}, "inconsistent"),
    # ... and so is a timeout, even one sent without its events.
    ({"technical_events": []}, "inconsistent"),
])
def test_technical_events_are_accepted_only_as_the_runner_sends_them(
        app, client, study, overrides, code):
    api = start(client, "p-5")
    trial = schedule_of(app, api)[0]
    if "key" in overrides:  # the key that gives the response in this session's mapping
        overrides = {**overrides, "key": trial["keys"][overrides["response"]]}
    response = client.post(f"{api}/trials", json={**missed(trial, technical=True), **overrides})
    assert response.status_code == 400 and response.json["error"] == code, response.json
    assert "technical" in response.json["message"]


def test_an_answer_after_a_re_offer_is_stored_with_its_event(app, client, study):
    api = start(client, "p-6")
    trial = schedule_of(app, api)[0]
    body = answer(trial, fullscreen_exited=False, technical_events=events(1))
    assert client.post(f"{api}/trials", json=body).status_code == 201
    _, trials = session_and_trials(app, api)
    stored = trials[trial["trial_index"]]
    assert stored.correct and stored.extra["technical"] is False
    assert stored.extra["technical_events"] == events(1)
    # Not a first look at the clip (review 15b D4): kept, but excluded from analysis.
    assert stored.exclusion_reasons == ["reoffered"]


def test_an_answer_given_out_of_fullscreen_is_technical_and_never_analysed(app, client, study):
    """Issue 15: WebKitGTK swallowed the first F and left fullscreen; the second F was stored
    as a normal answer (RT ~300 ms too long).  Answered out of fullscreen every time it was
    offered, the trial is stored technical: its answer kept for the record, excluded, and a
    wrong answer to a catch trial fails nothing."""
    api = start(client, "p-7")
    schedule = schedule_of(app, api)
    catches = [t for t in schedule if is_catch(t) and t["block"] != "practice"]
    for trial in schedule:
        body = answered_out_of_fullscreen(trial, correct=False) if trial in catches \
            else answer(trial)
        response = client.post(f"{api}/trials", json=body)
        assert response.status_code == 201, response.json
    assert client.post(f"{api}/complete").json["status"] == "completed"
    session, trials = session_and_trials(app, api)
    assert not session.excluded and session.exclusion_reasons == []
    for trial in (trials[t["trial_index"]] for t in catches):
        assert trial.response is not None and trial.rt_ms is not None and not trial.correct
        assert trial.extra["technical"] is True and trial.extra["fullscreen_exited"] is True
        assert trial.extra["technical_events"][-1]["kind"] == "fullscreen_exited_answer"
        assert trial.excluded and trial.exclusion_reasons == ["technical"]


def test_a_technical_answer_is_left_out_of_the_rt_analysis(app, client, study):
    from analysis import loading
    from webapp.trials import trials_frame

    api = start(client, "p-8")
    schedule = schedule_of(app, api)
    spoiled = next(t for t in schedule if t["trial_type"] == "aot" and t["block"] != "practice")
    for trial in schedule:
        body = answered_out_of_fullscreen(trial) if trial is spoiled else answer(trial)
        assert client.post(f"{api}/trials", json=body).status_code == 201
    client.post(f"{api}/complete")
    with app.app_context():
        data = trials_frame()
    analysed = loading.included(data)
    assert spoiled["trial_index"] in set(data["trial_index"])
    assert spoiled["trial_index"] not in set(analysed["trial_index"])
    assert len(analysed) == int((data["block"] != "practice").sum()) - 1


def background_tab(trial):
    """A trial measured in a background tab: animation frames at ~1 Hz, so the frame
    interval the browser measured is out of its bounds (issue 28: 1016.6 ms)."""
    return answer(trial, refresh_ms=1016.6, frames_total=90, frames_shown=3)


def test_a_measurement_out_of_its_bounds_is_stored_technical_with_the_reason(app, client, study):
    api = start(client, "p-background")
    trial = next(t for t in schedule_of(app, api) if t["block"] == "practice")
    response = client.post(f"{api}/trials", json=background_tab(trial))
    assert response.status_code == 201, response.json
    _, trials = session_and_trials(app, api)
    row = trials[trial["trial_index"]]
    assert row.extra["technical"] is True and row.extra["refresh_ms"] is None
    assert row.extra["technical_reasons"] == ["refresh_ms = 1016.6 is outside [0.0, 1000.0]"]
    assert row.exclusion_reasons == ["technical"]
    # A field that is no measurement is still refused out of its bounds.
    bad = {**answer(trial), "rt_ms": -1.0}
    assert client.post(f"{api}/trials", json=bad).json["error"] == "out_of_range"


def counts(total, shown=None, late=0, dropped=0):
    return {"frames_total": total, "frames_shown": total if shown is None else shown,
            "frames_late": late, "frames_dropped": dropped, "total_frames": total}


def test_frame_counts_that_contradict_the_served_clip_make_a_trial_technical(app, client, study):
    """The server checks what it served: a trial claiming 48 frames of a 90-frame clip, more
    frames shown than the clip has, or more late and dropped ones, was stored as it came and
    read by timing quality; it is stored technical with the reason, its counts left out.
    A catch trial's variant has the frames of the clip it was made like (90, not the stored
    catch video's 60)."""
    api = start(client, "p-frames")
    schedule = schedule_of(app, api)
    for trial in (t for t in schedule if t["block"] == "practice"):
        assert client.post(f"{api}/trials", json=answer(trial, **counts(90))).status_code == 201
    clips = [t for t in schedule if t["block"] != "practice" and not is_catch(t)]
    catches = [t for t in schedule if is_catch(t)]
    sent = {clips[0]["trial_index"]: counts(48), clips[1]["trial_index"]: counts(90, shown=91),
            clips[2]["trial_index"]: counts(90, late=50, dropped=41),
            clips[3]["trial_index"]: counts(90, shown=80, late=3, dropped=10),
            catches[0]["trial_index"]: counts(90), catches[1]["trial_index"]: counts(60)}
    for index, body in sent.items():
        trial = next(t for t in schedule if t["trial_index"] == index)
        response = client.post(f"{api}/trials", json=answer(trial, **body))
        assert response.status_code == 201, response.json
    _, trials = session_and_trials(app, api)
    reasons = {index: trials[index].extra.get("technical_reasons") for index in sent}
    assert reasons == {
        clips[0]["trial_index"]: ["frames_total = 48 is not the 90 frames of the clip served"],
        clips[1]["trial_index"]: ["frames_shown = 91 is more than frames_total = 90"],
        clips[2]["trial_index"]: ["frames_late + frames_dropped = 50 + 41 is more than "
                                  "frames_total = 90"],
        clips[3]["trial_index"]: None, catches[0]["trial_index"]: None,
        catches[1]["trial_index"]: ["frames_total = 60 is not the 90 frames of the clip served"]}
    for index, why in reasons.items():
        row = trials[index]
        assert row.extra["technical"] is bool(why)
        assert (row.exclusion_reasons == ["technical"]) is bool(why)
        kept = [row.extra[name] for name in ("frames_total", "frames_shown", "total_frames")]
        assert kept == ([None, None, None] if why else [sent[index]["frames_total"],
                                                        sent[index]["frames_shown"],
                                                        sent[index]["frames_total"]])
        assert (row.dropped_frames is None) is bool(why)


def test_a_practice_the_browser_could_not_measure_is_run_again_as_such_never_failed(
        app, client, study):
    """Practice attempts of technical trials only do not count toward max_attempts (the
    design's 2): they are run again, said as such, and after MAX_TECHNICAL_ATTEMPTS of them
    the session ends screened out, never failed_practice."""
    from webapp.participant.progress import MAX_TECHNICAL_ATTEMPTS

    api = start(client, "p-background-practice")
    for attempt in range(1, MAX_TECHNICAL_ATTEMPTS + 2):
        practice = [t for t in schedule_of(app, api) if t["block"] == "practice"
                    and t.get("practice_attempt", 1) == attempt]
        for trial in practice:
            assert client.post(f"{api}/trials", json=background_tab(trial)).status_code == 201
        state = client.get(api).json
        if attempt <= MAX_TECHNICAL_ATTEMPTS:
            assert (state["status"], state["practice_rerun"]) == ("in_progress", "technical")
    assert state["status"] == "screened_out"
    session, _ = session_and_trials(app, api)
    assert session.exclusion_reasons == ["all_technical"]


def test_a_failed_practice_after_a_technical_one_still_has_its_attempts(app, client, study):
    api = start(client, "p-technical-then-wrong")
    for attempt, body in ((1, background_tab), (2, lambda t: answer(t, correct=False))):
        for trial in [t for t in schedule_of(app, api) if t["block"] == "practice"
                      and t.get("practice_attempt", 1) == attempt]:
            assert client.post(f"{api}/trials", json=body(trial)).status_code == 201
    state = client.get(api).json
    assert (state["status"], state["practice_rerun"]) == ("in_progress", "failed")


def test_a_technical_practice_trial_tells_no_verdict(app, client, study):
    """A practice trial's feedback says whether the stored answer was right; a technical
    one is not judged, or a script would learn what each file shows by claiming a
    background tab (outside review, issue 28's technical path)."""
    api = start(client, "p-probe")
    practice = [t for t in schedule_of(app, api) if t["block"] == "practice"]
    assert any(t["params"].get("feedback") for t in practice)
    for trial in practice:
        reply = client.post(f"{api}/trials", json=background_tab(trial)).json
        assert "feedback" not in reply, reply
    measured = next(t for t in schedule_of(app, api) if t["block"] == "practice"
                    and t.get("practice_attempt") == 2 and t["params"].get("feedback"))
    assert client.post(f"{api}/trials", json=answer(measured)).json["feedback"] == {
        "correct": True}


def test_a_script_that_claims_background_tabs_to_skip_the_clips_is_not_approved(
        app, client, study):
    """A bot that marks every trial but one technical (an out-of-bounds refresh_ms) kept
    1 of 1 right and was approved for payment: each such trial is an excuse, and more than
    max_technical_events of them leave the session to the researcher."""
    api = start(client, "p-bot")
    for attempt in (1, 2, 3):  # practice: technical until it is answered
        for trial in [t for t in schedule_of(app, api) if t["block"] == "practice"
                      and t.get("practice_attempt", 1) == attempt]:
            body = background_tab(trial) if attempt < 3 else answer(trial)
            assert client.post(f"{api}/trials", json=body).status_code == 201
    main = [t for t in schedule_of(app, api) if t["block"] != "practice"]
    for i, trial in enumerate(main):
        body = answer(trial) if i == 0 else {**background_tab(trial), "rt_ms": 0.0}
        assert client.post(f"{api}/trials", json=body).status_code == 201, trial
    assert client.post(f"{api}/complete").json["status"] == "completed"
    session, _ = session_and_trials(app, api)
    assert session.excluded and "too_many_technical" in session.exclusion_reasons
