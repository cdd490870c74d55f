"""The tra-sweep design: every sweep level shown the stated number of times, counterbalanced."""
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from experiments import study_file
from experiments.catalog_records import Catalog, ClipRecord, StimulusRecord
from experiments.designs import DESIGNS, Design
from experiments.schedule import build_schedule, choose_condition, clip_pools, condition_cells
from experiments.synthetic import DAMPINGS, RESTITUTIONS, TRA_SPLIT
from experiments.synthetic.tra_bullet import SWEEP_DAMPINGS, SWEEP_RESTITUTIONS
from tests.experiments.catalogs import make_catalog

DESIGN = DESIGNS["tra-sweep"]
SHIPPED = Path(__file__).resolve().parents[2] / "experiments" / "studies" / "tra-sweep.toml"
TRIALS_PER_LEVEL = 24  # the power calculation in experiments/designs.py


def _sweep_catalog(clips_per_level: int = 1, levels=None) -> Catalog:
    """make_catalog's regular clips and catch videos plus the 17 sweep levels (or ``levels``:
    (scenario, parameter, value, category, clips at that level) rows)."""
    base = make_catalog(per_category=2)
    clips, ids = list(base.clips), iter(range(50_000, 10**6))
    levels = levels or [("bouncing_ball", "restitution", e, "Fall", clips_per_level)
                        for e in RESTITUTIONS] + \
        [("pendulum", "damping", d, "Reciprocal", clips_per_level) for d in DAMPINGS]
    for scenario, parameter, value, category, clips_here in levels:
        for k in range(clips_here):
            stimuli = tuple(StimulusRecord(n, f"s{n}", "clip", d)
                            for d, n in (("forward", next(ids)), ("backward", next(ids))))
            clips.append(ClipRecord(len(clips) + 1, f"tra-{scenario}-{value:.1f}-{k}",
                                    (category,), stimuli, split=TRA_SPLIT,
                                    params={"scenario": scenario, parameter: value}))
    return Catalog(tuple(clips), base.catch)


def _main(schedule):
    return [t for t in schedule if t["block"] != "practice" and t["trial_type"] == "aot"]


@pytest.fixture(scope="module")
def catalog():
    return _sweep_catalog()


def test_main_clips_are_the_sweep_and_practice_comes_from_the_other_clips(catalog):
    main, practice = clip_pools(DESIGN, catalog)
    assert len(main) == len(RESTITUTIONS) + len(DAMPINGS) == 17
    assert {c.split for c in main} == {TRA_SPLIT}
    assert practice and all(c.split != TRA_SPLIT for c in practice)


@pytest.mark.parametrize("seed", range(4))
def test_every_level_has_the_stated_trials_half_each_way(catalog, seed):
    condition = choose_condition(DESIGN, {}, np.random.default_rng(seed))
    main = _main(build_schedule(DESIGN, catalog, seed, 1, condition))
    per_level = Counter((t["source_clip_id"], t["direction"]) for t in main)
    assert len(main) == 17 * TRIALS_PER_LEVEL
    assert set(per_level.values()) == {TRIALS_PER_LEVEL // 2}
    assert DESIGN.repeats_per_direction * 2 == TRIALS_PER_LEVEL


def test_k_clips_per_level_give_k_times_the_trials():
    main = _main(build_schedule(DESIGN, _sweep_catalog(2), 3, 1,
                                choose_condition(DESIGN, {}, np.random.default_rng(3))))
    assert len(main) == 2 * 17 * TRIALS_PER_LEVEL


def test_the_pybullet_study_file_gives_22_ball_and_20_pendulum_trials_a_level():
    # The PyBullet set's sweeps (experiments/synthetic/tra_bullet.py): 10 restitution levels
    # with 11 clips each, 11 damping levels with 10 clips each.
    design = study_file.load(SHIPPED.with_name("tra-sweep-pybullet.toml")).design
    levels = [("bouncing_ball", "restitution", e, "Fall", 11) for e in SWEEP_RESTITUTIONS] + \
             [("pendulum", "damping", d, "Reciprocal", 10) for d in SWEEP_DAMPINGS]
    catalog = _sweep_catalog(levels=levels)
    keys = {c.id: c.clip_key for c in catalog.clips}  # "tra-pendulum-2.0-7": level, clip 7
    main = _main(build_schedule(design, catalog, 5, 1,
                                choose_condition(design, {}, np.random.default_rng(5))))
    assert len(main) == 440
    per_level = Counter(keys[t["source_clip_id"]].rsplit("-", 1)[0] for t in main)
    assert {k: v for k, v in per_level.items() if "bouncing_ball" in k} == {
        f"tra-bouncing_ball-{e:.1f}": 22 for e in SWEEP_RESTITUTIONS}
    assert {k: v for k, v in per_level.items() if "pendulum" in k} == {
        f"tra-pendulum-{d:.1f}": 20 for d in SWEEP_DAMPINGS}


def test_order_is_random_blocks_are_balanced_and_catch_trials_are_in_every_block(catalog):
    condition = choose_condition(DESIGN, {}, np.random.default_rng(0))
    first = build_schedule(DESIGN, catalog, 11, 1, condition)
    other = build_schedule(DESIGN, catalog, 12, 1, condition)
    assert [t["stimulus_id"] for t in _main(first)] != [t["stimulus_id"] for t in _main(other)]
    blocks = Counter(t["block"] for t in _main(first))
    assert len(blocks) == DESIGN.main_blocks and max(blocks.values()) - min(blocks.values()) <= 1
    catch = Counter(t["block"] for t in first if t["trial_type"] == "catch")
    assert set(catch) == set(blocks) and set(catch.values()) == {DESIGN.catch_per_block}
    for block in blocks:  # each block close to half forward, half reversed
        directions = Counter(t["direction"] for t in _main(first) if t["block"] == block)
        assert abs(directions["forward"] - directions["backward"]) <= 2


def test_key_mapping_is_counterbalanced_and_exclusions_are_the_usual_ones():
    assert DESIGN.counterbalance_keys
    assert {c["forward_key"] for c in condition_cells(DESIGN)} == set(DESIGN.response_keys)
    assert DESIGN.exclusions == DESIGNS["arrow-of-time"].exclusions


def test_snapshot_round_trip_and_the_shipped_study_file():
    assert Design.from_dict(DESIGN.to_dict()) == DESIGN
    assert study_file.load(SHIPPED).design.to_dict() == DESIGN.to_dict()


def test_other_designs_keep_excluding_the_sweep(catalog):
    for name in ("arrow-of-time", "frame-ordering"):
        main, _ = clip_pools(DESIGNS[name], catalog)
        assert all(c.split != TRA_SPLIT for c in main)
        assert DESIGNS[name].repeats_per_direction == 0 and not DESIGNS[name].included_splits
