import json
from collections import Counter
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from experiments.catalog_records import Catalog
from experiments.catch import KEYS as CATCH_KEYS
from experiments.designs import DESIGNS
from experiments.schedule import (
    ScheduleError,
    build_schedule,
    catch_pool,
    choose_condition,
    clip_pools,
    design_trials,
    insert_practice_attempt,
    missing_catch_keys,
    practice_trials,
    public_trial,
    session_opens_at,
)
from experiments.trial_types import TRIAL_TYPES
from experiments.trial_types.frame_order import presented_frames
from tests.experiments.catalogs import make_catalog

AOT = DESIGNS["arrow-of-time"]
ORDER = DESIGNS["frame-ordering"]


def _condition(design, seed=0, counts=None):
    return choose_condition(design, counts or {}, np.random.default_rng(seed))


def _main(schedule, trial_type="aot"):
    return [t for t in schedule if t["block"] != "practice" and t["trial_type"] == trial_type]


@pytest.fixture(scope="module")
def catalog():
    return make_catalog(per_category=8)


def test_same_seed_same_schedule_other_seed_differs(catalog):
    condition = _condition(AOT)
    first = build_schedule(AOT, catalog, 123, 1, condition)
    assert first == build_schedule(AOT, catalog, 123, 1, condition)
    assert first != build_schedule(AOT, catalog, 124, 1, condition)
    assert [t["trial_index"] for t in first] == list(range(len(first)))


@pytest.mark.parametrize("seed", range(6))
def test_directions_balanced_and_no_clip_twice_in_a_session(catalog, seed):
    condition = _condition(AOT, seed)
    for number in (1, 2):
        main = _main(build_schedule(AOT, catalog, seed, number, condition))
        clips = [t["source_clip_id"] for t in main]
        assert len(clips) == len(set(clips))  # never both directions (or a repeat) in a session
        directions = Counter(t["direction"] for t in main)
        assert abs(directions["forward"] - directions["backward"]) <= 1
        for category in {t["categories"][0] for t in main}:
            per = Counter(t["direction"] for t in main if t["categories"][0] == category)
            assert abs(per["forward"] - per["backward"]) <= 1


@pytest.mark.parametrize("seed", range(4))
def test_two_sessions_cover_each_clip_once_per_direction(catalog, seed):
    condition = _condition(AOT, seed)
    shown = Counter()
    for number in (1, 2):
        shown.update((t["source_clip_id"], t["direction"])
                     for t in _main(build_schedule(AOT, catalog, seed, number, condition)))
    main_clips, _ = clip_pools(AOT, catalog)
    assert shown == Counter({(c.id, d): 1 for c in main_clips for d in ("forward", "backward")})


def test_categories_and_directions_spread_over_blocks(catalog):
    main = _main(build_schedule(AOT, catalog, 5, 1, _condition(AOT)))
    blocks = sorted({t["block"] for t in main})
    assert len(blocks) == AOT.main_blocks
    for category in {t["categories"][0] for t in main}:
        per_block = Counter(t["block"] for t in main if t["categories"][0] == category)
        counts = [per_block.get(b, 0) for b in blocks]
        assert max(counts) - min(counts) <= 1
    sizes = Counter(t["block"] for t in main).values()
    assert max(sizes) - min(sizes) <= 1
    for block in blocks:
        directions = Counter(t["direction"] for t in main if t["block"] == block)
        assert abs(directions["forward"] - directions["backward"]) <= 2


def test_practice_first_and_no_answer_in_any_view(catalog):
    # Issue 25: practice trials were sent their correct_response for the browser's feedback,
    # and a script answered practice from it.  The server tells it after storing the answer.
    schedule = build_schedule(AOT, catalog, 9, 1, _condition(AOT))
    practice = [t for t in schedule if t["block"] == "practice"]
    assert [t["trial_index"] for t in practice] == list(range(AOT.practice.n_trials))
    assert all(t["params"] == {"fixation_ms": AOT.fixation_ms, "feedback": True} for t in practice)
    _, practice_pool = clip_pools(AOT, catalog)
    main_clips = {t["source_clip_id"] for t in _main(schedule)}
    assert not main_clips & {c.id for c in practice_pool}
    media_url = lambda index, slot: f"/media/t/{index}"  # noqa: E731
    for trial in schedule:
        view = public_trial(trial, media_url)
        text = json.dumps(view)
        assert "correct_response" not in text and "forward" not in text and "backward" not in text
        assert "catch" not in text and trial["public_id"] not in text
        assert set(view) == {"trial_index", "trial_type", "block", "stimulus", "params"}
        assert view["stimulus"]["url"] == f"/media/t/{trial['trial_index']}"


@pytest.mark.parametrize("design", [AOT, ORDER], ids=lambda d: d.name)
def test_only_declared_parameters_reach_the_browser(catalog, design):
    """Whatever a type's public view passes on, the browser gets only its PARAMETERS (and
    whether a practice trial shows feedback): every type of the registry, catch trials
    included.  A schedule stored before issue 25 holds a practice answer in its params: it is
    not sent either."""
    schedule = build_schedule(design, catalog, 5, 1, _condition(design))
    assert {t["trial_type"] for t in schedule} == {design.task, "catch"}
    for trial in schedule:
        trial["params"]["undeclared"] = "server only"
        trial["params"]["correct_response"] = trial["correct_response"]
        declared = set(TRIAL_TYPES[trial["trial_type"]].PARAMETERS)
        view = public_trial(trial, lambda index, slot: f"/media/t/{index}")
        assert "undeclared" not in view["params"]
        if trial["block"] == "practice":
            assert set(view["params"]) == declared | {"feedback"}
        else:
            assert set(view["params"]) == declared


def test_catch_trials_per_block_balanced_keys(catalog):
    condition = _condition(AOT)
    schedule = build_schedule(AOT, catalog, 11, 1, condition)
    catch = [t for t in schedule if t["trial_type"] == "catch"]
    assert Counter(t["block"] for t in catch) == {f"main-{b}": AOT.catch_per_block
                                                  for b in range(1, AOT.main_blocks + 1)}
    assert abs(sum(t["instructed_key"] == "f" for t in catch) - len(catch) / 2) <= 1
    for trial in catch:
        assert trial["correct_response"] == condition["key_mapping"][trial["instructed_key"]]
    firsts = {}
    for trial in schedule:
        firsts.setdefault(trial["block"], trial)
    assert all(t["trial_type"] != "catch" for t in firsts.values())
    without = build_schedule(AOT, make_catalog(8, with_catch=False), 11, 1, condition)
    assert not [t for t in without if t["trial_type"] == "catch"]


@pytest.mark.parametrize("seed", range(4))
def test_catch_trials_instruct_the_study_keys_and_score_against_its_mapping(seed):
    # Issue 15: a lab that avoids f (WebKitGTK leaves fullscreen on it) answers with d and k;
    # the catch set holds a video for every key a study may choose.
    design = AOT.with_changes(response_keys=("d", "k"), main_blocks=4, catch_per_block=2)
    catalog = make_catalog(4, catch_keys=CATCH_KEYS)
    condition = _condition(design, seed)
    assert set(condition["key_mapping"]) == {"d", "k"}
    catch = [t for t in build_schedule(design, catalog, seed, 1, condition)
             if t["trial_type"] == "catch"]
    assert len(catch) == 8
    assert Counter(t["instructed_key"] for t in catch) == {"d": 4, "k": 4}
    ids = {r.instructed_key: r.stimulus.id for r in catalog.catch}
    for trial in catch:
        assert trial["stimulus_id"] == ids[trial["instructed_key"]]
        assert trial["correct_response"] == condition["key_mapping"][trial["instructed_key"]]
    assert {condition["key_mapping"][key] for key in "dk"} == {"F", "B"}


def test_a_catch_video_for_a_key_the_study_does_not_use_is_never_scheduled():
    catalog = make_catalog(4, catch_keys=("a", "f", "j", "x"))
    assert [r.instructed_key for r in catch_pool(AOT, catalog)] == ["f", "j"]
    for seed in range(8):
        keys = {t["instructed_key"] for t in build_schedule(AOT, catalog, seed, 1, _condition(AOT))
                if t["trial_type"] == "catch"}
        assert keys == {"f", "j"}


def test_without_a_catch_video_for_each_study_key_no_catch_trial_is_scheduled():
    # A set stored before it held every key (f and j only): a d/k study would otherwise show
    # only the one key it has, or none; study creation refuses it (tests/webapp/test_studies.py).
    design = AOT.with_changes(response_keys=("d", "k"))
    for keys, missing in ((("f", "j"), ("d", "k")), (("d", "f", "j"), ("k",))):
        catalog = make_catalog(4, catch_keys=keys)
        assert missing_catch_keys(design, catalog) == missing and catch_pool(design, catalog) == ()
        schedule = build_schedule(design, catalog, 3, 1, _condition(design))
        assert not [t for t in schedule if t["trial_type"] == "catch"]


def test_key_mapping_least_filled_and_counterbalanced():
    first = _condition(AOT, 0)
    assert set(first["key_mapping"]) == {"f", "j"} and set(first["key_mapping"].values()) == {"F", "B"}
    other = "forward=j;rotation=0" if first["forward_key"] == "f" else "forward=f;rotation=0"
    assert _condition(AOT, 1, {first["cell"]: 3, other: 2})["cell"] == other
    counts = Counter()
    for seed in range(40):
        counts[_condition(AOT, seed, counts)["cell"]] += 1
    assert sorted(counts.values()) == [20, 20]


def test_frame_order_rotation_least_filled_over_nine_conditions():
    counts = Counter()
    for seed in range(36):
        counts[_condition(ORDER, seed, counts)["cell"]] += 1
    assert len(counts) == 18 and set(counts.values()) == {2}


def test_frame_order_each_clip_once_and_conditions_rotate(catalog):
    main_clips, _ = clip_pools(ORDER, catalog)
    seen = {}
    for rotation_seed in range(9):
        condition = {**_condition(ORDER), "rotation": rotation_seed}
        main = _main(build_schedule(ORDER, catalog, 3, 1, condition), "frame_order")
        assert len({t["source_clip_id"] for t in main}) == len(main) == len(main_clips)
        per_condition = Counter(t["condition"] for t in main)
        assert len(per_condition) == 9 and max(per_condition.values()) - min(per_condition.values()) <= 1
        for trial in main:
            seen.setdefault(trial["source_clip_id"], set()).add(trial["condition"])
    assert all(len(conditions) == 9 for conditions in seen.values())  # Latin square


def test_frame_order_answer_matches_presented_frames(catalog):
    schedule = build_schedule(ORDER, catalog, 8, 1, _condition(ORDER))
    for trial in _main(schedule, "frame_order"):
        frames, correct = trial["frames"], json.loads(trial["correct_response"])
        n = trial["params"]["n_frames"]
        assert sorted(frames) == list(range(n)) and sorted(correct) == list(range(1, n + 1))
        # label correct[t] - 1 shows the frame that comes t-th in time
        assert [frames[label - 1] for label in correct] == list(range(n))
        for slot in trial["params"]["hint_positions"]:
            assert frames[slot] == slot
        assert trial["params"]["presented_order"] == list(range(n))
        annotation = trial["params"]["annotation"]
        expected = {"none": None, "brief": "brief", "comprehensive": "long"}[trial["annotation_level"]]
        assert annotation is None if expected is None else annotation.startswith(expected)


def test_presented_permutations_are_seeded_and_uniform():
    condition = ORDER.conditions[1]  # 4 frames, no hints
    rng = np.random.default_rng(0)
    counts = Counter(tuple(presented_frames(condition, rng)) for _ in range(2400))
    assert len(counts) == 24 and min(counts.values()) > 60
    assert presented_frames(condition, np.random.default_rng(5)) == \
        presented_frames(condition, np.random.default_rng(5))


def test_practice_attempt_inserted_after_practice_and_renumbered(catalog):
    condition = _condition(AOT)
    schedule = build_schedule(AOT, catalog, 4, 1, condition)
    second = practice_trials(AOT, catalog, 4, 1, attempt=2)
    merged = insert_practice_attempt(schedule, second)
    assert [t["trial_index"] for t in merged] == list(range(len(schedule) + len(second)))
    blocks = [t["block"] for t in merged]
    assert blocks[:2 * AOT.practice.n_trials] == ["practice"] * (2 * AOT.practice.n_trials)
    assert [t.get("practice_attempt") for t in merged[:8]] == [1] * 4 + [2] * 4
    assert [t["stimulus_id"] for t in merged[8:]] == [t["stimulus_id"] for t in schedule[4:]]


def test_max_clips_keeps_sessions_consistent(catalog):
    pilot = AOT.with_changes(max_clips=6, main_blocks=2)
    condition = _condition(pilot)
    one, two = (_main(build_schedule(pilot, catalog, 2, n, condition)) for n in (1, 2))
    assert len(one) == 6 and {t["source_clip_id"] for t in one} == {t["source_clip_id"] for t in two}
    assert len({t["categories"][0] for t in one}) == 6  # spread over the six categories


def test_errors_and_session_opening(catalog):
    with pytest.raises(ScheduleError, match="session 3"):
        build_schedule(AOT, catalog, 1, 3, _condition(AOT))
    with pytest.raises(ScheduleError, match="no clip"):
        build_schedule(AOT, Catalog(()), 1, 1, _condition(AOT))
    done = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert session_opens_at(AOT, done) == done + timedelta(hours=AOT.session_gap_hours)


def test_design_trials_show_every_main_clip_both_ways():
    catalog = make_catalog(per_category=2)
    main, _ = clip_pools(AOT, catalog)
    trials = design_trials(AOT, catalog, seed=3)
    assert [t["trial_index"] for t in trials] == list(range(2 * len(main)))
    assert Counter((t["source_clip_id"], t["direction"]) for t in trials) == \
        Counter((c.id, d) for c in main for d in ("forward", "backward"))
    assert {t["block"] for t in trials} == {None}
    assert all(t["trial_type"] == "aot" for t in trials)


def test_design_trials_show_every_clip_in_every_condition_as_participants_see_it():
    catalog = make_catalog(per_category=2)
    main, _ = clip_pools(ORDER, catalog)
    trials = design_trials(ORDER, catalog, seed=3)
    assert Counter((t["source_clip_id"], t["condition"]) for t in trials) == \
        Counter((c.id, condition.name) for c in main for condition in ORDER.conditions)
    assert trials == design_trials(ORDER, catalog, seed=3)
    assert trials != design_trials(ORDER, catalog, seed=4)  # presented permutations
    # Built like a participant's trials: the same keys and the same stimulus per condition.
    seen = _main(build_schedule(ORDER, catalog, 5, 1, _condition(ORDER)), "frame_order")
    by_cell = {(t["source_clip_id"], t["condition"]): t for t in trials}
    for shown in seen:
        twin = by_cell[(shown["source_clip_id"], shown["condition"])]
        assert set(twin) == set(shown)
        assert (twin["stimulus_id"], twin["params"]["annotation"]) == \
            (shown["stimulus_id"], shown["params"]["annotation"])


def test_frame_order_trials_have_no_direction(catalog):
    # Rows of frame orders store direction empty, as model rows and the codebook have it.
    schedule = build_schedule(ORDER, catalog, 5, 1, _condition(ORDER))
    assert {t["direction"] for t in schedule if t["trial_type"] == "frame_order"} == {None}
