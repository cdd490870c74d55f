import math
import uuid

import pytest

from experiments.trial_types import TRIAL_TYPES, PayloadError, validate

UUID = str(uuid.uuid4())


def aot(**overrides):
    payload = {"client_uuid": UUID, "trial_index": 3, "trial_type": "aot", "rt_ms": 734.25,
               "timed_out": False, "response": "F", "key": "f", "onset_method": "element-timing",
               "onset_callbacks": [{"presentedFrames": 1, "mediaTime": 0.0,
                                    "presentationTime": 1000.5, "expectedDisplayTime": 1016.9}],
               "onset_time_ms": 1016.9, "key_time_ms": 1751.15, "dropped_frames": 0,
               "total_frames": 90, "stalls": 0, "stall_ms": 0.0, "focus_lost": False,
               "fullscreen_exited": False}
    payload.update(overrides)
    return payload


def ordering(**overrides):
    payload = {"client_uuid": UUID, "trial_index": 5, "trial_type": "frame_order",
               "rt_ms": 5123.0, "timed_out": False, "initial_order": [0, 1, 2, 3],
               "final_order": [2, 1, 0, 3],
               "moves": [{"t_ms": 900.0, "from": 2, "to": 0, "via": "mouse"}]}
    payload.update(overrides)
    return payload


SCHEDULED = {"trial_index": 5, "trial_type": "frame_order",
             "params": {"n_frames": 4, "presented_order": [0, 1, 2, 3], "hint_positions": [3]}}


def test_declared_fields_are_unique_and_carry_the_client_uuid():
    for module in TRIAL_TYPES.values():
        names = [f.name for f in module.FIELDS]
        assert len(names) == len(set(names)) and "client_uuid" in names


def test_valid_payloads_pass_with_defaults():
    fields = validate(aot())
    assert fields["rt_ms"] == 734.25 and fields["onset_callbacks"][0]["presentedFrames"] == 1
    minimal = validate({k: aot()[k] for k in ("client_uuid", "trial_index", "trial_type", "rt_ms",
                                              "timed_out", "response")})
    assert minimal["stalls"] == 0 and minimal["focus_lost"] is False
    # Catch trials are presented and posted as arrow-of-time trials: "catch" is never sent.
    with pytest.raises(PayloadError, match="trial_type must be one of"):
        validate(aot(trial_type="catch"))
    catch = {"trial_index": 3, "trial_type": "catch", "params": {}}
    assert validate(aot(), catch)["trial_type"] == "aot"
    assert validate(ordering(), SCHEDULED)["final_order"] == [2, 1, 0, 3]
    timeout = validate(aot(response=None, rt_ms=None, timed_out=True, key=None, key_time_ms=None))
    assert timeout["response"] is None


@pytest.mark.parametrize("payload, code", [
    (aot(extra_field=1), "unknown_field"),
    (aot(rt_ms=True), "wrong_type"),
    (aot(trial_index=False), "wrong_type"),
    (aot(dropped_frames=True), "wrong_type"),
    (aot(rt_ms=math.nan), "non_finite"),
    (aot(rt_ms=math.inf), "non_finite"),
    (aot(onset_time_ms=-math.inf), "non_finite"),
    (aot(rt_ms="734"), "wrong_type"),
    (aot(response="forward"), "out_of_range"),
    (aot(rt_ms=-1.0), "out_of_range"),
    (aot(rt_ms=1e9), "out_of_range"),
    (aot(trial_index=-1), "out_of_range"),
    (aot(trial_index=1.5), "wrong_type"),
    (aot(client_uuid="not-a-uuid"), "invalid_uuid"),
    (aot(timed_out="no"), "wrong_type"),
    (aot(onset_callbacks=[{}] * 5), "out_of_range"),
    (aot(onset_callbacks=[{"presentedFrames": 1}]), "missing_field"),
    (aot(onset_callbacks=[{"presentedFrames": 1, "mediaTime": 0, "presentationTime": 1,
                           "expectedDisplayTime": 1, "x": 2}]), "unknown_field"),
    (aot(timed_out=True), "inconsistent"),
    (aot(trial_type="dance"), "unknown_trial_type"),
    (aot(onset_method="rvfc\x00"), "invalid_string"),
    (aot(key="f\n"), "invalid_string"),
    ({k: v for k, v in aot().items() if k != "response"}, "missing_field"),
    (aot(initial_order=[0, 1]), "unknown_field"),  # an ordering field on an aot trial
    (ordering(response="F"), "unknown_field"),  # an aot field on an ordering trial
    (ordering(moves=[{"t_ms": 1, "from": 0, "to": 1, "via": "telepathy"}]), "out_of_range"),
    (ordering(moves=[{"t_ms": 1, "from": 0, "to": 1, "via": "mouse"}] * 501), "out_of_range"),
    (ordering(final_order="0123"), "wrong_type"),
    ([1, 2], "wrong_type"),
])
def test_invalid_payloads(payload, code):
    with pytest.raises(PayloadError) as caught:
        validate(payload)
    assert caught.value.code == code and caught.value.message
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("overrides, code", [
    ({"final_order": [0, 1, 2]}, "out_of_range"),
    ({"final_order": [0, 0, 1, 3]}, "out_of_range"),
    ({"initial_order": [1, 0, 2, 3], "final_order": [1, 0, 2, 3]}, "inconsistent"),
    ({"final_order": [3, 1, 2, 0]}, "inconsistent"),  # the hint frame in slot 3 moved
    ({"moves": [{"t_ms": 1, "from": 0, "to": 7, "via": "keyboard"}]}, "out_of_range"),
])
def test_ordering_checked_against_schedule(overrides, code):
    with pytest.raises(PayloadError) as caught:
        validate(ordering(**overrides), SCHEDULED)
    assert caught.value.code == code


def test_trial_type_must_match_schedule():
    with pytest.raises(PayloadError) as caught:
        validate(aot(trial_index=5), SCHEDULED)
    assert caught.value.code == "trial_type_mismatch"


def test_ignored_inputs_are_declared_and_checked():
    fields = validate(ordering(ignored_inputs=[{"t_ms": 0.0, "kind": "click"}]), SCHEDULED)
    assert fields["ignored_inputs"] == [{"t_ms": 0.0, "kind": "click"}]
    assert validate(ordering(), SCHEDULED)["ignored_inputs"] == []
    for bad in ([{"t_ms": 1.0, "kind": "tap"}], [{"t_ms": 1.0}], [{"kind": "click"}] * 101):
        with pytest.raises(PayloadError):
            validate(ordering(ignored_inputs=bad), SCHEDULED)


def test_a_trial_that_did_not_time_out_needs_its_response():
    # The red team stored {"response": null, "timed_out": false}: an answer that is neither.
    with pytest.raises(PayloadError, match="did not time out"):
        validate(aot(response=None, timed_out=False))
    assert validate(aot(response=None, timed_out=True, rt_ms=None, key=None))["response"] is None


def clicks(*times):
    return [{"t_ms": t, "kind": "click"} for t in times]


def keys(*times):
    return [{"t_ms": t, "kind": "key"} for t in times]


@pytest.mark.parametrize("payload, scheduled, code", [
    # Review 15b: ignored input where the trial takes an answer, or out of time order.
    (aot(ignored_inputs=keys(0.0)), None, "out_of_range"),  # a key at the onset answers
    (aot(ignored_inputs=keys(-10.0, -50.0)), None, "inconsistent"),
    (ordering(ignored_inputs=clicks(-12.5)), SCHEDULED, "out_of_range"),
    (ordering(ignored_inputs=clicks(300.0)), SCHEDULED, "out_of_range"),  # Done took it
    (ordering(ignored_inputs=clicks(5000.0)), SCHEDULED, "out_of_range"),
    (ordering(ignored_inputs=clicks(200.0, 100.0)), SCHEDULED, "inconsistent"),
    # An ordering answer is a click on Done, no sooner than its guard.
    (ordering(rt_ms=None), SCHEDULED, "inconsistent"),
    (ordering(rt_ms=299.9), SCHEDULED, "out_of_range"),
    (ordering(rt_ms=12.0, timed_out=True), SCHEDULED, "inconsistent"),
    # A timed-out clip has neither RT nor key.
    (aot(response=None, timed_out=True, rt_ms=700.0, key=None), None, "inconsistent"),
    (aot(response=None, timed_out=True, rt_ms=None, key="f"), None, "inconsistent"),
])
def test_impossible_timings_are_refused(payload, scheduled, code):
    with pytest.raises(PayloadError) as caught:
        validate(payload, scheduled)
    assert caught.value.code == code and caught.value.message


def test_possible_timings_pass():
    fields = validate(ordering(rt_ms=300.0, ignored_inputs=clicks(0.0, 0.0, 120.0, 299.9)),
                      SCHEDULED)
    assert fields["ignored_inputs"] == clicks(0.0, 0.0, 120.0, 299.9)
    assert validate(aot(ignored_inputs=keys(-900.0, -0.5)))["ignored_inputs"] == keys(-900.0, -0.5)
    assert validate(ordering(rt_ms=None, timed_out=True), SCHEDULED)["rt_ms"] is None


def test_the_done_guard_matches_the_browser():
    from pathlib import Path

    from experiments.trial_types.frame_order import DONE_GUARD_MS
    source = (Path(__file__).parents[2] / "static/js/trials/frame_order.js").read_text()
    assert f"export const MIN_INPUT_MS = {DONE_GUARD_MS:g};" in source


def test_onset_methods_are_the_browser_s_and_nothing_else():
    """onset_method was any string up to 40 characters ('=1+1' reached the exports); it is one
    of onset.js's ONSET_METHODS, whose base list is timing_quality's ONSET_PRECISION."""
    import json
    import re
    from pathlib import Path

    from experiments.timing_quality import ONSET_PRECISION
    from experiments.trial_types.video import ONSET_METHODS
    source = (Path(__file__).parents[2] / "static/js/onset.js").read_text()
    declared = re.search(r"^const METHODS = (\[[^\]]*\]);$", source, re.M)
    assert declared and tuple(json.loads(declared[1])) == ONSET_PRECISION
    assert ("export const ONSET_METHODS = [...METHODS, ...METHODS.map((method) => "
            "`canvas-${method}`)];") in source
    for method in (*ONSET_METHODS, None):
        assert validate(aot(onset_method=method))["onset_method"] == method
    for method in ("=1+1", "rvfc", "canvas-", "Element-Timing"):
        with pytest.raises(PayloadError, match="onset_method must be one of") as caught:
            validate(aot(onset_method=method))
        assert caught.value.code == "out_of_range"


MAPPING = {"f": "B", "j": "F"}


@pytest.mark.parametrize("overrides, message", [
    ({"key": "k", "response": "F"}, "response keys"),
    ({"key": None, "response": "F"}, "response keys"),
    ({"key": "f", "response": "F"}, "label of key 'f'"),
])
def test_an_answer_must_be_its_key_s_label_in_the_session_mapping(overrides, message):
    catch = {"trial_index": 3, "trial_type": "catch", "params": {}}
    for scheduled in (None, catch):
        with pytest.raises(PayloadError, match=message) as caught:
            validate(aot(**overrides), scheduled, key_mapping=MAPPING)
        assert caught.value.code == "inconsistent"
    assert validate(aot(key="f", response="B"), key_mapping=MAPPING)["response"] == "B"
    assert validate(aot(key="j", response="F"), catch, key_mapping=MAPPING)["key"] == "j"
    missed = aot(response=None, timed_out=True, rt_ms=None, key=None, key_time_ms=None)
    assert validate(missed, key_mapping=MAPPING)["response"] is None
    # Frame orders have no keys: the mapping changes nothing.
    assert validate(ordering(), SCHEDULED, key_mapping=MAPPING)["rt_ms"] == 5123.0


def events(n, last="fullscreen_exited_timeout"):
    """The events of ``n`` presentations that left fullscreen, the first ones timed out."""
    kinds = ["fullscreen_exited_timeout"] * (n - 1) + [last]
    return [{"kind": kind, "presentation": i + 1} for i, kind in enumerate(kinds[:n])]


MISSED = dict(response=None, timed_out=True, rt_ms=None, key=None, fullscreen_exited=True)


def test_technical_events_are_declared_for_every_trial_type():
    for module in TRIAL_TYPES.values():
        assert "technical_events" in [f.name for f in module.FIELDS]
    assert validate(aot())["technical_events"] == []
    assert validate(aot(**MISSED, technical_events=events(3)))["technical_events"] == events(3)
    assert validate(aot(technical_events=events(2)))["technical_events"] == events(2)
    ordering_missed = ordering(timed_out=True, rt_ms=None, fullscreen_exited=True,
                               technical_events=events(3))
    assert validate(ordering_missed, SCHEDULED)["technical_events"] == events(3)


@pytest.mark.parametrize("payload", [
    aot(technical_events=events(3)),  # answered: the last presentation was no timeout
    aot(**{**MISSED, "fullscreen_exited": False}, technical_events=events(3)),
    aot(**MISSED, technical_events=events(2)),  # the runner would have offered it again
    aot(technical_events=[{"kind": "fullscreen_exited_timeout", "presentation": 2}]),
    ordering(timed_out=True, rt_ms=None, technical_events=events(3)),
    # Issue 15: the page left fullscreen, then a key answered (WebKitGTK's second F, a key
    # after Escape).  The runner offers that trial again, so below the cap it cannot be sent.
    aot(fullscreen_exited=True),
    aot(fullscreen_exited=True, technical_events=events(2)),
    aot(**MISSED),  # a timeout out of fullscreen without its events
    ordering(fullscreen_exited=True, technical_events=events(1)),
    # At the cap the last event is the stored presentation's own kind.
    aot(fullscreen_exited=True, technical_events=events(3)),
    aot(**MISSED, technical_events=events(3, last="fullscreen_exited_answer")),
])
def test_inconsistent_technical_events_are_refused(payload):
    with pytest.raises(PayloadError) as caught:
        validate(payload)
    assert caught.value.code == "inconsistent" and "technical" in caught.value.message


@pytest.mark.parametrize("bad, code", [
    (events(4), "out_of_range"),
    ([{"kind": "focus_lost", "presentation": 1}], "out_of_range"),
    ([{"kind": "fullscreen_exited_timeout"}], "missing_field"),
    ([{"kind": "fullscreen_exited_timeout", "presentation": 0}], "out_of_range"),
    ("fullscreen", "wrong_type"),
])
def test_malformed_technical_events_are_refused(bad, code):
    with pytest.raises(PayloadError) as caught:
        validate(aot(technical_events=bad))
    assert caught.value.code == code


def test_a_trial_answered_out_of_fullscreen_at_the_cap_is_technical():
    from experiments.trial_types import is_technical

    answered = validate(aot(fullscreen_exited=True,
                            technical_events=events(3, last="fullscreen_exited_answer")))
    assert answered["response"] == "F" and is_technical(answered)
    ordering_answered = validate(ordering(fullscreen_exited=True, technical_events=events(
        3, last="fullscreen_exited_answer")), SCHEDULED)
    assert is_technical(ordering_answered)
    # Answered in fullscreen after two spoiled presentations of either kind: not technical.
    again = validate(aot(technical_events=[
        {"kind": "fullscreen_exited_answer", "presentation": 1},
        {"kind": "fullscreen_exited_timeout", "presentation": 2}]))
    assert not is_technical(again)


CATCH = {"trial_index": 3, "trial_type": "catch", "params": {}}


def test_clips_record_keys_pressed_before_the_onset():
    """Response keys pressed during the fixation never answer; an arrow-of-time trial (and a
    catch trial, posted as one) keeps them, t_ms from the onset, so never after it."""
    keys = [{"t_ms": -412.5, "kind": "key"}, {"t_ms": -0.25, "kind": "key"}]
    assert validate(aot(ignored_inputs=keys))["ignored_inputs"] == keys
    assert validate(aot(ignored_inputs=keys), CATCH)["ignored_inputs"] == keys
    assert validate(aot())["ignored_inputs"] == []
    for bad, code in (([{"t_ms": 12.0, "kind": "key"}], "out_of_range"),  # after the onset
                      ([{"t_ms": -12.0, "kind": "click"}], "out_of_range"),
                      ([{"t_ms": -12.0}], "missing_field"),
                      ([{"t_ms": -1.0, "kind": "key"}] * 101, "out_of_range")):
        with pytest.raises(PayloadError) as caught:
            validate(aot(ignored_inputs=bad))
        assert caught.value.code == code
    with pytest.raises(PayloadError):  # frame ordering ignores clicks only
        validate(ordering(ignored_inputs=[{"t_ms": 1.0, "kind": "key"}]), SCHEDULED)


def test_both_types_declare_ignored_inputs_from_one_definition():
    from experiments.trial_types import base

    by_type = {name: next(f for f in module.FIELDS if f.name == "ignored_inputs")
               for name, module in TRIAL_TYPES.items()}
    assert {field.max_length for field in by_type.values()} == {base.MAX_IGNORED_INPUTS}
    assert [k.name for k in by_type["aot"].items.keys] == \
        [k.name for k in by_type["frame_order"].items.keys] == ["t_ms", "kind"]
    assert by_type["catch"] == by_type["aot"]


def test_a_clip_trial_says_which_presenter_showed_it():
    # static/js/present.js: frames drawn by a worker, on the main thread's canvas, or a <video>.
    for presenter in ("worker", "canvas", "video", None):
        assert validate(aot(presenter=presenter))["presenter"] == presenter
    assert validate(aot())["presenter"] is None  # a page from before the field
    with pytest.raises(PayloadError) as caught:
        validate(aot(presenter="gpu"))
    assert caught.value.code == "out_of_range" and "presenter" in caught.value.message


def test_a_key_hold_is_bounded_as_the_browser_bounds_it():
    """The browser reports a hold beyond KEY_HOLD_MAX_MS, timed from its keydown, as null
    (review 30, findings 7 and 10)."""
    from pathlib import Path

    from experiments.trial_types.video import KEY_HOLD_MAX_MS
    js = Path(__file__).parents[2] / "static/js"
    assert f"export const KEY_HOLD_MAX_MS = {KEY_HOLD_MAX_MS:g};" in (
        js / "trials/aot.js").read_text()
    longest = KEY_HOLD_MAX_MS
    assert validate(aot(key_duration_ms=longest))["key_duration_ms"] == longest
    with pytest.raises(PayloadError, match="key_duration_ms"):
        validate(aot(key_duration_ms=longest + 1))
