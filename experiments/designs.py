"""Declarative experiment designs and their registry ``DESIGNS``.

A design is data: what task, how many sessions and blocks, practice and catch trials,
key-mapping counterbalancing, conditions, and the exclusion rules with their version.
A study stores ``design.to_dict()`` as its snapshot, so a study keeps its design even if
the shipped one changes; :func:`Design.from_dict` reads a snapshot back.

The shipped designs (``DESIGNS``):

``arrow-of-time``
    Hanyu et al. (2023) as used by AoT-PsyPhyBENCH: every clip is shown once forward and
    once reversed over two sessions on different days (each session half forward, half
    reversed, order randomised per participant), six motion categories.  The benchmark
    subset leaves out Reciprocal; that is an analysis filter, recorded here as
    ``benchmark_subset_excludes``.
``frame-ordering``
    EGO-FLIGHT's nine conditions (number of frames 2/4/8, clip length short/medium/long,
    annotation none/brief/comprehensive, hints at frames 1&3 or 2&4), within participants;
    each participant sees every clip once, in one condition (never two versions of a clip).
    Which clip goes with which condition rotates across participants (a Latin square whose
    row is a between-subject factor filled least-first), so every clip is seen in every
    condition equally often.  EGO-FLIGHT's clip-length factor (5-10 s, 10-25 s, > 25 s) is
    played here by the *temporal span* the sampled frames cover: short = the middle third
    of the clip, medium = two thirds, long = the whole clip, which is what a length
    manipulation changes for frame ordering when every clip is a 3 s synthetic clip.
``tra-sweep``
    Forward/backward judgements over the TRA paper's parameter sweeps only (split
    ``tra-sweep``: ball restitution 0.1-1.0, pendulum damping 0.0-5.0), for a psychometric
    curve per participant: one session, every sweep clip 12 times forward and 12 times
    reversed (``repeats_per_direction``), in random order over 8 blocks with one catch trial
    each; key mapping counterbalanced between participants; practice on the set's other
    clips, so no sweep level is set aside.  With the built-in set (one clip per level) that
    is 24 trials per level, 17 levels, 408 main trials (about 35 minutes); a set with k
    clips per level gives 24k.

    Power calculation (``python bench/tra_power.py``: 60 simulated participants a row, the
    report's own fit with the lapse rate estimated, 300 bootstrap resamples each, seed 0),
    on the PyBullet set's sweeps: the ball's P(correct) falls from 1 - lapse to chance 0.5
    over restitution 0.1-1.0 (cumulative normal, threshold 0.6, 5%-95% width 0.5), the
    pendulum's rises from chance over damping 0-5 (threshold 1.5, width 2.5).  Share of
    participants whose threshold's 95% CI half-width is at most one level step (0.1, 0.5),
    by trials per level, at lapse rates 0 / 0.02 / 0.04 (60 participants a row, so each
    share is +-6 points):

    =======  ==================  ==================
    trials   ball                pendulum
    =======  ==================  ==================
    12       37% / 23% / 15%     30% / 22% / 13%
    16       52% / 47% / 33%     58% / 40% / 33%
    20       65% / 50% / 45%     78% / 57% / 38%
    22       85% / 70% / 62%     83% / 70% / 50%
    24       85% / 78% / 67%     88% / 73% / 67%
    32       92% / 85% / 90%     98% / 93% / 92%
    =======  ==================  ==================

    Median half-widths at 24 trials: ball 0.076 / 0.084 / 0.093, pendulum 0.38 / 0.41 /
    0.46.  24 trials per level reaches 80% of participants within one step only without
    lapses; with the 2-4% lapses people have, 32 do.  The shipped PyBullet study file gives
    22 (ball) and 20 (pendulum) trials a level in one session; ``repeats_per_direction = 2``
    doubles them.
``tra-adaptive``
    The same question on the same sweep clips, each trial's level chosen on the server by
    QUEST+ (``experiments.adaptive``: the report's psychometric family, guess 0.5, lapse
    in [0, 0.06], threshold placement by the expected entropy of its posterior) from the
    answers stored before it: ``adaptive_trials`` (120) trials a sweep, the two sweeps
    interleaved over 4 blocks, one catch trial each.

    Each sweep's curve runs the way its physics says (``experiments.synthetic.curve_direction``:
    the ball's falls, the pendulum's rises), in QUEST+'s grid and in the report's fit of
    either design. ``adaptive_stop_halfwidth`` (0, off) may end a sweep early once its
    threshold's 95% credible interval is that many level steps either side.

    Against the fixed design on ``bench/tra_power.py``'s simulated participants, all in one
    interleaved run (``python bench/adaptive_power.py --observers 60 --rounds 5 --adaptive
    60,120 --stopping 120 --stop 1 --fixed 24 --fisher``, seed 0, 2026-11-28 20:32-20:46 UTC,
    load 0.5-13 on 2 shared CPUs, so 60 participants a row, not 200: each share is +-6
    points), the report's fit with the sweep's direction known and its intervals: profile
    likelihood, none for a fit on a bound (such a participant counts as outside one step and
    not covered; the profile intervals there covered 58 of 75 true thresholds, 0.77, all of
    them steps between two levels, so the report withholds them); lapse rates 0 / 0.02 /
    0.04 (docs/measurements.md, "Adaptive levels"):

    ========  ===============  ===============  ==================  ===================
    sweep     design           trials a sweep   <= 1 step           CI coverage
    ========  ===============  ===============  ==================  ===================
    ball      adaptive         60               28% / 25% / 35%     0.80 / 0.78 / 0.75
    ball      adaptive         120              60% / 53% / 57%     0.83 / 0.88 / 0.90
    ball      stop at 1 step   88 / 94 / 88     45% / 47% / 45%     0.68 / 0.73 / 0.68
    ball      fixed (24/lv)    240              87% / 77% / 60%     0.92 / 0.87 / 0.90
    pendulum  adaptive         60               37% / 25% / 28%     0.82 / 0.83 / 0.78
    pendulum  adaptive         120              53% / 48% / 60%     0.82 / 0.90 / 0.93
    pendulum  stop at 1 step   86 / 98 / 92     48% / 48% / 45%     0.68 / 0.83 / 0.68
    pendulum  fixed (24/lv)    264              88% / 72% / 63%     0.93 / 0.88 / 0.92
    ========  ===============  ===============  ==================  ===================

    The issue's goal, 80% of participants within one level step in at most 120 trials a
    session (60 a sweep), is out of reach of any placement with the report's fit: by the
    Fisher information at the true parameters, with every trial spread over the levels in
    the best (c-optimal) way, the *expected* half-width is one step only from 44 / 64 / 79
    trials a sweep (ball) and 42 / 63 / 78 (pendulum) with threshold, width and lapse rate
    fitted (39 / 46 / 52 with the threshold alone unknown), and 80% of participants need
    more than the expected case; over budgets, about 160 trials a sweep reach 80% (counted
    with profile intervals on a bound, so up to 8 points high). The
    shipped design runs 120 a sweep. Threshold bias is within two standard errors of 0 and
    of the fixed design's except on the pendulum without lapses (-0.090 +- 0.018 at 120
    trials over two runs, fixed -0.022 +- 0.020, a fifth of a level step); RMSE at 120
    trials is within 0.02 of the fixed design's. Stopping at a credible half-width of one
    step uses 86-98 trials a sweep for 45-48% within one step and lowers coverage to
    0.68-0.83: stopping when the data happen to look precise is optional stopping, so the
    shipped study files leave it off. It never stops while the credible interval reaches
    past the sweep's levels (a participant at chance piles the posterior at the prior's
    edge: :func:`experiments.adaptive.reached`).

    The report fits each participant as in the fixed design, but people's row is the median
    of participants' thresholds, not a pooled fit: each one's levels sat around their own
    threshold, so their pooled trials give a flatter curve than any of theirs
    (:mod:`analysis.participant_thresholds`).
``aot-length-adaptive``
    How much of a clip a person needs (issue 31): the same question with the level the number
    of frames shown around the clip's middle, chosen by the same QUEST+ from the answers stored
    before each trial. Its main clips are the cuts of a length sweep (split
    ``length-sweep``, ``manage.py stimuli lengths``: each source clip cut to the n frames
    around its middle at every level, the reversed trial playing the same n frames backwards, see
    :mod:`experiments.length_sweep`), one sweep over all of them; practice on the set's full
    clips (split ``practice``). ``adaptive_trials`` (120) trials, 4 blocks with one catch
    trial each, about 10 minutes on a set cut at the default levels (the consent's estimate
    from the set's mean clip length): on simulated participants (``python
    bench/length_power.py --observers 20``: threshold 8 frames, width 12, lapse 0.02, the
    curve known to rise) 7 of 20 fits at 80 trials had no interval (on a bound), against 3
    of 20 at 120, RMSE about 1.1 frames at both (docs/measurements.md).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Protocol

from experiments import trial_types
from experiments.exclusions import ExclusionRules

# The shipped frame-ordering design's conditions are that trial type's parameters.
from experiments.trial_types.frame_order import ANNOTATIONS, SPANS, OrderingCondition

__all__ = ["ANNOTATIONS", "DESIGNS", "SPANS", "Design", "OrderingCondition",
           "PracticeSpec", "STUDY_CONFIG_KEY", "get_design", "required_frame_sets"]

# A study created from a study file keeps the file's whole configuration (study settings and
# texts, see experiments.study_file) under this key of its design snapshot.
STUDY_CONFIG_KEY = "study_config"


class Snapshotted(Protocol):
    """What names a stored design: a study, a frozen version or a session row joined with
    its study's design columns."""

    @property
    def design(self) -> str: ...

    @property
    def design_snapshot(self) -> Mapping | None: ...


@dataclass(frozen=True)
class PracticeSpec:
    """Practice trials with feedback and the gate before the main task."""

    n_trials: int = 4
    min_accuracy: float = 0.75
    max_attempts: int = 2


@dataclass(frozen=True)
class Design:
    """An experiment design; every field is plain data (see :meth:`to_dict`)."""

    name: str
    title: str
    task: str
    description: str = ""
    sessions: int = 1
    # Session k+1 opens this many hours after session k was completed.
    session_gap_hours: float = 0.0
    main_blocks: int = 4
    # None: every clip of the stimulus set (its main split); a number: that many per session.
    max_clips: int | None = None
    practice: PracticeSpec = field(default_factory=PracticeSpec)
    catch_per_block: int = 1
    catch_set: str = "catch"
    response_keys: tuple[str, str] = ("f", "j")
    counterbalance_keys: bool = True
    fixation_ms: int = 500
    response_window_ms_after_clip: int = 2000
    # A blank screen between one trial's end (or its feedback) and the next trial's fixation.
    inter_trial_ms: int = 0
    max_ordering_ms: int = 120_000
    # Within-subject conditions of the task, as its type module reads them (read_conditions):
    # OrderingCondition for frame ordering, none for the arrow of time.
    conditions: tuple = ()
    # Clips of these splits are never main trials (TRA sweeps, practice clips).
    excluded_splits: tuple[str, ...] = ("tra-sweep", "practice", "catch")
    # Non-empty: the main trials are the clips of these splits only (a sweep design).
    included_splits: tuple[str, ...] = ()
    # 0: each clip once per session (the two-session scheme of the task); n >= 1: every main
    # clip n times in each direction within each session (a psychometric design).
    repeats_per_direction: int = 0
    # 0: levels fixed by the schedule; n >= 1: n trials on each sweep of the included splits,
    # each one's level chosen by QUEST+ from the answers stored before it (experiments.adaptive).
    adaptive_trials: int = 0
    # > 0: a sweep ends before its adaptive_trials once the threshold's 95% credible interval
    # is within this many level steps either side; its later slots are skipped, never shown.
    adaptive_stop_halfwidth: float = 0.0
    benchmark_subset_excludes: tuple[str, ...] = ()
    exclusions: ExclusionRules = field(default_factory=ExclusionRules)

    def __post_init__(self):
        # A design's task is a trial type that builds sessions (read when used: the registry
        # is the one list).
        if self.task not in trial_types.TASKS:
            raise ValueError(f"design {self.name!r}: task must be one of {tuple(trial_types.TASKS)}")
        if self.sessions < 1 or self.main_blocks < 1:
            raise ValueError(f"design {self.name!r}: needs at least one session and block")
        trial_types.TASKS[self.task].check_design(self)
        if self.max_clips is not None and self.max_clips < 1:
            raise ValueError("max_clips must be positive")
        if self.repeats_per_direction < 0:
            raise ValueError(f"design {self.name!r}: repeats_per_direction must not be negative")
        if self.adaptive_trials < 0 or (self.adaptive_trials and (
                self.repeats_per_direction or not self.included_splits)):
            raise ValueError(f"design {self.name!r}: adaptive_trials is a non-negative count "
                             "of a sweep design (included_splits) without repeats_per_direction")
        if self.adaptive_stop_halfwidth < 0 or (self.adaptive_stop_halfwidth
                                                and not self.adaptive_trials):
            raise ValueError(f"design {self.name!r}: adaptive_stop_halfwidth is a non-negative "
                             "number of level steps of an adaptive design (adaptive_trials)")
        if set(self.included_splits) & set(self.excluded_splits):
            raise ValueError(f"design {self.name!r}: a split cannot be both included and excluded")
        if min(self.fixation_ms, self.response_window_ms_after_clip, self.max_ordering_ms,
               self.inter_trial_ms) < 0:
            raise ValueError(f"design {self.name!r}: timings must not be negative")

    def to_dict(self) -> dict:
        return asdict(self)

    def with_changes(self, **changes) -> "Design":
        """A copy with some fields replaced (e.g. ``max_clips`` for a pilot)."""
        return replace(self, **changes)

    @classmethod
    def from_dict(cls, data: Mapping) -> "Design":
        """Read back :meth:`to_dict` output (a study's design snapshot)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown design fields: {unknown}")
        data = dict(data)
        data["practice"] = PracticeSpec(**data.get("practice", {}))
        data["exclusions"] = ExclusionRules.from_dict(data.get("exclusions", {}))
        task = trial_types.TASKS.get(str(data.get("task")))  # unknown: __post_init__ says so
        conditions = data.get("conditions", ())
        data["conditions"] = task.read_conditions(conditions) if task else tuple(conditions)
        for key in ("response_keys", "excluded_splits", "included_splits",
                    "benchmark_subset_excludes"):
            if key in data:
                data[key] = tuple(data[key])
        return cls(**data)

    @classmethod
    def from_snapshot(cls, stored: Snapshotted) -> "Design":
        """The design ``stored`` runs: its snapshot when it has one (the study file's
        configuration left out), else the shipped design it names."""
        if not stored.design_snapshot:
            return get_design(stored.design)
        return cls.from_dict({k: v for k, v in stored.design_snapshot.items()
                              if k != STUDY_CONFIG_KEY})


EGO_FLIGHT_CONDITIONS = (
    OrderingCondition("2 frames", n_frames=2),
    OrderingCondition("4 frames"),  # EGO-FLIGHT's "original": 4 frames, medium, brief, no hints
    OrderingCondition("8 frames", n_frames=8),
    OrderingCondition("short", span="short"),
    OrderingCondition("long", span="long"),
    OrderingCondition("no annotation", annotation="none"),
    OrderingCondition("comprehensive annotation", annotation="comprehensive"),
    OrderingCondition("hint 1&3", hint_positions=(0, 2)),
    OrderingCondition("hint 2&4", hint_positions=(1, 3)),
)

ARROW_OF_TIME = Design(
    name="arrow-of-time",
    title="Arrow of time: forward or reversed?",
    task="aot",
    description=("Each clip once forward and once reversed over two sessions on different "
                 "days (Hanyu et al., 2023; AoT-PsyPhyBENCH)."),
    sessions=2,
    session_gap_hours=20.0,
    main_blocks=4,
    practice=PracticeSpec(n_trials=4, min_accuracy=0.75, max_attempts=2),
    catch_per_block=1,
    benchmark_subset_excludes=("Reciprocal",),
    exclusions=ExclusionRules(min_mean_trial_ms=300.0),
)

FRAME_ORDERING = Design(
    name="frame-ordering",
    title="Frame ordering: put the frames in time order",
    task="frame_order",
    description=("EGO-FLIGHT's nine frame-sorting conditions within participants; a "
                 "participant never sees two versions of the same clip."),
    sessions=1,
    main_blocks=3,
    practice=PracticeSpec(n_trials=2, min_accuracy=0.5, max_attempts=2),
    catch_per_block=1,
    conditions=EGO_FLIGHT_CONDITIONS,
    exclusions=ExclusionRules(min_mean_trial_ms=2000.0, min_practice_accuracy=0.5),
)

TRA_SWEEP = Design(
    name="tra-sweep",
    title="Arrow of time over physical sweeps",
    task="aot",
    description=("The TRA paper's sweeps (ball restitution, pendulum damping): every sweep "
                 "clip 12 times forward and 12 times reversed in one session, for a "
                 "psychometric curve per participant."),
    sessions=1,
    main_blocks=8,
    practice=PracticeSpec(n_trials=4, min_accuracy=0.75, max_attempts=2),
    catch_per_block=1,
    excluded_splits=("practice", "catch"),
    included_splits=("tra-sweep",),
    repeats_per_direction=12,
    exclusions=ExclusionRules(min_mean_trial_ms=300.0),
)

TRA_ADAPTIVE = Design(
    name="tra-adaptive",
    title="Arrow of time over physical sweeps, levels chosen adaptively",
    task="aot",
    description=("The TRA paper's sweeps with each trial's level chosen by QUEST+ from the "
                 "answers before it: 120 trials a sweep in one session (tra-sweep: 240 "
                 "and 264)."),
    sessions=1,
    main_blocks=4,
    practice=PracticeSpec(n_trials=4, min_accuracy=0.75, max_attempts=2),
    catch_per_block=1,
    excluded_splits=("practice", "catch"),
    included_splits=("tra-sweep",),
    adaptive_trials=120,
    exclusions=ExclusionRules(min_mean_trial_ms=300.0),
)

AOT_LENGTH_ADAPTIVE = Design(
    name="aot-length-adaptive",
    title="Arrow of time: how much of a clip is needed, lengths chosen adaptively",
    task="aot",
    description=("Each clip cut to the n frames around its middle, n chosen by QUEST+ from the answers "
                 "before it (forward and reversed show the same n frames): 120 trials in one "
                 "session."),
    sessions=1,
    main_blocks=4,
    practice=PracticeSpec(n_trials=4, min_accuracy=0.75, max_attempts=2),
    catch_per_block=1,
    excluded_splits=("practice", "catch"),
    included_splits=("length-sweep",),
    adaptive_trials=120,
    exclusions=ExclusionRules(min_mean_trial_ms=300.0),
)

DESIGNS: dict[str, Design] = {
    ARROW_OF_TIME.name: ARROW_OF_TIME,
    FRAME_ORDERING.name: FRAME_ORDERING,
    TRA_SWEEP.name: TRA_SWEEP,
    TRA_ADAPTIVE.name: TRA_ADAPTIVE,
    AOT_LENGTH_ADAPTIVE.name: AOT_LENGTH_ADAPTIVE,
}


def get_design(name: str) -> Design:
    try:
        return DESIGNS[name]
    except KeyError:
        raise ValueError(f"unknown design {name!r}; known: {', '.join(DESIGNS)}") from None


def required_frame_sets(designs=None) -> tuple[tuple[int, str], ...]:
    """Every ``(n_frames, span)`` frame set the designs' conditions show, in a stable order.

    Stimulus preparation makes exactly these, so each condition finds its frame set.
    """
    designs = DESIGNS.values() if designs is None else designs
    needed = {(c.n_frames, c.span) for d in designs for c in d.conditions
              if isinstance(c, OrderingCondition)}
    return tuple(sorted(needed, key=lambda item: (SPANS.index(item[1]), item[0])))
