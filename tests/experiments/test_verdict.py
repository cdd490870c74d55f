import pytest

from analysis import columns
from experiments import verdict
from experiments.designs import DESIGNS
from experiments.verdict import APPROVE, REJECT, REVIEW


def test_statuses_are_declared_once_and_derived():
    assert columns.SESSION_STATUSES is verdict.SESSION_STATUSES
    assert set(verdict.UNFINISHED + verdict.ENDED + verdict.JUDGED) <= set(verdict.SESSION_STATUSES)
    assert verdict.SCREENED_OUT in verdict.ENDED and verdict.SCREENED_OUT not in verdict.SUBMITTED


def test_judge_ends_a_session_from_its_trials():
    design = DESIGNS["arrow-of-time"]
    judged = verdict.judge(design, [], [], {}, simulated=False)
    assert (judged.status, judged.excluded, judged.reasons) == (verdict.COMPLETED, False, [])
    simulated = verdict.judge(design, [], [], {}, simulated=True)
    assert simulated.session_columns() == {"status": verdict.COMPLETED, "excluded": True,
                                           "exclusion_reasons": ["simulated"]}
    failed = verdict.judge(design, [], [], {}, simulated=True, status=verdict.FAILED_PRACTICE)
    assert (failed.status, failed.reasons) == (verdict.FAILED_PRACTICE, ["practice_gate"])


def test_read_applies_simulation_then_the_researchers_rule():
    assert verdict.read(False, None, simulated=True) == (True, ["simulated"])
    assert verdict.read(False, ["timeout"], manual=verdict.EXCLUDE) == (True, ["timeout", "manual"])
    assert verdict.read(True, ["manual"], manual=verdict.EXCLUDE) == (True, ["manual"])
    lifted = verdict.read(True, ["timeout", "catch_failed", "implausible_pace", "manual"],
                          manual=verdict.REINSTATE)
    assert lifted == (True, ["timeout"])
    assert verdict.read(True, ["practice_gate"], manual=verdict.REINSTATE) == (False, [])
    assert verdict.read(True, [], simulated=True, manual=verdict.REINSTATE) == (True, ["simulated"])
    with pytest.raises(ValueError, match="unknown manual action"):
        verdict.read(False, [], manual="pardon")


def _session(status, reasons=(), number=1):
    return {"status": status, "exclusion_reasons": list(reasons), "session_number": number}


def test_prolific_decides_from_the_sessions_verdicts():
    assert verdict.prolific([_session("in_progress"), _session("screened_out")]) is None
    assert verdict.prolific([_session("completed", ["timeout", "too_many_timeouts"])]) == \
        (APPROVE, "")
    assert verdict.prolific([_session("failed_attention", ["catch_failed", "catch_accuracy"])]) \
        == (REJECT, "Failed attention checks.")
    assert verdict.prolific([_session("failed_practice", ["practice_gate"]),
                             _session("no_consent", number=2)]) == \
        (REVIEW, verdict.NO_CONSENT_REVIEW + "; " + verdict.REVIEW_REASONS["practice_gate"])
    caught = [_session("failed_attention", ["catch_failed"])]
    assert verdict.prolific(caught, verdict.REINSTATE) == (APPROVE, "")
    assert verdict.prolific([_session("completed")], verdict.EXCLUDE, "a bot") == \
        (REJECT, "Excluded by the researchers: a bot")
