"""Versioned exclusion rules with reason codes, as pure functions over trials.

Rules never delete anything: they return reason codes, which the caller stores as flags.
A record is a mapping with the canonical trial columns (``extra`` a dict); a DataFrame
row works the same way.

Trial-level codes: ``anticipation`` (rt below ``min_rt_ms``), ``timeout``, ``technical``
(a trial the server flagged technical, instead of ``timeout``, ``anticipation`` and
``no_moves_after_ignored_input``), ``no_moves_after_ignored_input`` (an answer left as it was
shown, after input the browser ignored, faster than ``no_moves_after_ignored_input_ms``),
``dropped_frames`` (above ``max_dropped_frames``), ``stall``, ``focus_lost``,
``fullscreen_exited``, ``reoffered`` (answered in fullscreen only when offered again, after
one or two presentations that left it: ``exclude_reoffered``).
Participant-level codes: ``catch_failed``, ``catch_accuracy``, ``practice_gate``,
``too_many_timeouts``, ``incomplete``, ``too_little_time``, ``too_many_technical``,
``all_technical`` (every main trial technical: no answer of the participant's to keep),
``timing_quality`` (the session's timing-quality score below ``min_timing_quality``:
:mod:`experiments.timing_quality`, which reads every clip trial, practice included).
Participant-level rules read main trials only (blocks other than ``practice``), except the
practice gate, which reads the last practice attempt.

``too_many_timeouts`` is a rule about non-responses: the study records it (dashboard, flow),
but analysis counts a person excluded for it alone back in, under every non-response
policy, as it keeps a model whatever its share of unparseable answers; their timeouts are
then scored by the policy (:mod:`analysis.nonresponse`).

A trial flagged technical (``extra["technical"]``: the page left fullscreen during each
presentation the browser offered, the stored one included, whether it timed out or was
answered, or a measurement of the browser was out of its bounds, see
:mod:`experiments.trial_types.base`) is excluded, so its response and RT are
never analysed, and it never counts against the participant: the catch, practice, timeout
and time rules leave it out.  Since only the browser's word says fullscreen was left, the
excuse is bounded: a session with more than ``max_technical_events`` technical events
(re-offers included, and a trial whose measurement was out of its bounds counting one) in its
trials, practice included, is excluded as ``too_many_technical``,
which is not a failed attention check (the Prolific list leaves such sessions to the
researcher).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields

from experiments import timing_quality
from experiments.record_numbers import number
from experiments.trial_types import ATTENTION_CHECK

RULES_VERSION = "2026.11-6"
PRACTICE_BLOCK = "practice"

TRIAL_REASONS = ("anticipation", "timeout", "technical", "no_moves_after_ignored_input",
                 "dropped_frames", "stall", "focus_lost", "fullscreen_exited", "reoffered")
# A session run by the built-in simulated participant (development, tests, researcher previews).
SIMULATED = "simulated"
# A session whose main trials were all technical: it ends screened out (webapp/participant).
ALL_TECHNICAL = "all_technical"
# Failed attention checks: a session ends failed_attention, and Prolific rejects it.
ATTENTION_REASONS = ("catch_failed", "catch_accuracy")
PRACTICE_GATE = "practice_gate"
PARTICIPANT_REASONS = (*ATTENTION_REASONS, PRACTICE_GATE, "too_many_timeouts", "incomplete",
                       "too_little_time", "too_many_technical", ALL_TECHNICAL,
                       timing_quality.REASON, SIMULATED)
# The stored trial columns the rules read (the verdict and the roster's score select these).
RECORD_FIELDS = ("trial_index", "trial_type", "block", "response", "correct", "rt_ms",
                 "onset_method", "dropped_frames", "extra")
# Set by a researcher's manual rule (webapp.models.manual_exclusion), not by a rule over
# trials, so no function here returns it.
MANUAL = "manual"


@dataclass(frozen=True)
class ExclusionRules:
    """Thresholds of every rule; ``version`` names the rule set stored with a study."""

    version: str = RULES_VERSION
    min_rt_ms: float = 200.0
    # A frame order submitted unchanged, faster than this, after the browser ignored input
    # (clicks on Done in its first 300 ms): the ignored clicks show Done was being clicked
    # before the frames could be looked at, and an unchanged order that soon after is that
    # same clicking getting through the guard, not a judgement that the shown order is right.
    # Moving the mouse to Done and comparing even two frames takes longer; a considered
    # "already in order" later in the trial is kept.  0 switches the rule off.
    no_moves_after_ignored_input_ms: float = 1000.0
    max_dropped_frames: int = 3
    exclude_stalls: bool = True
    exclude_focus_lost: bool = True
    exclude_fullscreen_exited: bool = False
    # A trial answered on its second or third showing: the participant had already seen the
    # clip (or frames) on the presentation that left fullscreen, so the answer is no first
    # look and its RT runs from the re-offer's onset.  Re-offers count across reloads.
    exclude_reoffered: bool = True
    max_failed_catch: int = 1
    min_catch_accuracy: float = 0.75
    min_practice_accuracy: float = 0.75
    max_timeout_fraction: float = 0.2
    # "Unreasonably little time" (EGO-FLIGHT): mean response time over main trials.
    min_mean_trial_ms: float = 300.0
    # Two trials lost to fullscreen three times over, or six answered only when offered again:
    # beyond that the session's own setup (or a tampered browser) spoils its data.
    max_technical_events: int = 6
    # The participant's machine or page kept the clips from being shown as scheduled: the
    # share of clip frames on time (experiments.timing_quality) below this.  0 switches it
    # off, so studies made before the rule keep their verdicts.
    min_timing_quality: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> "ExclusionRules":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown exclusion rule settings: {unknown}")
        return cls(**dict(data))


def _extra(record: Mapping) -> Mapping:
    extra = record.get("extra")
    return extra if isinstance(extra, Mapping) else {}


def is_timeout(record: Mapping) -> bool:
    """A trial without an answer: flagged by the browser, or no response at all."""
    return bool(_extra(record).get("timed_out")) or record.get("response") is None


def is_technical(record: Mapping) -> bool:
    """A trial the server flagged technical: it left fullscreen every time it was offered, so
    neither its answer nor its timeout is the participant's (never held against them)."""
    return bool(_extra(record).get("technical"))


def technical_events(record: Mapping) -> int:
    """How many presentations of the trial left fullscreen (re-offers included)."""
    events = _extra(record).get("technical_events")
    return len(events) if isinstance(events, Sequence) and not isinstance(events, str) else 0


def excuses(record: Mapping) -> int:
    """What the trial asks to be excused for, counted against ``max_technical_events``: its
    fullscreen exits, and one more when a measurement of the browser was out of its bounds
    (a background tab; or a script that claims one to skip the clip)."""
    return technical_events(record) + bool(_extra(record).get("technical_reasons"))


def trial_reasons(record: Mapping, rules: ExclusionRules = ExclusionRules()) -> list[str]:
    """Reason codes of the trial-level rules that one trial breaks (empty when it is kept)."""
    extra = _extra(record)
    reasons = []
    rt = number(record.get("rt_ms"))
    if is_technical(record):
        reasons.append("technical")
    elif is_timeout(record):
        reasons.append("timeout")
    elif rt is not None and rt < rules.min_rt_ms:
        reasons.append("anticipation")
    elif rt is not None and rt < rules.no_moves_after_ignored_input_ms and \
            _unchanged_after_ignored_input(extra, rt):
        reasons.append("no_moves_after_ignored_input")
    dropped = number(record.get("dropped_frames"))
    if dropped is not None and dropped > rules.max_dropped_frames:
        reasons.append("dropped_frames")
    if rules.exclude_stalls and (number(extra.get("stalls")) or 0) > 0:
        reasons.append("stall")
    if rules.exclude_focus_lost and extra.get("focus_lost"):
        reasons.append("focus_lost")
    if rules.exclude_fullscreen_exited and extra.get("fullscreen_exited"):
        reasons.append("fullscreen_exited")
    if rules.exclude_reoffered and is_reoffered(record):
        reasons.append("reoffered")
    return reasons


def is_reoffered(record: Mapping) -> bool:
    """An answer given only when the trial was offered again: some presentation left
    fullscreen, the stored one did not (so it is not technical), and it was answered."""
    return technical_events(record) > 0 and not is_technical(record) and not is_timeout(record)


def _unchanged_after_ignored_input(extra: Mapping, rt_ms: float) -> bool:
    """An answer left as it was shown (a frame order with no moves: only such rows record
    ``moves``), after input the browser ignored before that answer (``t_ms`` below
    ``rt_ms``, both from the frames' appearance; anything else is no click that led to it)."""
    moves, ignored = extra.get("moves"), extra.get("ignored_inputs")
    if not (isinstance(moves, list) and not moves and isinstance(ignored, list)):
        return False
    times = [number(item.get("t_ms")) for item in ignored if isinstance(item, Mapping)]
    return any(t is not None and t < rt_ms for t in times)


def _accuracy(records: Sequence[Mapping]) -> float | None:
    """Share correct, technical trials left out (None when nothing is left)."""
    counted = [r for r in records if not is_technical(r)]
    if not counted:
        return None
    return sum(bool(r.get("correct")) for r in counted) / len(counted)


def last_practice_attempt(records: Iterable[Mapping]) -> list[Mapping]:
    practice = [r for r in records if r.get("block") == PRACTICE_BLOCK]
    if not practice:
        return []
    last = max(int(_extra(r).get("practice_attempt", 1)) for r in practice)
    return [r for r in practice if int(_extra(r).get("practice_attempt", 1)) == last]


def participant_reasons(records: Iterable[Mapping], rules: ExclusionRules = ExclusionRules(),
                        expected_trials: int | None = None) -> list[str]:
    """Reason codes of the participant-level rules broken by one session's trials.

    Parameters
    ----------
    records
        Every stored trial of one session (practice, main and catch).
    rules
        Thresholds.
    expected_trials
        Number of scheduled trials; fewer stored trials give ``incomplete``.  ``None``
        skips that rule (e.g. for a CSV without the schedule).
    """
    records = list(records)
    main = [r for r in records if r.get("block") != PRACTICE_BLOCK]
    counted = [r for r in main if not is_technical(r)]
    catch = [r for r in counted if r.get("trial_type") == ATTENTION_CHECK]
    task = [r for r in counted if r.get("trial_type") != ATTENTION_CHECK]
    reasons = []
    failed = sum(not r.get("correct") for r in catch)
    if catch and failed > rules.max_failed_catch:
        reasons.append("catch_failed")
    catch_accuracy = _accuracy(catch)  # None exactly when there are no catch trials
    if catch_accuracy is not None and catch_accuracy < rules.min_catch_accuracy:
        reasons.append("catch_accuracy")
    practice = last_practice_attempt(records)
    if practice and not practice_passes(practice, rules.min_practice_accuracy):
        reasons.append(PRACTICE_GATE)
    if task and sum(is_timeout(r) for r in task) / len(task) > rules.max_timeout_fraction:
        reasons.append("too_many_timeouts")
    if expected_trials is not None and len(records) < expected_trials:
        reasons.append("incomplete")
    numbers = [number(r.get("rt_ms")) for r in task if not is_timeout(r)]
    rts = [rt for rt in numbers if rt is not None]
    if rts and sum(rts) < rules.min_mean_trial_ms * len(rts):
        reasons.append("too_little_time")
    if sum(excuses(r) for r in records) > rules.max_technical_events:
        reasons.append("too_many_technical")
    if main and not counted:
        reasons.append(ALL_TECHNICAL)
    if timing_quality.breaks_rule(records, rules.min_timing_quality):
        reasons.append(timing_quality.REASON)
    return reasons


def practice_passes(attempt: Sequence[Mapping], min_accuracy: float) -> bool:
    """Whether one practice attempt reaches ``min_accuracy``, technical trials left out; an
    attempt of technical trials only shows nothing and does not pass."""
    accuracy = _accuracy(attempt)
    return accuracy is not None and accuracy >= min_accuracy
