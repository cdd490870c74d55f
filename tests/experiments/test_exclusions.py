import pytest

from experiments.exclusions import (
    PARTICIPANT_REASONS,
    TRIAL_REASONS,
    ExclusionRules,
    participant_reasons,
    trial_reasons,
)

RULES = ExclusionRules()


def trial(**overrides):
    extra = overrides.pop("extra", {})
    record = {"session_id": 1, "trial_index": 0, "trial_type": "aot", "block": "main-1",
              "response": "F", "correct_response": "F", "correct": True, "rt_ms": 900.0,
              "dropped_frames": 0, "excluded": False, "exclusion_reasons": [],
              "extra": {"timed_out": False, "stalls": 0, "focus_lost": False, **extra}}
    record.update(overrides)
    return record


@pytest.mark.parametrize("overrides, reasons", [
    ({}, []),
    ({"rt_ms": 199.9}, ["anticipation"]),
    ({"rt_ms": 200.0}, []),
    ({"response": None, "rt_ms": None, "extra": {"timed_out": True}}, ["timeout"]),
    ({"response": None, "rt_ms": None}, ["timeout"]),
    ({"dropped_frames": 4}, ["dropped_frames"]),
    ({"dropped_frames": 3}, []),
    ({"extra": {"stalls": 1}}, ["stall"]),
    ({"extra": {"focus_lost": True}}, ["focus_lost"]),
    ({"rt_ms": 50.0, "dropped_frames": 9, "extra": {"stalls": 2, "focus_lost": True}},
     ["anticipation", "dropped_frames", "stall", "focus_lost"]),
])
def test_trial_rules(overrides, reasons):
    assert trial_reasons(trial(**overrides)) == reasons


def test_rules_are_configurable_and_every_code_listed():
    record = trial(extra={"fullscreen_exited": True, "stalls": 1})
    assert trial_reasons(record) == ["stall"]
    strict = ExclusionRules(exclude_fullscreen_exited=True, exclude_stalls=False)
    assert trial_reasons(record, strict) == ["fullscreen_exited"]
    assert set(TRIAL_REASONS) >= {"anticipation", "timeout", "dropped_frames", "stall", "focus_lost"}
    assert len(PARTICIPANT_REASONS) == 10 and RULES.version


def session(n_main=10, **changes):
    records = [trial(trial_index=i) for i in range(n_main)]
    records += [trial(trial_index=100 + i, trial_type="catch", block="main-1") for i in range(4)]
    records += [trial(trial_index=200 + i, block="practice", extra={"practice_attempt": 1})
                for i in range(4)]
    for index, values in changes.items():
        records[int(index)].update(values)
    return records


def test_good_participant_kept():
    assert participant_reasons(session(), RULES, expected_trials=18) == []


def test_failed_catch_and_catch_accuracy():
    records = session()
    for i in (10, 11):
        records[i]["correct"] = False
    # 2 of 4 wrong: more than one failure, and accuracy 0.5 < 0.75
    assert participant_reasons(records) == ["catch_failed", "catch_accuracy"]
    records[11]["correct"] = True  # one failure: tolerated by both rules at these thresholds
    assert participant_reasons(records) == []
    assert participant_reasons(records, ExclusionRules(min_catch_accuracy=0.9)) == ["catch_accuracy"]


def test_practice_gate_reads_last_attempt():
    records = session()
    for i in range(14, 18):
        records[i]["correct"] = i == 14  # attempt 1: 1 of 4
    assert participant_reasons(records) == ["practice_gate"]
    records += [trial(trial_index=300 + i, block="practice", extra={"practice_attempt": 2})
                for i in range(4)]
    assert participant_reasons(records) == []


def test_too_many_timeouts():
    records = session()
    for i in range(3):
        records[i].update(response=None, rt_ms=None, extra={"timed_out": True})
    assert participant_reasons(records) == ["too_many_timeouts"]  # 3/10 > 0.2
    records[2].update(response="F", rt_ms=800.0, extra={})
    assert participant_reasons(records) == []


def test_incomplete_session():
    assert participant_reasons(session(), expected_trials=19) == ["incomplete"]
    assert participant_reasons(session(), expected_trials=None) == []


def test_unreasonably_little_time():
    records = session()
    for record in records[:10]:
        record["rt_ms"] = 250.0  # fast but not anticipations: mean 250 ms < 300 ms
    assert participant_reasons(records) == ["too_little_time"]
    assert participant_reasons(records, ExclusionRules(min_mean_trial_ms=200)) == []


def technical(record, n_events=3):
    """The record as the server stores a trial that timed out with fullscreen exited each
    time it was offered (``n_events`` < 3: answered on a re-offer, so not technical)."""
    events = [{"kind": "fullscreen_exited_timeout", "presentation": i + 1}
              for i in range(n_events)]
    stored = n_events == 3
    extra = {**record["extra"], "technical_events": events, "technical": stored}
    if stored:
        extra.update(timed_out=True, fullscreen_exited=True)
        record.update(response=None, correct=False, rt_ms=None)
    record["extra"] = extra
    return record


def test_a_technical_trial_is_its_own_trial_reason():
    assert trial_reasons(technical(trial())) == ["technical"]
    assert trial_reasons(technical(trial(), n_events=1),
                         ExclusionRules(exclude_reoffered=False)) == []
    assert "technical" in TRIAL_REASONS and "too_many_technical" in PARTICIPANT_REASONS


@pytest.mark.parametrize("n_events", [1, 2])
def test_a_trial_answered_only_when_offered_again_is_excluded_as_reoffered(n_events):
    # Review 15b D4: answered on its second or third showing, the clip already seen once.
    assert ExclusionRules().exclude_reoffered is True
    assert trial_reasons(technical(trial(), n_events=n_events)) == ["reoffered"]
    assert trial_reasons(technical(trial(), n_events=n_events),
                         ExclusionRules(exclude_reoffered=False)) == []
    # A re-offer that timed out is a timeout; a trial never re-offered is kept.
    missed = technical(trial(response=None, rt_ms=None), n_events=n_events)
    assert trial_reasons(missed) == ["timeout"]
    assert trial_reasons(trial()) == []
    assert "reoffered" in TRIAL_REASONS


def test_technical_catch_trials_never_fail_attention_but_plain_misses_do():
    records = session()
    for i in (10, 11):
        technical(records[i])
    assert participant_reasons(records) == []  # 6 events: within max_technical_events
    for i in (10, 11):
        records[i]["extra"].update(technical=False, technical_events=[])
    assert participant_reasons(records) == ["catch_failed", "catch_accuracy"]


def test_technical_timeouts_and_practice_trials_are_left_out():
    records = session()
    for i in (0, 1):
        technical(records[i])
    technical(records[14])  # practice: 3 of 3 counted trials right
    lenient = ExclusionRules(max_technical_events=100)  # this test is about the other rules
    assert participant_reasons(records, lenient) == []
    records[2].update(response=None, rt_ms=None, extra={"timed_out": True})
    assert participant_reasons(records, lenient) == []  # 1 of 8 counted main trials timed out
    for i in range(14, 18):
        technical(records[i])  # a practice attempt of technical trials only shows nothing
    assert participant_reasons(records, lenient) == ["practice_gate"]


def test_practice_fullscreen_exits_count_towards_too_many_technical():
    # A reviewer passed the practice gate on one real answer by leaving fullscreen on the
    # other three practice trials (9 events) and was never bounded: only main trials counted.
    records = session()
    for i in (15, 16, 17):
        technical(records[i])
    assert participant_reasons(records) == ["too_many_technical"]  # 9 > 6


def test_too_many_technical_events_exclude():
    records = session()
    for i in (0, 1):
        technical(records[i])
    technical(records[2], n_events=1)  # answered on a re-offer: its event still counts
    assert participant_reasons(records) == ["too_many_technical"]  # 7 > 6
    assert participant_reasons(records, ExclusionRules(max_technical_events=7)) == []


def unchanged_order(rt_ms, ignored=1, moves=0, **extra):
    """A frame-ordering record answered in ``rt_ms`` after ``ignored`` clicks on Done that the
    browser ignored, with ``moves`` moves."""
    return trial(trial_type="frame_order", rt_ms=rt_ms, extra={
        "moves": [{"t_ms": 400.0, "from": 0, "to": 1, "via": "mouse"}] * moves,
        "ignored_inputs": [{"t_ms": 35.0 * (i + 1), "kind": "click"} for i in range(ignored)],
        **extra})


@pytest.mark.parametrize("record, reasons", [
    # Issue 15: Done mashed through the 300 ms guard, the initial order stored as an answer.
    (unchanged_order(450.0), ["no_moves_after_ignored_input"]),
    (unchanged_order(999.0, ignored=3), ["no_moves_after_ignored_input"]),
    (unchanged_order(1000.0), []),  # time enough to judge the order shown and click Done
    (unchanged_order(450.0, ignored=0), []),  # no carried-over clicks: nothing to say so
    (unchanged_order(450.0, moves=1), []),  # the order was worked on
    # Review 15b: only ignored clicks before the answer led to it.
    (trial(trial_type="frame_order", rt_ms=450.0, extra={
        "moves": [], "ignored_inputs": [{"t_ms": 600.0, "kind": "click"}]}), []),
    (trial(trial_type="frame_order", rt_ms=450.0, extra={
        "moves": [], "ignored_inputs": [{"kind": "click"}, "junk"]}), []),
    (unchanged_order(None, timed_out=True), ["timeout"]),
    (trial(rt_ms=450.0, extra={"ignored_inputs": [{"t_ms": -80.0, "kind": "key"}]}), []),  # a clip
])
def test_an_unchanged_order_right_after_ignored_clicks_is_excluded(record, reasons):
    if record["rt_ms"] is None:
        record["response"] = None
    assert trial_reasons(record) == reasons
    assert "no_moves_after_ignored_input" in TRIAL_REASONS
    assert trial_reasons(record, ExclusionRules(no_moves_after_ignored_input_ms=0)) == \
        [r for r in reasons if r != "no_moves_after_ignored_input"]


def test_an_answer_given_out_of_fullscreen_is_only_technical():
    """Answered after the page left fullscreen on every presentation (issue 15): flagged
    technical, so its fast RT is no anticipation and a wrong catch answer fails nothing."""
    events = [{"kind": "fullscreen_exited_timeout", "presentation": 1},
              {"kind": "fullscreen_exited_timeout", "presentation": 2},
              {"kind": "fullscreen_exited_answer", "presentation": 3}]
    spoiled = {"timed_out": False, "fullscreen_exited": True, "technical_events": events,
               "technical": True}
    assert trial_reasons(trial(rt_ms=4.0, extra=spoiled)) == ["technical"]
    records = session()
    for i in (10, 11):
        records[i].update(correct=False, extra={**records[i]["extra"], **spoiled})
    assert participant_reasons(records) == []
