"""Items for each task: seeded presentations shared across models, canonical answers."""
import dataclasses

import pytest

from analysis.vlm import prompts
from analysis.vlm.tasks import TaskSpec, build_items
from experiments.catalog_records import StimulusRecord


def test_frame_order_items_are_seeded_and_answers_are_presented_labels(clips):
    spec = TaskSpec(task="frame_order", fps=None, n_frames=4, seed=11)
    items = build_items(clips, spec)
    assert len(items) == 2  # forward clips only
    again = build_items(clips, spec)
    for item, same in zip(items, again):
        assert item.extra["presented_frame_indices"] == same.extra["presented_frame_indices"]
        shown = item.extra["presented_frame_indices"]
        # correct_response lists presented labels (1-based) in true chronological order
        assert [shown[label - 1] for label in item.correct_response] == sorted(shown)
        assert len(item.request.visuals) == 4 and item.request.visuals[0].frames.shape == (1, 224, 224, 3)
    other = build_items(clips, dataclasses.replace(spec, seed=12))
    assert [i.extra["presented_frame_indices"] for i in other] != \
           [i.extra["presented_frame_indices"] for i in items]


def test_hints_name_the_true_frames(clips):
    item = build_items(clips, TaskSpec(task="frame_order", fps=None, n_frames=4, hints="2&4"))[0]
    correct = item.correct_response
    assert item.extra["hint_frames"] == sorted([correct[1], correct[3]])
    text = item.request.messages[0]["content"][-1]["text"]
    assert f"Frame {correct[1]} should be in temporal position 2" in text


def test_annotation_levels(clips):
    none = build_items(clips, TaskSpec(task="frame_order", fps=None, n_frames=4, annotation="none"))
    assert "The video shows" not in none[0].request.messages[0]["content"][-1]["text"]
    with pytest.raises(ValueError, match="comprehensive annotation"):
        build_items(clips, TaskSpec(task="frame_order", fps=None, n_frames=4,
                                    annotation="comprehensive"))


def test_pair_order_both_presentations(clips):
    items = build_items(clips[:1], TaskSpec(task="pair_order", fps=None, n_frames=3))
    assert len(items) == 3 * 2  # C(3, 2) pairs x both orders
    by_pair = {}
    for item in items:
        by_pair.setdefault(item.extra["pair_id"], []).append(item)
    for pair in by_pair.values():
        assert {i.extra["pair_order"] for i in pair} == {"AB", "BA"}
        for item in pair:
            assert item.correct_response == ("A" if item.extra["pair_order"] == "AB" else "B")
            shown = item.extra["presented_frame_indices"]
            assert (shown[0] < shown[1]) == (item.correct_response == "A")


@pytest.mark.parametrize("variant, n_frames", [("full", 8), ("shuffled", 8), ("single_frame", 1)])
def test_tomato_variants(clips, variant, n_frames):
    item = build_items(clips[:1], TaskSpec(fps=4, task_variant=variant))[0]
    video = item.request.visuals[-1]
    assert len(video.frame_indices) == n_frames
    if variant == "shuffled":
        assert video.frame_indices != sorted(video.frame_indices)
        assert video.metadata_indices == sorted(video.frame_indices)


def test_few_shot_needs_and_excludes_its_demonstrations(clips):
    with pytest.raises(ValueError, match="00058"):
        build_items(clips, TaskSpec(fps=4, setting="few-shot-4"))
    demo_ids = ["00058", "00012_rev", "00186", "00271_rev"]
    demos = {d: dataclasses.replace(clips[i % 4], item_id=d) for i, d in enumerate(demo_ids)}
    test_clips = [dataclasses.replace(c, item_id="00058") if c.id == 10 else c for c in clips]
    items = build_items(test_clips, TaskSpec(fps=4, setting="few-shot-4"), demos)
    assert len(items) == 3  # the clip that is a demonstration left the test set
    assert len(items[0].request.visuals) == 5
    assert items[0].extra["demo_item_ids"] == demo_ids


def test_bad_specs_are_errors():
    for bad in ({"task": "tomato"}, {"setting": "zero_shot"}, {"label_orders": ()},
                {"hints": "1&2"}, {"task_variant": "handpicked_frame"}):
        with pytest.raises(ValueError):
            TaskSpec(**bad)


def test_frame_sets_are_read_from_their_pngs(tmp_path, clips):
    from experiments.media import write_frame_set

    indices = write_frame_set(clips[0].path, tmp_path / "frames_4", 4)
    record = StimulusRecord(7, "s7", "frame_set", None, tuple(indices), source_clip_id=1,
                            path=str(tmp_path / "frames_4"), sha256="h", clip_fps=12.0,
                            clip_frame_count=24, annotations={"brief": "x"})
    items = build_items([record, *clips], TaskSpec(task="frame_order", fps=None, n_frames=4))
    assert [i.stimulus.id for i in items] == [7]
    assert sorted(items[0].extra["presented_frame_indices"]) == indices


@pytest.mark.parametrize("setting", ["simple-cot", "multi-step-cot"])
def test_chain_of_thought_settings_are_scored_from_their_reasoning_only(hf_backend, clips,
                                                                        tmp_path, setting):
    from analysis.vlm.backends.base import GenerationParams
    from analysis.vlm.cache import ResultCache
    from analysis.vlm.run_config import RunConfig
    from analysis.vlm.runner import Runner

    demos = {d: dataclasses.replace(clips[i], item_id=d)
             for i, (d, _) in enumerate(prompts.demonstrations(setting))}
    items = build_items(clips, TaskSpec(fps=4, setting=setting), demos)
    assert items and not any(item.scorable for item in items)
    with ResultCache(tmp_path / "c.sqlite3") as cache:
        runner = Runner(hf_backend, cache, GenerationParams(max_new_tokens=4), scoring="both",
                        progress=False)
        rows = runner.run(items[:2])
    # One forward pass for an answer would skip the reasoning: only generations are made.
    assert all(call.endswith("/generate") for call in runner.stats.computed_calls)
    assert rows and not any("label_logprobs" in row["extra"] or "p_label" in row["extra"]
                            for row in rows)
    with pytest.raises(ValueError, match="generated reasoning"):
        RunConfig("hf", "m", TaskSpec(fps=4, setting=setting), GenerationParams(),
                  scoring="logits")
    # Zero-shot and few-shot answers are the first token: they keep their logit score.
    assert all(item.scorable for item in build_items(clips, TaskSpec(fps=4)))


@pytest.mark.parametrize("spec, limit, decoded", [
    (TaskSpec(fps=4, label_orders=("FB", "BF")), 2, 1),
    (TaskSpec(fps=4, label_orders=("FB", "BF")), 3, 2),
    (TaskSpec(fps=4), 1, 1),
    (TaskSpec(task="frame_order", fps=None, n_frames=4), 1, 1),
    (TaskSpec(task="pair_order", fps=None, n_frames=3), 2, 1),
])
def test_a_limit_decodes_only_the_clips_its_items_show(clips, monkeypatch, spec, limit, decoded):
    from analysis.vlm import aot_items, order_items

    everything = build_items(clips, spec)
    calls = []
    load = aot_items.load_video
    for module in (aot_items, order_items):  # every item builder that decodes
        monkeypatch.setattr(module, "load_video",
                            lambda *a, **k: calls.append(a) or load(*a, **k))
    first = build_items(clips, spec, limit=limit)
    assert [i.key for i in first] == [i.key for i in everything[:limit]]
    assert len(calls) == decoded


def test_a_run_whose_model_cannot_load_is_marked_failed(clips, tmp_path):
    import json

    from analysis.vlm.backends.base import GenerationParams
    from analysis.vlm.run import execute_run
    from analysis.vlm.run_config import RunConfig

    config = RunConfig("hf", str(tmp_path / "no-such-model"), TaskSpec(fps=4),
                       GenerationParams(max_new_tokens=2), backend_options={"device": "cpu"})
    with pytest.raises(Exception):
        execute_run(config, clips, {}, tmp_path / "cache.sqlite3", tmp_path / "runs",
                    progress=False)
    [manifest] = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/manifest.json")]
    assert manifest["status"] == "failed" and "no-such-model" in manifest["error"]


def test_a_model_non_answer_is_stored_as_a_person_s_timeout_is():
    # correct is true or false (the codebook); a non-answer has an empty response, which
    # the non-response policy reads, and correct False, as a person's timeout has.
    import pandas as pd

    from analysis.nonresponse import is_nonresponse
    from analysis.vlm.backends.base import Request
    from analysis.vlm.items import Item
    from analysis.vlm.rows import trial_row
    from experiments.catalog_records import StimulusRecord

    item = Item("aot:1:FB", "aot", StimulusRecord(1, "p1", "clip", direction="forward"),
                Request([]), ("F", "B"), "F", {})
    rows = [trial_row(item, i, {"generate": {"text": text, "n_new_tokens": 1,
                                             "n_prompt_tokens": 3}})
            for i, text in enumerate(["I cannot tell.", "F", "B"])]
    assert [(r["response"], r["correct"]) for r in rows] == [
        (None, False), ("F", True), ("B", False)]
    frame = pd.DataFrame(rows)
    assert is_nonresponse(frame).tolist() == [True, False, False]


def test_run_settings_follow_the_task_registry(monkeypatch):
    from dataclasses import replace

    from analysis.vlm import tasks
    from analysis.vlm.backends.base import GenerationParams
    from analysis.vlm.run_config import RunConfig, effective_scoring

    # A task registered as never logit-scored is generated only, whatever its name.
    monkeypatch.setitem(tasks.TASKS, "pair_order",
                        replace(tasks.TASKS["pair_order"], logit_scored=False))
    config = RunConfig("hf", "m", tasks.TaskSpec(task="pair_order"), GenerationParams())
    assert effective_scoring(config) == "generate"


def test_a_clip_sampled_to_one_frame_is_refused_before_any_call(clips):
    # 24 frames at 12 fps: at 0.5 fps one frame is left, which has no arrow of time
    with pytest.raises(ValueError) as refused:
        build_items(clips, TaskSpec(fps=0.5))
    message = str(refused.value)
    assert "4 clips are sampled to fewer than 2 frames by --fps 0.5" in message
    assert "stimulus 10 (24 frames at 12 fps)" in message
    assert "--fps 0.53 or --n-frames 2 gives each at least 2" in message
    items = build_items(clips, TaskSpec(fps=0.53))  # the rate it names is enough
    assert {len(item.request.visuals[-1].frame_indices) for item in items} == {2}
