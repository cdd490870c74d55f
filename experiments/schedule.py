"""Trial schedules: design + catalog + seed + session number -> the whole trial list.

Pure: no database, no clock.  All randomness comes from ``numpy.random.default_rng`` seeded
with ``[seed, stream]``, so one stored seed rebuilds every session of a participant:

* stream 0 (the participant): which clips, and the direction of each clip in session 1
  (session 2 shows every clip in the other direction: each clip once forward and once
  reversed across the two sessions, never both in one session);
* stream ``session_number``: trial order, block membership, catch-trial positions and the
  presented permutation of frame-ordering trials;
* stream ``1000 * session_number + attempt``: practice attempt ``attempt``;
* stream 999999: the presented permutations of :func:`design_trials`.

What differs between tasks (which clips are usable, the trials of a session, how blocks are
balanced) is asked of the design's task module in :data:`experiments.trial_types.TASKS`;
nothing here names a trial type.

A trial is a plain dict.  Server-only keys (``correct_response``, ``direction``,
``stimulus_id`` ...) stay on the server; :func:`public_trial` gives what the browser may see.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from itertools import product

import numpy as np

from experiments import adaptive_schedule
from experiments.catalog_records import Catalog, CatchRecord, ClipRecord
from experiments.designs import Design
from experiments.trial_types import ATTENTION_CHECK, TASKS, TRIAL_TYPES
from experiments.trial_types.plan import SessionPlan

PRACTICE = "practice"
_PRACTICE_STREAM = 1000
_DESIGN_TRIALS_STREAM = 999_999


class ScheduleError(ValueError):
    """The catalog cannot satisfy the design (e.g. no clip with both directions)."""


def _rng(seed: int, *stream: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), *stream])


# --- between-subject conditions ------------------------------------------------------------

def condition_cells(design: Design) -> list[dict]:
    """Every combination of the between-subject factors, in a fixed order."""
    keys = design.response_keys if design.counterbalance_keys else design.response_keys[:1]
    rotations = range(TASKS[design.task].rotations(design))
    return [{"forward_key": key, "rotation": rotation} for key, rotation in product(keys, rotations)]


def cell_name(cell: Mapping) -> str:
    return f"forward={cell['forward_key']};rotation={cell['rotation']}"


def choose_condition(design: Design, counts: Mapping[str, int], rng: np.random.Generator) -> dict:
    """The least-filled between-subject cell given current ``counts`` (ties broken at random).

    Returns the session's ``condition``: the cell name, the key mapping
    (``{"f": "F", "j": "B"}`` means f = forward) and the Latin-square rotation.
    """
    cells = condition_cells(design)
    filled = np.array([counts.get(cell_name(c), 0) for c in cells])
    candidates = np.flatnonzero(filled == filled.min())
    cell = cells[int(rng.choice(candidates))]
    forward = cell["forward_key"]
    other = next(k for k in design.response_keys if k != forward)
    return {"cell": cell_name(cell), "forward_key": forward, "rotation": cell["rotation"],
            "key_mapping": {forward: "F", other: "B"}}


def session_opens_at(design: Design, previous_completed_at: datetime) -> datetime:
    """When the next session of a multi-session design becomes available."""
    return previous_completed_at + timedelta(hours=design.session_gap_hours)


# --- clip pools --------------------------------------------------------------------------

def _spread_pick(clips: Sequence[ClipRecord], n: int, rng: np.random.Generator) -> list[ClipRecord]:
    """``n`` clips taken round-robin over primary categories, so categories stay balanced."""
    by_category: dict[str, list[ClipRecord]] = {}
    for clip in clips:
        by_category.setdefault(clip.primary_category, []).append(clip)
    queues = [list(rng.permutation(len(group))) for group in by_category.values()]
    groups = list(by_category.values())
    picked: list[ClipRecord] = []
    while len(picked) < min(n, len(clips)):
        for group, queue in zip(groups, queues):
            if queue and len(picked) < n:
                picked.append(group[queue.pop()])
    return picked


def clip_pools(design: Design, catalog: Catalog) -> tuple[list[ClipRecord], list[ClipRecord]]:
    """(main clips, practice clips) for everyone in a study, sorted by ``clip_key``.

    Practice clips are the catalog's ``split == "practice"`` clips; without any, a fixed
    handful of main clips is set aside for practice (the same for every participant).
    """
    usable = sorted((c for c in catalog.clips if TASKS[design.task].usable(design, c)),
                    key=lambda c: c.clip_key)
    practice = [c for c in usable if c.split == PRACTICE]
    main = [c for c in usable if c.split not in design.excluded_splits]
    # A sweep design's main clips are its splits only; practice comes from the other clips,
    # so that no level of the sweep is set aside for practice.
    spare = [c for c in main if c.split not in design.included_splits]
    if design.included_splits:
        main = [c for c in main if c.split in design.included_splits]
    n_practice = min(design.practice.n_trials, 4)
    if not practice and design.practice.n_trials and design.included_splits and spare:
        practice = _spread_pick(spare, n_practice, np.random.default_rng(0))
    elif not practice and design.practice.n_trials and len(main) > n_practice:
        practice = _spread_pick(main, n_practice, np.random.default_rng(0))
        main = [c for c in main if c not in practice]
    if not main:
        raise ScheduleError(f"no clip in the catalog can be used by design {design.name!r}")
    return main, sorted(practice, key=lambda c: c.clip_key)


def _participant_clips(design: Design, main: list[ClipRecord], seed: int) -> list[ClipRecord]:
    rng = _rng(seed, 0)
    if design.max_clips is None or design.max_clips >= len(main):
        return list(main)
    return sorted(_spread_pick(main, design.max_clips, rng), key=lambda c: c.clip_key)


# --- blocks --------------------------------------------------------------------------------

def _deal_into_blocks(trials: list[dict], n_blocks: int, factors: Callable,
                      rng: np.random.Generator) -> list[list[dict]]:
    """Spread trials over blocks: each goes, in random order grouped by its first factor,
    to a block holding the fewest of that factor level, then the fewest trials, then the
    fewest of its second factor level.  Categories (or conditions) differ by at most one
    trial between blocks, block sizes stay even, and directions close to half and half."""
    n_blocks = max(1, min(n_blocks, len(trials)))
    order = sorted(rng.permutation(len(trials)).tolist(), key=lambda i: factors(trials[i])[0])
    blocks: list[list[dict]] = [[] for _ in range(n_blocks)]
    counts: list[dict] = [{} for _ in range(n_blocks)]
    for i in order:
        first, second = factors(trials[i])
        cost = [(counts[b].get((0, first), 0), len(blocks[b]), counts[b].get((1, second), 0),
                 rng.random()) for b in range(n_blocks)]
        best = min(range(n_blocks), key=cost.__getitem__)
        blocks[best].append(trials[i])
        counts[best][(0, first)] = counts[best].get((0, first), 0) + 1
        counts[best][(1, second)] = counts[best].get((1, second), 0) + 1
    return [[block[i] for i in rng.permutation(len(block))] for block in blocks]


def missing_catch_keys(design: Design, catalog: Catalog) -> tuple[str, ...]:
    """The design's response keys that no catch video of ``catalog`` instructs."""
    instructed = {record.instructed_key for record in catalog.catch}
    return tuple(key for key in design.response_keys if key not in instructed)


def catch_pool(design: Design, catalog: Catalog) -> tuple[CatchRecord, ...]:
    """The catch videos a session of ``design`` draws from: those instructing one of its
    response keys (another key is no answer the participant has), and none unless every
    response key has one (one key alone would make every attention check the same press)."""
    if missing_catch_keys(design, catalog):
        return ()
    return tuple(r for r in catalog.catch if r.instructed_key in design.response_keys)


def _add_catch(blocks: list[list[dict]], design: Design, records: Sequence[CatchRecord],
               key_mapping: Mapping, rng: np.random.Generator) -> None:
    """Add ``design.catch_per_block`` trials of ``records`` (a :func:`catch_pool`) to each block."""
    if not records or design.catch_per_block < 1:
        return
    order = [records[i] for i in rng.permutation(len(records))]
    count = 0
    for block in blocks:
        for _ in range(design.catch_per_block):
            record = order[count % len(order)]  # cycling keeps instructed keys balanced
            count += 1
            # Never first in a block: a catch trial checks attention during the task.
            trial = TRIAL_TYPES[ATTENTION_CHECK].build_trial(design, record, key_mapping)
            block.insert(int(rng.integers(1, len(block) + 1)), trial)


def _number(trials: list[dict], start: int, block: str | None = None) -> list[dict]:
    for offset, trial in enumerate(trials):
        trial["trial_index"] = start + offset
        if block is not None:
            trial["block"] = block
    return trials


# --- whole sessions ------------------------------------------------------------------------

def practice_trials(design: Design, catalog: Catalog, seed: int, session_number: int,
                    attempt: int = 1) -> list[dict]:
    """One practice attempt, with feedback: the server tells whether an answer was right once
    it is stored (the browser is never sent the answer, webapp.participant.feedback)."""
    _, pool = clip_pools(design, catalog)
    if not pool or design.practice.n_trials < 1:
        return []
    rng = _rng(seed, _PRACTICE_STREAM * session_number + attempt)
    n = design.practice.n_trials
    clips = [pool[i % len(pool)] for i in rng.permutation(max(n, len(pool)))[:n]]
    trials = TASKS[design.task].practice_trials(design, clips, rng)
    for trial in trials:
        trial["practice_attempt"] = attempt
        trial["params"]["feedback"] = True
    return _number(trials, 0, PRACTICE)


def main_trials(design: Design, catalog: Catalog, seed: int, session_number: int,
                condition: Mapping) -> list[dict]:
    """The main blocks of one session, catch trials included, numbered from 0."""
    main, _ = clip_pools(design, catalog)
    clips = _participant_clips(design, main, seed)
    rng = _rng(seed, session_number)
    task = TASKS[design.task]
    if design.adaptive_trials:
        try:
            trials = adaptive_schedule.slots(design, clips, rng)
        except ValueError as error:  # no sweep, or one of too few levels: this set cannot
            raise ScheduleError(str(error)) from None
    else:
        trials = task.main_trials(design, SessionPlan(
            clips=clips, study_clips=main, seed=seed, session_number=session_number,
            rotation=int(condition.get("rotation", 0)), rng=rng))
    blocks = _deal_into_blocks(trials, design.main_blocks, task.block_factors, rng)
    _add_catch(blocks, design, catch_pool(design, catalog), condition["key_mapping"], rng)
    numbered: list[dict] = []
    for number, block in enumerate(blocks, start=1):
        numbered.extend(_number(block, len(numbered), f"main-{number}"))
    return numbered


def design_trials(design: Design, catalog: Catalog, seed: int) -> list[dict]:
    """Every trial the design can show, numbered from 0: each main clip of the study in each
    of the task's versions (both directions, every condition), built by the same builders as
    participants' trials.  ``block`` is None: these trials belong to no session."""
    main, _ = clip_pools(design, catalog)
    trials = TASKS[design.task].design_trials(design, main, _rng(seed, _DESIGN_TRIALS_STREAM))
    for index, trial in enumerate(trials):
        trial.update(trial_index=index, block=None)
    return trials


def build_schedule(design: Design, catalog: Catalog, seed: int, session_number: int,
                   condition: Mapping) -> list[dict]:
    """Practice attempt 1 followed by the main blocks, with ``trial_index`` 0..n-1."""
    if not 1 <= session_number <= design.sessions:
        raise ScheduleError(f"design {design.name!r} has {design.sessions} session(s), "
                            f"not session {session_number}")
    practice = practice_trials(design, catalog, seed, session_number, attempt=1)
    main = main_trials(design, catalog, seed, session_number, condition)
    return practice + _number(main, len(practice))


def insert_practice_attempt(schedule: list[dict], practice: list[dict]) -> list[dict]:
    """A new schedule with ``practice`` right after the last practice trial; later trials are
    renumbered (only allowed before any of them is stored: the practice gate guarantees it)."""
    last = max((i for i, t in enumerate(schedule) if t["block"] == PRACTICE), default=-1)
    merged = [dict(t) for t in schedule[:last + 1]] + [dict(t) for t in practice] + \
        [dict(t) for t in schedule[last + 1:]]
    return _number(merged, 0)


# What practice_trials() adds to a practice trial's params: that it shows feedback, never the
# answer (schedules stored before also hold ``correct_response`` there; it is not sent).
FEEDBACK_PARAMETERS = ("feedback",)


def public_trial(trial: Mapping, media_url: Callable[[int, int | None], str]) -> dict:
    """What the browser may see of a trial: never the answer of a main trial, and nothing that
    differs with the answer or tells catch trials apart.

    ``media_url(trial_index, slot)`` gives a stimulus URL by trial and, for frame sets, by
    presented slot: public positions only, never a stimulus id or a frame's time index.
    Of ``params``, only the type's declared ``PARAMETERS`` (and whether a practice trial shows
    feedback) are sent, whatever its ``public_view`` passes on: a practice trial's answer is
    told after it is stored (webapp.participant.feedback), never before.
    """
    module = TRIAL_TYPES[trial["trial_type"]]
    view = module.public_view(trial, media_url)
    declared = (*module.PARAMETERS, *FEEDBACK_PARAMETERS)
    view["params"] = {key: value for key, value in view["params"].items() if key in declared}
    return view


def blocks_summary(schedule: Sequence[Mapping]) -> list[dict]:
    names: list[str] = []
    counts: dict[str, int] = {}
    for trial in schedule:
        if trial["block"] not in counts:
            names.append(trial["block"])
        counts[trial["block"]] = counts.get(trial["block"], 0) + 1
    return [{"name": name, "n_trials": counts[name]} for name in names]
