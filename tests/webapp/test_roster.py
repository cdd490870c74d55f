"""The roster's participant flow: each participant removed once, at the first step that applies."""
import pandas as pd
import pytest

from webapp.researcher.roster import participant_flow


def _participants(*rows):
    return pd.DataFrame(rows, columns=["status", "excluded", "exclusion_reasons"])


def test_each_participant_is_removed_once_and_counts_add_up():
    p = _participants(
        ("completed", False, []),
        ("completed", False, []),
        ("no_consent", False, []),
        ("failed_practice", True, []),                       # gate by status
        ("completed", True, ["practice_gate", "catch_failed"]),  # gate by reason comes first
        ("completed", True, ["catch_failed", "too_many_timeouts"]),
        ("failed_attention", True, ["catch_accuracy"]),
        ("completed", True, []),                              # flagged without a code
        ("abandoned", False, []),
        ("in_progress", False, []),
    )
    flow = participant_flow(p, reason_order=["too_many_timeouts", "catch_failed"])
    steps = dict(zip(flow["step"], flow["n_removed"]))
    assert list(flow["step"]) == ["entered", "no consent", "failed practice gate",
                                  "excluded: too_many_timeouts", "excluded: catch_failed",
                                  "excluded: catch_accuracy", "excluded: unspecified",
                                  "not finished", "remaining"]
    assert steps["failed practice gate"] == 2
    assert steps["excluded: too_many_timeouts"] == 1 and steps["excluded: catch_failed"] == 0
    assert steps["excluded: unspecified"] == 1 and steps["not finished"] == 2
    assert flow["n_remaining"].iloc[0] == 10 and flow["n_remaining"].iloc[-1] == 2
    assert flow["n_removed"].sum() == 10 - 2


def test_without_an_order_the_most_frequent_reason_comes_first():
    p = _participants(("completed", True, ["b"]), ("completed", True, ["a", "b"]),
                      ("completed", True, ["a"]), ("completed", True, ["b"]))
    flow = participant_flow(p)
    assert list(flow["step"][3:5]) == ["excluded: b", "excluded: a"]
    assert list(flow["n_removed"][3:5]) == [3, 1]


def test_an_empty_study_has_the_fixed_steps_at_zero():
    flow = participant_flow(_participants())
    assert list(flow["step"]) == ["entered", "no consent", "failed practice gate",
                                  "not finished", "remaining"]
    assert flow["n_remaining"].tolist() == [0] * 5


def test_a_missing_column_is_a_value_error():
    with pytest.raises(ValueError, match="exclusion_reasons"):
        participant_flow(pd.DataFrame({"status": [], "excluded": []}))


def test_the_docstring_example_runs():
    import doctest

    import webapp.researcher.roster

    assert doctest.testmod(webapp.researcher.roster).failed == 0


def test_a_two_session_subject_is_one_participant_with_every_reason(app, factory):
    from tests.webapp.conftest import minutes_ago
    from webapp.researcher.roster import roster_frame, subject_summary

    study = factory.study(slug="two-days")
    first = factory.session(study, subject_id="P1", status="completed",
                            excluded=True, exclusion_reasons=["too_many_timeouts"])
    factory.session(study, subject=first.subject, session_number=2, status="in_progress",
                    last_seen_at=minutes_ago(30), excluded=True, exclusion_reasons=["catch_failed"])
    with app.app_context():
        roster = roster_frame("two-days")
    assert roster["status"].tolist() == ["completed", "abandoned"]
    summary = subject_summary(roster).to_dict("records")
    assert summary == [{"subject_id": "P1", "status": "abandoned", "excluded": True,
                        "exclusion_reasons": ["too_many_timeouts", "catch_failed"]}]
