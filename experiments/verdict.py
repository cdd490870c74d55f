"""A session's verdict in one place: its status, its exclusion reasons, and the Prolific
decision with its reason.

The rules (:mod:`experiments.exclusions`, :mod:`experiments.plausibility`) say what a
session's trials break; this module turns that into what is stored and shown:

* :func:`judge`, when a session ends (or its study's rules are applied again): the reasons
  of every trial and of the participant, and the session's status.  The participant path
  stores it.
* :func:`read`, whenever a stored verdict is read: a simulated session is excluded while it
  runs too, and a researcher's manual rule (exclude or reinstate) goes over the rules'
  flags.  The trial table, the roster, the exports, the dashboard and the analysis read
  verdicts through it.
* :func:`prolific`: one participant's APPROVE, REJECT or REVIEW from their sessions' read
  verdicts, for the export's approve/reject list and the study page.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from experiments import adaptive_schedule, exclusions, plausibility
from experiments.designs import Design

# Session statuses as stored: people's sessions, then a model run that lacks items.
STARTED, IN_PROGRESS, COMPLETED = "started", "in_progress", "completed"
NO_CONSENT, SCREENED_OUT, STOPPED = "no_consent", "screened_out", "stopped"
FAILED_PRACTICE, FAILED_ATTENTION, INCOMPLETE = "failed_practice", "failed_attention", "incomplete"
SESSION_STATUSES = (STARTED, IN_PROGRESS, COMPLETED, NO_CONSENT, SCREENED_OUT, FAILED_PRACTICE,
                    FAILED_ATTENTION, STOPPED, INCOMPLETE)
# Still expected to send trials.
UNFINISHED = (STARTED, IN_PROGRESS)
# Over: the participant is shown its ending (a code, or why not).
ENDED = (COMPLETED, FAILED_ATTENTION, FAILED_PRACTICE, NO_CONSENT, STOPPED, SCREENED_OUT)
# Ended with a completion code, so that Prolific may hold a submission to review.  Not
# screened_out: those participants were told to return the study, and Prolific's bulk
# approve and reject take ids to pay or not, none to ask for a return.
SUBMITTED = tuple(status for status in ENDED if status != SCREENED_OUT)
# Ended by the rules over its trials (what applying the rules again revisits).
JUDGED = (COMPLETED, FAILED_ATTENTION, FAILED_PRACTICE)

# A researcher's manual rule on a participant (webapp.models.manual_exclusion).
EXCLUDE, REINSTATE = "exclude", "reinstate"
MANUAL_ACTIONS = (EXCLUDE, REINSTATE)
# What a reinstatement lifts: the verdict on the participant, never a trial's own reasons, and
# never a preview's (a simulated session is not a participant).
LIFTED_BY_REINSTATE = (frozenset(exclusions.PARTICIPANT_REASONS)
                       | frozenset(plausibility.PARTICIPANT_REASONS)) \
    - {exclusions.SIMULATED} | {exclusions.MANUAL}

APPROVE, REJECT, REVIEW = "APPROVE", "REJECT", "REVIEW"
# Attention checks failed: the only rules' reasons a Prolific submission is rejected for
# (with a researcher's manual exclusion). Timeouts, technical trouble and the other rules
# exclude data but approve the submission.
REJECT_REASONS = dict.fromkeys(exclusions.ATTENTION_REASONS, "failed attention checks")
# Left out of the approve/reject list for the researcher to decide (shown, with these words,
# on the study page): the page left fullscreen so often that either the browser kept losing
# answers or the participant dodged trials; or the server's plausibility rules found a
# session no person in the runner could have sent.  A script can complete a session in a
# fraction of a second, so approving by default would pay it; a person flagged by mistake is
# paid once the researcher reinstates them.
REVIEW_REASONS = {
    "too_many_technical": "left fullscreen too often",
    # Main-trial RTs averaging under min_mean_trial_ms: keys pressed as the clips appeared
    # (what a browser script that clicks through does), not judgements.
    "too_little_time": "answered faster than the clips can be judged",
    exclusions.ALL_TECHNICAL: "every main trial technical",
    # The practice answers are not published, so a script that guesses them fails here, and
    # a short session at a person's pace would be paid if a failed practice were approved.
    # The server cannot tell it from a person who tried: the researcher decides.
    exclusions.PRACTICE_GATE: "failed the practice (a person who tried, or a script that guessed)",
    "implausible_media": "answers arrived for clips the server never sent",
    "implausible_clock": "timestamps that contradict each other",
    "implausible_pace": "trials arrived faster than they can run",
    "implausible_duration": "finished faster than its trials can run",
}
NO_CONSENT_REVIEW = "declined consent (a code, but no study taken)"


@dataclass(frozen=True)
class Verdict:
    """A judged session: its status and participant-level reasons, and each trial's reasons."""

    status: str
    excluded: bool
    reasons: list[str]
    trial_reasons: list[list[str]]

    def session_columns(self) -> dict:
        """The session columns that record it."""
        return {"status": self.status, "excluded": self.excluded,
                "exclusion_reasons": self.reasons}


def judge(design: Design, schedule: Sequence[Mapping], records: Sequence[Mapping],
          served: Mapping, *, simulated: bool, status: str = IN_PROGRESS) -> Verdict:
    """The study's rules and the plausibility rules applied to a session's stored trials.

    Parameters
    ----------
    design
        The design the session ran (its rules and timings).
    schedule
        The session's schedule.
    records
        Every stored trial (canonical columns, ``extra`` a dict, and ``received_at``).
    served
        When each position's media was first served, by trial index.
    simulated
        A simulated session is always excluded, as ``simulated``.
    status
        :data:`IN_PROGRESS` for a session ending now (every trial stored): it ends
        ``failed_attention`` for a failed attention check, ``screened_out`` (as a device
        check that failed) when every main trial was technical, else ``completed``.
        :data:`FAILED_PRACTICE` for a session the practice gate ends: ``practice_gate`` and
        the plausibility codes only (the other rules are about main trials, which it never
        ran).  An ended status when the rules are applied again: ``failed_attention`` or
        ``completed``, as the attention checks say.
    """
    schedule = adaptive_schedule.to_run(schedule)  # a stopped sweep's skipped slots: never run
    timing = plausibility.Timing(design.inter_trial_ms, design.response_window_ms_after_clip)
    flags = plausibility.trial_reasons(records, schedule, served, timing)
    per_trial = [exclusions.trial_reasons(record, design.exclusions) + codes
                 for record, codes in zip(records, flags)]
    reasons = exclusions.participant_reasons(records, design.exclusions,
                                             expected_trials=len(schedule))
    reasons += plausibility.participant_reasons(records, flags, schedule, timing)
    if status == FAILED_PRACTICE:
        implausible = [r for r in reasons if r in plausibility.PARTICIPANT_REASONS]
        return Verdict(FAILED_PRACTICE, True, [exclusions.PRACTICE_GATE, *implausible],
                       per_trial)
    if simulated:
        reasons.append(exclusions.SIMULATED)
    ended = FAILED_ATTENTION if set(exclusions.ATTENTION_REASONS) & set(reasons) else COMPLETED
    if status == IN_PROGRESS and exclusions.ALL_TECHNICAL in reasons:
        ended = SCREENED_OUT
    return Verdict(ended, bool(reasons), reasons, per_trial)


def read(excluded, reasons, *, simulated=False, manual=None) -> tuple[bool, list[str]]:
    """A stored verdict as it is shown: ``(excluded, reasons)``.

    ``excluded``, ``reasons``: as stored (a session's, or a trial row's with its session's
    reasons).  A ``simulated`` session is excluded as ``simulated`` while it runs too
    (:func:`judge` stores that at its end).  ``manual`` (:data:`MANUAL_ACTIONS`, or None):
    the participant's latest manual rule.  An exclusion adds ``manual`` last; a
    reinstatement takes out :data:`LIFTED_BY_REINSTATE` and keeps the row excluded only
    where a reason is left (a trial's own, e.g. a timeout).
    """
    reasons = list(reasons or [])
    excluded = bool(excluded)
    if simulated and exclusions.SIMULATED not in reasons:
        reasons.append(exclusions.SIMULATED)
    excluded = excluded or bool(simulated)
    if manual == EXCLUDE:
        return True, reasons if exclusions.MANUAL in reasons else [*reasons, exclusions.MANUAL]
    if manual == REINSTATE:
        reasons = [r for r in reasons if r not in LIFTED_BY_REINSTATE]
        return bool(reasons), reasons
    if manual is not None:
        raise ValueError(f"unknown manual action {manual!r}")
    return excluded, reasons


def prolific(sessions: Sequence[Mapping], manual: str | None = None,
             manual_reason: str = "") -> tuple[str, str] | None:
    """``(decision, reason)`` of one participant: APPROVE, REJECT or REVIEW; None without a
    submission (no session :data:`SUBMITTED`).

    ``sessions``: the participant's sessions, oldest first, each with ``status``,
    ``session_number`` and its read ``exclusion_reasons`` (:func:`read`).  REJECT only for
    a researcher's manual exclusion or failed attention checks (:data:`REJECT_REASONS`); a
    manual reinstatement approves.  REVIEW (the reason shown on the study page) for a
    latest submitted session that declined consent and for :data:`REVIEW_REASONS` (a failed
    practice among them).  Everyone else with a submission is approved, excluded or not:
    technical failures and the other rules are not the participant's fault.
    """
    submitted = [s for s in sessions if s["status"] in SUBMITTED]
    if not submitted:
        return None
    if manual == EXCLUDE:
        return REJECT, f"Excluded by the researchers: {manual_reason}"
    if manual == REINSTATE:
        return APPROVE, ""
    codes = list(dict.fromkeys(r for s in sessions for r in s["exclusion_reasons"]))
    failed = sorted({REJECT_REASONS[r] for r in codes if r in REJECT_REASONS})
    if failed:
        return REJECT, "; ".join(failed).capitalize() + "."
    review = [REVIEW_REASONS[r] for r in codes if r in REVIEW_REASONS]
    if sorted(submitted, key=lambda s: s["session_number"])[-1]["status"] == NO_CONSENT:
        review.insert(0, NO_CONSENT_REVIEW)
    if review:
        return REVIEW, "; ".join(review)
    return APPROVE, ""
