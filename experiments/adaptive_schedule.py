"""The slots of an adaptive design's session, and choosing a slot's level once the answers
before it are stored (the placement itself is :mod:`experiments.adaptive`).

A session of a design with ``adaptive_trials = n`` has n slots per sweep of its included
splits, built with the schedule like any trial (dealt into blocks, catch trials among
them): each has its sweep, its direction (half forward, half reversed, in the session's
random order) and, for every stored level of the sweep, the one clip it would show there
(the participant's own rotation through the level's source clips, so a level shown again
shows another clip where the set has several) and the way the sweep's curve runs where its
physics says so (``experiments.synthetic.curve_direction``; QUEST+ then places levels for
curves of that direction only). What a slot lacks is its level: that is
chosen by :func:`resolve` when the browser first asks for the slot's video, from the
answers stored on the sweep's earlier slots, and written into the schedule with the
posterior that made the choice. The level is then fixed: a reload, a second tab or a
replayed post reads it back, and the choice is a function of the seed (directions, clips,
order) and the stored answers alone.

With a stopping rule (``adaptive_stop_halfwidth``), each answer on a slot may end its sweep
(:func:`stop_sweep`): once the threshold's 95% credible interval is within the target, the
sweep's later slots are marked skipped, with the posterior that ended it. A skipped slot is
never served, shown or stored, and is no part of the trials the session runs
(:func:`to_run`): it completes without them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np

from experiments import adaptive, length_sweep
from experiments.catalog_records import ClipRecord
from experiments.synthetic import curve_direction, sweep_labels
from experiments.trial_types import aot

T = TypeVar("T", bound=Mapping)
KEY = "adaptive"  # a slot's key in its scheduled trial (server-only: never sent)


class NotYet(ValueError):
    """A slot whose sweep has an earlier slot not yet stored: its level cannot be chosen."""


def _labels(params: dict) -> dict:
    """A sweep clip's labels: a clip-length cut's (``experiments.length_sweep``) or a TRA
    sweep clip's."""
    return length_sweep.labels(params) if length_sweep.is_length_clip(params) \
        else sweep_labels(params)


def sweeps(clips: Sequence[ClipRecord]) -> dict[str, dict[float, list[ClipRecord]]]:
    """Scenario -> level -> its clips (by clip key), for sweep clips (``sweep_labels``, or
    ``length_sweep.labels`` for clip-length cuts)."""
    out: dict[str, dict[float, list[ClipRecord]]] = {}
    for clip in sorted(clips, key=lambda c: c.clip_key):
        try:
            labels = _labels(dict(clip.params))
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"clip {clip.clip_key!r} is no sweep clip, which an adaptive "
                             f"design needs: {err}") from None
        out.setdefault(labels["scenario"], {}).setdefault(labels["parameter_value"], []).append(clip)
    for scenario, levels in out.items():
        adaptive.parameter_grid(sorted(levels))  # at least 3 levels, or say which sweep lacks them
    return out


def slots(design, clips: Sequence[ClipRecord], rng: np.random.Generator) -> list[dict]:
    """``design.adaptive_trials`` unresolved trials per sweep of ``clips``."""
    n = design.adaptive_trials
    out = []
    for scenario, levels in sorted(sweeps(clips).items()):
        directions = [aot.DIRECTIONS[i % 2] for i in rng.permutation(n) + int(rng.integers(2))]
        turns = {level: rng.permutation(len(group)) for level, group in levels.items()}
        for k, direction in enumerate(directions):
            pool = []
            for level, group in sorted(levels.items()):
                clip = group[int(turns[level][k % len(group)])]
                pool.append([level, clip.clip(direction).id, clip.id])  # type: ignore[union-attr]
            first = next(iter(levels.values()))[0]
            trial = aot.build_trial(design, first, direction)
            trial.update(stimulus_id=None, public_id=None, source_clip_id=None, clip_key=None)
            trial[KEY] = {"sweep": scenario, "slot": k, "pool": pool,
                          "curve_direction": curve_direction(scenario, levels)}
            out.append(trial)
    return out


def pending(trial: Mapping) -> bool:
    """Whether ``trial`` is a slot whose level is not chosen yet (nor ever, if skipped)."""
    return KEY in trial and trial["stimulus_id"] is None


def skipped(trial: Mapping) -> bool:
    """Whether ``trial`` is a slot its sweep's stopping rule made unneeded."""
    return KEY in trial and bool(trial[KEY].get("skipped"))


def to_run(schedule: Sequence[T]) -> list[T]:
    """The trials of ``schedule`` a session runs: all but skipped slots."""
    return [t for t in schedule if not skipped(t)]


def stop_sweep(schedule: Sequence[Mapping], index: int, answers: Mapping[int, bool | None],
               halfwidth_steps: float) -> list[dict] | None:
    """After the answer on slot ``index`` (in ``answers``, as for :func:`resolve`): where the
    posterior of its sweep's threshold from every answer so far is within
    ``halfwidth_steps`` (:func:`experiments.adaptive.reached`), ``schedule`` with the
    sweep's later slots skipped, each with that posterior; None where the sweep goes on
    (or has no later slot)."""
    trial = schedule[index]
    sweep = trial[KEY]["sweep"]
    later = [t["trial_index"] for t in schedule[index + 1:]
             if KEY in t and t[KEY]["sweep"] == sweep and pending(t) and not skipped(t)]
    if not later:
        return None
    done = [t for t in schedule[:index + 1] if KEY in t and t[KEY]["sweep"] == sweep
            and not pending(t)]
    grid = adaptive.parameter_grid([entry[0] for entry in trial[KEY]["pool"]],
                                   trial[KEY].get("curve_direction"))
    said = adaptive.summary(grid, adaptive.posterior(
        grid, [(t[KEY]["level"], answers.get(t["trial_index"])) for t in done]))
    if not adaptive.reached(said, halfwidth_steps):
        return None
    stopped = {"skipped": True, "posterior": said | {"n_answers": sum(
        answers.get(t["trial_index"]) is not None for t in done)}}
    return [dict(t) | {KEY: dict(t[KEY]) | stopped} if t["trial_index"] in later else dict(t)
            for t in schedule]


def pool_ids(schedule: Sequence[Mapping]) -> set[int]:
    """Every stimulus a slot of ``schedule`` may show or might have shown, resolved or not:
    the session's videos are served at one size, the largest of these, and a size counted
    over the open slots only shrank as they were resolved, so a URL fetched again came back
    another size."""
    return {entry[1] for t in schedule if KEY in t for entry in t[KEY]["pool"]}


def resolve(schedule: Sequence[Mapping], index: int,
            answers: Mapping[int, bool | None]) -> list[dict]:
    """``schedule`` with slot ``index``'s level chosen from ``answers`` (trial index ->
    correct, None for a stored trial without an answer); raises :class:`NotYet` while an
    earlier slot of its sweep is not in ``answers``."""
    trial = schedule[index]
    sweep = trial[KEY]["sweep"]
    earlier = [t for t in schedule[:index] if KEY in t and t[KEY]["sweep"] == sweep]
    waiting = [t["trial_index"] for t in earlier if t["trial_index"] not in answers or pending(t)]
    if waiting:
        raise NotYet(f"trial {index} waits for the answer to trial {waiting[0]}")
    pool = trial[KEY]["pool"]
    # a slot scheduled before sweeps had a known direction places levels for either
    grid = adaptive.parameter_grid([entry[0] for entry in pool],
                                   trial[KEY].get("curve_direction"))
    level, posterior = adaptive.next_level(
        grid, [(t[KEY]["level"], answers[t["trial_index"]]) for t in earlier])
    _, stimulus_id, clip_id = next(e for e in pool if e[0] == level)
    chosen = dict(trial) | {"stimulus_id": stimulus_id, "source_clip_id": clip_id}
    chosen[KEY] = dict(trial[KEY]) | {"level": level, "posterior": posterior}
    return [dict(t) if i != index else chosen for i, t in enumerate(schedule)]
