"""The tra-adaptive design: QUEST+ slots in the schedule, each level chosen from the answers
stored before it, the same levels from the same seed and answers."""
from collections import Counter

import numpy as np
import pytest
from scipy import special

from experiments import adaptive
from experiments.adaptive_schedule import (
    KEY,
    NotYet,
    pending,
    pool_ids,
    resolve,
    skipped,
    stop_sweep,
    to_run,
)
from experiments.designs import DESIGNS
from experiments.schedule import build_schedule, choose_condition
from tests.experiments.test_tra_sweep_design import _sweep_catalog

DESIGN = DESIGNS["tra-adaptive"]
BALL = np.round(np.arange(1, 11) * 0.1, 1)


def _schedule(seed=0, clips_per_level=1, design=DESIGN):
    catalog = _sweep_catalog(clips_per_level)
    return build_schedule(design, catalog, seed, 1,
                          choose_condition(design, {}, np.random.default_rng(seed)))


def _observer(trial, rng):
    """Right with P falling from 1 to chance at restitution 0.6 / rising at damping 1.5."""
    level = trial[KEY]["level"]
    p = 0.5 + 0.5 * special.ndtr((0.6 - level) / 0.15 if trial[KEY]["sweep"] == "bouncing_ball"
                                 else (level - 1.5) / 0.75)
    return bool(rng.random() < p)


def _run(schedule, seed=0, stop=0.0):
    """Every slot resolved in order, as the server does, answered by :func:`_observer`; with
    ``stop``, a sweep's later slots skipped once its posterior is that narrow."""
    rng, answers = np.random.default_rng(seed), {}
    for trial in schedule:
        index = trial["trial_index"]
        if skipped(schedule[index]):
            continue
        if KEY in trial:
            schedule = resolve(schedule, index, answers)
            answers[index] = _observer(schedule[index], rng)
            schedule = (stop and stop_sweep(schedule, index, answers, stop)) or schedule
        elif trial["block"] != "practice":
            answers[index] = None  # a catch trial: no sweep answer
    return schedule, answers


def test_a_session_has_the_design_s_slots_per_sweep_half_each_way_with_no_level_yet():
    schedule = _schedule()
    slots = [t for t in schedule if KEY in t]
    per_sweep = Counter((t[KEY]["sweep"], t["direction"]) for t in slots)
    assert per_sweep == {(s, d): DESIGN.adaptive_trials // 2 for s in ("bouncing_ball", "pendulum")
                         for d in ("forward", "backward")}
    assert all(pending(t) and t["correct_response"] == ("F" if t["direction"] == "forward" else "B")
               for t in slots)
    # the videos a slot may show count towards the session's one served size
    assert len(pool_ids(schedule)) == 2 * 17


def test_the_videos_counted_for_the_served_size_stay_as_slots_are_resolved():
    fresh = _schedule()
    for stop in (0.0, 1.0):  # every slot resolved, or some skipped by the stopping rule
        schedule, _ = _run(fresh, stop=stop)
        assert not any(pending(t) and not skipped(t) for t in schedule)
        assert pool_ids(schedule) == pool_ids(fresh) and len(pool_ids(fresh)) == 2 * 17


def test_a_level_waits_for_every_earlier_answer_of_its_sweep():
    schedule = _schedule()
    ball = [t["trial_index"] for t in schedule if t.get(KEY, {}).get("sweep") == "bouncing_ball"]
    first = resolve(schedule, ball[0], {})
    assert first[ball[0]][KEY]["level"] in BALL
    with pytest.raises(NotYet, match=f"waits for the answer to trial {ball[0]}"):
        resolve(first, ball[1], {})
    with pytest.raises(NotYet):  # stored but never resolved: no level to learn from
        resolve(schedule, ball[1], {ball[0]: True})


def test_levels_are_reproducible_from_the_seed_and_the_stored_answers():
    run, answers = _run(_schedule(seed=3))
    again = _schedule(seed=3)
    for trial in again:  # replay the stored answers in any order the server may see requests
        if KEY in trial:
            again = resolve(again, trial["trial_index"], answers)
    assert again == run
    other = dict(answers)
    flipped = next(i for i, t in enumerate(run) if KEY in t)
    other[flipped] = not other[flipped]
    changed = _schedule(seed=3)
    for trial in changed:
        if KEY in trial:
            changed = resolve(changed, trial["trial_index"], other)
    assert [t.get(KEY, {}).get("level") for t in changed] != [t.get(KEY, {}).get("level") for t in run]


def test_each_choice_is_stored_with_the_posterior_that_made_it():
    run, answers = _run(_schedule(seed=1))
    ball = [t for t in run if t.get(KEY, {}).get("sweep") == "bouncing_ball"]
    assert {t[KEY]["curve_direction"] for t in ball} == {-1}  # restitution up to 1: falling
    grid = adaptive.parameter_grid(BALL, -1)
    seen = [(t[KEY]["level"], answers[t["trial_index"]]) for t in ball[:-1]]
    assert ball[-1][KEY]["posterior"] == adaptive.next_level(grid, seen)[1]
    assert ball[-1][KEY]["posterior"]["n_answers"] == len(ball) - 1
    # placed near the threshold (0.6), not spread over the sweep as a fixed design would
    levels = [t[KEY]["level"] for t in ball[len(ball) // 2:]]
    assert 0.3 <= np.median(levels) <= 0.8
    assert abs(ball[-1][KEY]["posterior"]["threshold_mean"] - 0.6) <= 0.1  # one level step


def test_several_clips_a_level_are_shown_in_turn():
    run, _ = _run(_schedule(seed=2, clips_per_level=3))
    by_level = {}
    for t in run:
        if KEY in t:
            by_level.setdefault((t[KEY]["sweep"], t[KEY]["level"]), set()).add(t["source_clip_id"])
    assert max(len(clips) for clips in by_level.values()) > 1


def _reference_entropies(grid, post):
    """QUEST+ by its definition, one level and one outcome at a time."""
    thresholds = np.unique(grid.threshold)
    out = []
    for j in range(grid.levels.size):
        total = 0.0
        for p in (grid.p_correct[:, j], 1 - grid.p_correct[:, j]):
            joint = post * p
            marginal = np.array([joint[grid.threshold == t].sum() for t in thresholds])
            marginal = marginal / joint.sum()
            nz = marginal[marginal > 0]
            total += joint.sum() * -(nz * np.log(nz)).sum()
        out.append(total)
    return np.array(out)


def test_expected_entropies_equal_quest_plus_by_its_definition():
    grid = adaptive.parameter_grid(BALL)
    post = adaptive.posterior(grid, [(0.5, True), (0.7, False), (0.6, None), (0.3, True)])
    assert np.allclose(adaptive.expected_entropies(grid, post), _reference_entropies(grid, post))


def test_bad_levels_and_answers_are_refused():
    with pytest.raises(ValueError, match="at least 3 distinct"):
        adaptive.parameter_grid([0.1, 0.2])
    with pytest.raises(ValueError, match="not one of the sweep"):
        adaptive.posterior(adaptive.parameter_grid(BALL), [(0.55, True)])
    with pytest.raises(ValueError, match="adaptive_trials"):
        DESIGN.with_changes(repeats_per_direction=2)


def test_a_set_whose_sweep_has_too_few_levels_cannot_schedule_it():
    """A ValueError escaped the schedule's own error, so the researcher's study list, which
    asks every design of every set whether it can run, answered 500 once a set with a
    two-level sweep was stored (seen in the merged test run)."""
    from experiments.schedule import ScheduleError
    from tests.experiments.test_tra_sweep_design import _sweep_catalog

    two = _sweep_catalog(levels=[("bouncing_ball", "restitution", e, "Fall", 1)
                                 for e in (0.6, 0.8)])
    with pytest.raises(ScheduleError, match="at least 3 distinct"):
        build_schedule(DESIGN, two, 0, 1, choose_condition(DESIGN, {}, np.random.default_rng(0)))


def test_the_sweep_s_physics_fixes_the_curve_s_direction_and_an_older_slot_keeps_both():
    # An outside psychophysicist: the physics says which way each sweep's curve rises (harder
    # towards the lossless end), so QUEST+ need not spend trials on the direction.
    assert adaptive.parameter_grid(BALL, -1).direction.tolist() == \
        [-1.0] * (adaptive.parameter_grid(BALL).direction.size // 2)
    schedule = _schedule()
    assert {t[KEY]["sweep"]: t[KEY]["curve_direction"] for t in schedule if KEY in t} == \
        {"bouncing_ball": -1, "pendulum": 1}
    first = next(t for t in schedule if KEY in t)
    known = resolve(schedule, first["trial_index"], {})[first["trial_index"]][KEY]["posterior"]
    assert known["p_rising"] in (0.0, 1.0)
    older = [dict(t) | {KEY: {k: v for k, v in t[KEY].items() if k != "curve_direction"}}
             if KEY in t else t for t in schedule]
    free = resolve(older, first["trial_index"], {})[first["trial_index"]][KEY]["posterior"]
    assert free["p_rising"] == 0.5


def test_a_sweep_stops_once_its_threshold_is_known_and_does_so_reproducibly():
    design = DESIGN.with_changes(adaptive_stop_halfwidth=2.0)
    run, answers = _run(_schedule(seed=5, design=design), seed=5, stop=2.0)
    again, _ = _run(_schedule(seed=5, design=design), seed=5, stop=2.0)
    assert again == run  # the same seed and answers skip the same slots
    for sweep in ("bouncing_ball", "pendulum"):
        slots = [t for t in run if t.get(KEY, {}).get("sweep") == sweep]
        gone = [t for t in slots if skipped(t)]
        assert 0 < len(gone) < len(slots) and slots[-1] in gone
        # skipped slots come after every shown one, each with the posterior that ended it
        shown = [t for t in slots if not skipped(t)]
        assert max(t["trial_index"] for t in shown) < min(t["trial_index"] for t in gone)
        said = gone[0][KEY]["posterior"]
        assert said["halfwidth_steps"] <= 2.0 and said["n_answers"] == len(shown)
        assert all(t[KEY]["posterior"] == said and pending(t) for t in gone)
    assert len(to_run(run)) == len(run) - sum(skipped(t) for t in run)
    # without a target no sweep stops
    assert not any(skipped(t) for t in _run(_schedule(seed=5))[0])


def test_the_stopping_setting_is_checked_where_it_is_written():
    from pathlib import Path

    from experiments.study_file import loads

    studies = Path(__file__).resolve().parents[2] / "experiments" / "studies"
    adaptive_file = (studies / "tra-adaptive.toml").read_text()
    with pytest.raises(ValueError, match="adaptive_stop_halfwidth: expected a non-negative "
                                         "number of level steps, got -1"):
        loads(adaptive_file.replace("[blocks]", "[blocks]\nadaptive_stop_halfwidth = -1"))
    with pytest.raises(ValueError, match="only for an adaptive design"):
        loads((studies / "tra-sweep.toml").read_text().replace(
            "[blocks]", "[blocks]\nadaptive_stop_halfwidth = 1"))
    config = loads(adaptive_file.replace("[blocks]", "[blocks]\nadaptive_stop_halfwidth = 1.5"))
    assert config.design.adaptive_stop_halfwidth == 1.5


def test_a_sweep_never_stops_on_a_posterior_piled_at_the_sweep_s_edge():
    # An outside psychophysicist (stop_chance.py): a participant at chance drives QUEST+ with
    # the direction fixed to the easiest level, and the posterior piles at the prior's edge,
    # a quarter step wide; with a target of one step the sweep stopped after 6-28 trials.
    grid = adaptive.parameter_grid(BALL, -1)
    rng, log_post, stops = np.random.default_rng(0), np.zeros(grid.threshold.size), []
    for n in range(40):
        level, said = adaptive.choose(grid, adaptive.normalised(log_post), n)
        stops.append(adaptive.reached(said, 1.0))
        log_post = adaptive.updated(grid, log_post, level, bool(rng.random() < 0.5))
    assert said["halfwidth_steps"] <= 1.0 and said["threshold_lo"] < min(BALL)
    assert not said["within_levels"] and not any(stops)
    # a posterior inside the levels, as narrow, may stop
    inside = said | {"threshold_lo": 0.5, "threshold_hi": 0.6, "within_levels": True}
    assert adaptive.reached(inside, 1.0)
