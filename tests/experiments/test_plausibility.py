"""The plausibility rules, on sessions written out by hand: what the runner sends, and what
scripts sent in the reproduced attacks (issue 25)."""
from datetime import datetime, timedelta, timezone

import pytest

from experiments.plausibility import (
    PlausibilityRules,
    Timing,
    clock_consistent,
    participant_reasons,
    trial_reasons,
)

START = datetime(2026, 11, 28, 10, 0, tzinfo=timezone.utc)
TIMING = Timing(inter_trial_ms=250.0, response_window_ms_after_clip=2000.0)
SCHEDULE = [{"trial_index": i, "block": "main-1", "stimulus_id": 100 + i,
             "params": {"fixation_ms": 500}} for i in range(20)]


def trial(index: int, at_ms: float, rt_ms: float | None = 700.0, onset: float | None = None,
          **extra) -> dict:
    """A video trial as the runner stores it: the key's time is the onset plus the RT."""
    onset = 10_000.0 + at_ms if onset is None else onset
    return {"trial_index": index, "block": "main-1", "trial_type": "aot", "rt_ms": rt_ms,
            "response": None if rt_ms is None else "F",
            "received_at": START + timedelta(milliseconds=at_ms),
            "extra": {"timed_out": rt_ms is None, "onset_time_ms": onset,
                      "key_time_ms": None if rt_ms is None else onset + rt_ms, **extra}}


def paced(n: int, step_ms: float) -> list[dict]:
    return [trial(i, i * step_ms) for i in range(n)]


def served_all(records, before_ms: float = 400.0) -> dict:
    return {r["trial_index"]: r["received_at"] - timedelta(milliseconds=before_ms)
            for r in records}


def verdict(records, served=None):
    served = served_all(records) if served is None else served
    flags = trial_reasons(records, SCHEDULE, served, TIMING)
    return flags, participant_reasons(records, flags, SCHEDULE, TIMING)


def test_a_runner_paced_session_is_plausible():
    # fixation 500 + gap 250 + RT 700 = 1450 ms at the least: a person at 1.6 s a trial.
    flags, reasons = verdict(paced(20, 1600.0))
    assert flags == [[]] * 20 and reasons == []


def test_a_network_burst_flags_a_few_trials_but_not_the_session():
    # Trials 5-8 waited in the browser's queue while offline and arrived together.
    records = paced(20, 1600.0)
    for i in range(5, 9):
        records[i]["received_at"] = START + timedelta(milliseconds=8 * 1600 + 30 * (i - 5))
    flags, reasons = verdict(records)
    assert sum("posted_early" in f for f in flags) == 3 and reasons == []


def test_a_script_posting_at_once_is_implausible():
    # Issue 25: 52 trials in 0.22 s, plausible rt_ms, no media fetched.
    records = paced(20, 4.0)
    flags, reasons = verdict(records, served={})
    assert all("media_not_served" in f for f in flags)
    assert sum("posted_early" in f for f in flags) == 19
    assert reasons == ["implausible_media", "implausible_pace", "implausible_duration"]


def test_media_served_after_the_answer_arrived_counts_as_not_served():
    records = paced(20, 1600.0)
    served = served_all(records)
    served[3] = records[3]["received_at"] + timedelta(milliseconds=1)
    flags, reasons = verdict(records, served)
    assert flags[3] == ["media_not_served"] and reasons == ["implausible_media"]


def test_a_script_with_human_delays_but_no_media_is_caught_by_the_media_rule():
    flags, reasons = verdict(paced(20, 1600.0), served={})
    assert reasons == ["implausible_media"]


@pytest.mark.parametrize("record", [
    # Issue 25's payload: rt_ms 800 with an onset a billion ms into the page and a key at 5.
    trial(0, 0.0, rt_ms=800.0, onset=999_999_999_999.0, key_time_ms=5.0),
    trial(0, 0.0, rt_ms=800.0, key_time_ms=10_000.0 + 200.0),  # key - onset != rt
    trial(0, 0.0, rt_ms=800.0, onset=None) | {"extra": {"timed_out": False, "onset_time_ms": None,
                                                        "key_time_ms": None}},
    trial(0, 0.0, rt_ms=None, key_time_ms=12_000.0),  # a timeout with a key time
])
def test_inconsistent_client_clocks_are_flagged(record):
    assert not clock_consistent(record)


def test_the_runners_own_timestamps_are_consistent():
    assert clock_consistent(trial(0, 0.0, rt_ms=512.3456789012345, onset=1234.5678901))
    assert clock_consistent(trial(0, 0.0, rt_ms=None))
    # Frame-ordering trials carry no onset time: the rule does not apply.
    assert clock_consistent({"rt_ms": 900.0, "response": "[1, 2]", "extra": {}})


def test_a_session_that_ends_faster_than_its_trials_is_implausible_even_if_paced_unevenly():
    # Every other trial late: few are early by the per-trial bound, but the whole is too short.
    records = [trial(i, (i // 2) * 1000.0 + (i % 2) * 1000.0) for i in range(20)]
    flags, reasons = verdict(records)
    assert "implausible_duration" in reasons


def test_trials_stored_before_receive_times_were_kept_are_not_judged_by_them():
    records = [r | {"received_at": None} for r in paced(10, 1.0)]
    flags, reasons = verdict(records, served={})
    assert flags == [[]] * 10 and reasons == []


def test_thresholds_are_versioned():
    rules = PlausibilityRules()
    assert rules.to_dict()["version"] == rules.version and rules.version
