"""The Prolific approve/reject list: who is paid, who is rejected, and who is left to the
researcher (with the reason the study page shows), from each participant's verdict
(:func:`experiments.verdict.prolific`)."""
import pandas as pd

from analysis.csv_cells import escape_cells
from experiments import verdict

PROLIFIC_COLUMNS = ["participant_id", "decision", "reason"]


def prolific_decisions(participants: pd.DataFrame) -> pd.DataFrame:
    """One APPROVE or REJECT per participant with a submission, for Prolific's review.

    The decisions of :func:`prolific_review`, less those left to the researcher (REVIEW).
    Columns :data:`PROLIFIC_COLUMNS`; ``reason`` is empty for an approval.
    """
    rows = [(subject, decision, reason)
            for subject, (decision, reason) in prolific_review(participants).items()
            if decision != verdict.REVIEW]
    return pd.DataFrame(rows, columns=PROLIFIC_COLUMNS)


def prolific_review(participants: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """``(decision, reason)`` by participant with a submission: APPROVE, REJECT or REVIEW.

    ``participants``: the roster (one row per session, oldest first, with the manual
    columns).  Simulated sessions and model runs have no decision, nor has a participant
    without a submission (:data:`experiments.verdict.SUBMITTED`): sessions that never
    ended, and screened-out ones (asked to return the study; participants.csv lists them).
    """
    people = participants[(participants["subject_kind"] == "human") & ~participants["simulated"]]
    decisions = {}
    for subject, sessions in people.groupby("subject_id", sort=False):
        first = sessions.iloc[0]
        decision = verdict.prolific(sessions.to_dict("records"), first["manual_action"],
                                    first["manual_reason"])
        if decision is not None:
            decisions[subject] = decision
    return decisions


def prolific_csv(participants: pd.DataFrame) -> bytes:
    """:func:`prolific_decisions` as CSV, formula-like text quoted (:mod:`analysis.csv_cells`)."""
    table = prolific_decisions(participants)
    return escape_cells(table).to_csv(index=False, lineterminator="\n").encode()
