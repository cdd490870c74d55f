"""Versioned plausibility rules: could a person in the real runner have produced this session?

Like the exclusion rules (:mod:`experiments.exclusions`), they return reason codes that the
caller stores as flags; nothing is deleted.  They hold what the browser says against what
only the server knows: when each trial's POST arrived (``received_at``, the server's clock)
and when each position's media left the server (``served``).

Trial-level codes (stored with the trial, which is then excluded):

- ``media_not_served``: the trial's answer arrived, and its clip or frames had not been
  served for this session before.  The runner fetches every stimulus before it shows it.
- ``clock_inconsistent``: a video trial's own timestamps disagree: an answer without an
  onset or key time, ``key_time_ms - onset_time_ms`` differing from ``rt_ms`` by more than
  ``clock_tolerance_ms`` (the runner computes one from the others), or a page clock beyond
  ``max_page_clock_ms`` (``performance.now()`` counts from the page's load).
- ``posted_early``: the trial arrived sooner after the one before it than the runner can
  send it: the fixation, the gap between trials of a block and the trial's own claimed
  answer time (its ``rt_ms``; for a video trial that timed out, the response window after
  the clip), less ``post_slack_ms`` for network jitter.  A trial may end before its clip
  does (a key press ends it), so the clip itself bounds only a timeout, and its length is
  left out: the bound stays a lower one.

Participant-level codes, all beginning ``implausible_`` (the Prolific list leaves such
sessions to the researcher):

- ``implausible_media``: more than ``max_media_not_served`` trials without their media.
- ``implausible_clock``: more than ``max_clock_inconsistent`` trials with inconsistent clocks.
- ``implausible_pace``: more than ``max_posted_early_fraction`` of the trials posted early
  (a queued trial sent late after a network drop makes the next few look early, hence a share).
- ``implausible_duration``: the session's wall clock (first to last trial arrival) shorter
  than ``min_duration_fraction`` of the sum of those bounds, less ``duration_slack_ms``.
  Late posts never shorten it; only the first trial's own delay does.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from experiments.record_numbers import number

PLAUSIBILITY_VERSION = "2026.11-p1"
TRIAL_REASONS = ("media_not_served", "clock_inconsistent", "posted_early")
PARTICIPANT_REASONS = ("implausible_media", "implausible_clock", "implausible_pace",
                       "implausible_duration")


@dataclass(frozen=True)
class PlausibilityRules:
    """Thresholds of every plausibility rule; ``version`` names the set."""

    version: str = PLAUSIBILITY_VERSION
    clock_tolerance_ms: float = 1.0
    max_page_clock_ms: float = 86_400_000.0  # a page open for a day
    post_slack_ms: float = 1000.0
    max_media_not_served: int = 0
    max_clock_inconsistent: int = 0
    max_posted_early_fraction: float = 0.25
    min_duration_fraction: float = 0.9
    duration_slack_ms: float = 10_000.0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Timing:
    """What the runner waits in every trial: the study's ``inter_trial_ms`` between trials
    of a block, and ``response_window_ms_after_clip`` of a video trial that timed out."""

    inter_trial_ms: float
    response_window_ms_after_clip: float


def _extra(record: Mapping) -> Mapping:
    extra = record.get("extra")
    return extra if isinstance(extra, Mapping) else {}


def _answered(record: Mapping) -> bool:
    return record.get("response") is not None and not _extra(record).get("timed_out")


def clock_consistent(record: Mapping, rules: PlausibilityRules = PlausibilityRules()) -> bool:
    """Whether a video trial's onset, key and RT agree (other trials carry no onset time)."""
    extra = _extra(record)
    if "onset_time_ms" not in extra:
        return True
    onset, key = number(extra.get("onset_time_ms")), number(extra.get("key_time_ms"))
    if onset is None or onset > rules.max_page_clock_ms:
        return False
    if not _answered(record):
        return key is None
    rt = number(record.get("rt_ms"))
    if key is None or rt is None or key > rules.max_page_clock_ms:
        return False
    return abs(key - onset - rt) <= rules.clock_tolerance_ms


def shortest_ms(record: Mapping, scheduled: Mapping, after: Mapping | None,
                timing: Timing) -> float:
    """The least time the runner takes from posting ``after`` (the trial before, or None)
    to posting ``record``: fixation, the gap within a block, and the claimed answer time."""
    fixation = number((scheduled.get("params") or {}).get("fixation_ms")) or 0.0
    gap = timing.inter_trial_ms if after is not None and after.get("block") == \
        record.get("block") else 0.0
    if _answered(record):
        answer = number(record.get("rt_ms")) or 0.0
    else:
        video = "onset_time_ms" in _extra(record)
        answer = timing.response_window_ms_after_clip if video else 0.0
    return fixation + gap + answer


def _ms(later: datetime, earlier: datetime) -> float:
    return (later - earlier).total_seconds() * 1000.0


def trial_reasons(records: Sequence[Mapping], schedule: Sequence[Mapping],
                  served: Mapping[int, datetime], timing: Timing,
                  rules: PlausibilityRules = PlausibilityRules()) -> list[list[str]]:
    """Plausibility codes of each of a session's stored trials, in the order given.

    ``records`` carry ``received_at`` (None for trials stored before it was kept: the rules
    that need it skip them); ``schedule`` is the session's schedule; ``served`` maps a trial
    index to when its media was first served.
    """
    by_index = {t["trial_index"]: t for t in schedule}
    arrived = sorted((r for r in records if r.get("received_at") is not None),
                     key=lambda r: r["received_at"])
    before = {id(r): arrived[i - 1] for i, r in enumerate(arrived) if i}
    return [_codes(record, by_index.get(record.get("trial_index"), {}), before.get(id(record)),
                   served, timing, rules) for record in records]


def _codes(record: Mapping, scheduled: Mapping, after: Mapping | None,
           served: Mapping[int, datetime], timing: Timing, rules: PlausibilityRules) -> list[str]:
    """One trial's codes; ``after``: the trial that arrived just before it."""
    received = record.get("received_at")
    codes = []
    if received is not None and scheduled.get("stimulus_id") is not None:
        served_at = served.get(record["trial_index"])
        if served_at is None or served_at > received:
            codes.append("media_not_served")
    if not clock_consistent(record, rules):
        codes.append("clock_inconsistent")
    if received is not None and after is not None and _ms(received, after["received_at"]) < \
            shortest_ms(record, scheduled, after, timing) - rules.post_slack_ms:
        codes.append("posted_early")
    return codes


def participant_reasons(records: Sequence[Mapping], per_trial: Sequence[Sequence[str]],
                        schedule: Sequence[Mapping], timing: Timing,
                        rules: PlausibilityRules = PlausibilityRules()) -> list[str]:
    """The participant-level codes of a session, from its trials and their codes
    (:func:`trial_reasons`)."""
    def count(code: str) -> int:
        return sum(code in codes for codes in per_trial)

    reasons = []
    if count("media_not_served") > rules.max_media_not_served:
        reasons.append("implausible_media")
    if count("clock_inconsistent") > rules.max_clock_inconsistent:
        reasons.append("implausible_clock")
    arrived = sorted((r for r in records if r.get("received_at") is not None),
                     key=lambda r: r["received_at"])
    if len(arrived) > 1 and count("posted_early") > \
            rules.max_posted_early_fraction * (len(arrived) - 1):
        reasons.append("implausible_pace")
    if len(arrived) > 1 and _too_short(arrived, schedule, timing, rules):
        reasons.append("implausible_duration")
    return reasons


def _too_short(arrived: Sequence[Mapping], schedule: Sequence[Mapping], timing: Timing,
               rules: PlausibilityRules) -> bool:
    by_index = {t["trial_index"]: t for t in schedule}
    least = sum(shortest_ms(r, by_index.get(r.get("trial_index"), {}), after, timing)
                for after, r in zip(arrived, arrived[1:]))
    wall = _ms(arrived[-1]["received_at"], arrived[0]["received_at"])
    return wall < rules.min_duration_fraction * least - rules.duration_slack_ms
