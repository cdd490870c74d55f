"""The Prolific approve/reject list: who is paid, who is rejected, and who is left to the
researcher (with the reason the study page shows)."""
import pandas as pd

from analysis.csv_cells import escape_cells
from experiments.exclusions import ALL_TECHNICAL

# Attention checks failed: the only rules' reasons a Prolific submission is rejected for
# (with a researcher's manual exclusion). Timeouts, technical trouble and the other rules
# exclude data but approve the submission.
REJECT_REASONS = {"catch_failed": "failed attention checks",
                  "catch_accuracy": "failed attention checks"}
# Left out of the approve/reject list for the researcher to decide (shown, with these words,
# on the study page): the page left fullscreen so often that either the browser kept losing
# answers or the participant dodged trials; or the server's plausibility rules
# (experiments/plausibility.py) found a session no person in the runner could have sent.
# A script can complete a session in a fraction of a second, so approving by default would
# pay it; a person flagged by mistake is paid once the researcher reinstates them.
REVIEW_REASONS = {
    "too_many_technical": "left fullscreen too often",
    # Main-trial RTs averaging under min_mean_trial_ms: keys pressed as the clips appeared
    # (what a browser script that clicks through does), not judgements.
    "too_little_time": "answered faster than the clips can be judged",
    ALL_TECHNICAL: "every main trial technical",
    # The practice answers are not published, so a script that guesses them fails here, and
    # a short session at a person's pace would be paid if a failed practice were approved.
    # The server cannot tell it from a person who tried: the researcher decides.
    "practice_gate": "failed the practice (a person who tried, or a script that guessed)",
    "implausible_media": "answers arrived for clips the server never sent",
    "implausible_clock": "timestamps that contradict each other",
    "implausible_pace": "trials arrived faster than they can run",
    "implausible_duration": "finished faster than its trials can run",
}
NO_CONSENT_REVIEW = "declined consent (a code, but no study taken)"
# Sessions that ended with a code, so that Prolific may hold a submission to review.
# Not screened_out: those participants were told to return the study, and Prolific's bulk
# approve and reject take ids to pay or not, none to ask for a return.
SUBMITTED = ("completed", "failed_attention", "failed_practice", "no_consent", "stopped")
APPROVE, REJECT, REVIEW = "APPROVE", "REJECT", "REVIEW"
PROLIFIC_COLUMNS = ["participant_id", "decision", "reason"]


def prolific_decisions(participants: pd.DataFrame) -> pd.DataFrame:
    """One APPROVE or REJECT per participant with a submission, for Prolific's review.

    The decisions of :func:`prolific_review`, less those left to the researcher (REVIEW).
    Columns :data:`PROLIFIC_COLUMNS`; ``reason`` is empty for an approval.
    """
    rows = [(subject, decision, reason)
            for subject, (decision, reason) in prolific_review(participants).items()
            if decision != REVIEW]
    return pd.DataFrame(rows, columns=PROLIFIC_COLUMNS)


def prolific_review(participants: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """``(decision, reason)`` by participant with a submission: APPROVE, REJECT or REVIEW.

    REJECT only for a researcher's manual exclusion or failed attention checks
    (:data:`REJECT_REASONS`); a manual reinstatement approves.  REVIEW (left out of the
    list, the reason shown on the study page) for a latest session that declined consent
    and for :data:`REVIEW_REASONS` (a failed practice among them).  Everyone else whose
    session ended with a completion code (:data:`SUBMITTED`) is approved, excluded or not:
    technical failures and the other rules are not the participant's fault.  Simulated sessions, model runs, sessions that
    never ended and screened-out sessions (asked to return the study; participants.csv
    lists them) have no decision.
    """
    people = participants[(participants["subject_kind"] == "human") & ~participants["simulated"]]
    return {subject: _decision(sessions)
            for subject, sessions in people.groupby("subject_id", sort=False)
            if sessions["status"].isin(SUBMITTED).any()}


def _decision(sessions: pd.DataFrame) -> tuple[str, str]:
    first = sessions.iloc[0]
    if first["manual_action"] == "exclude":
        return REJECT, f"Excluded by the researchers: {first['manual_reason']}"
    if first["manual_action"] == "reinstate":
        return APPROVE, ""
    failed = sorted({REJECT_REASONS[r] for rs in sessions["exclusion_reasons"] for r in rs
                     if r in REJECT_REASONS})
    if failed:
        return REJECT, "; ".join(failed).capitalize() + "."
    review = [REVIEW_REASONS[r] for r in dict.fromkeys(
        r for rs in sessions["exclusion_reasons"] for r in rs) if r in REVIEW_REASONS]
    submitted = sessions[sessions["status"].isin(SUBMITTED)]
    if submitted.sort_values("session_number").iloc[-1]["status"] == "no_consent":
        review.insert(0, NO_CONSENT_REVIEW)
    if review:
        return REVIEW, "; ".join(review)
    return APPROVE, ""


def prolific_csv(participants: pd.DataFrame) -> bytes:
    """:func:`prolific_decisions` as CSV, formula-like text quoted (:mod:`analysis.csv_cells`)."""
    table = prolific_decisions(participants)
    return escape_cells(table).to_csv(index=False, lineterminator="\n").encode()
