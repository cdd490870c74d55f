"""The transformers backend on a tiny random LLaVA-OneVision (outside the Qwen family).

LLaVA-OneVision's processor stacks each clip's frames into one (clips, frames, C, H, W)
tensor, so clips of different lengths cannot share a call; the backend then encodes each clip
on its own (analysis/vlm/backends/hf.py, ``_encode_unstacked``).  Every mixed call below
is compared with the library's own one-clip-length path.
"""
from pathlib import Path

import pytest
from sqlalchemy import select

from analysis.vlm import prompts
from analysis.vlm.backends.base import GenerationParams, Request
from analysis.vlm.sampling import load_video
from analysis.vlm.tasks import TaskSpec, build_items
from experiments.media import encode_browser_mp4
from experiments.stimuli import ClipSpec
from tests.factories import moving_square

ARCH = "llava_onevision"
GREEDY = GenerationParams(max_new_tokens=4)


@pytest.fixture(scope="module")
def llava(hf_backend_for):
    return hf_backend_for(ARCH)


def _few_shot(demo, test, order="FB"):
    return Request(prompts.aot_messages("few-shot-4", order, n_demos=4), [demo] * 4 + [test])


def _assert_equal_scores(together, alone):
    for label in ("F", "B"):
        assert abs(together.logprobs[label] - alone.logprobs[label]) < 1e-4


def test_tiny_model_loads_offline_with_its_processor_and_template(llava, clips):
    assert llava.describe()["architecture"] == "LlavaOnevisionForConditionalGeneration"
    assert type(llava.processor).__name__ == "LlavaOnevisionProcessor"
    request = Request(prompts.aot_messages("zero-shot"), [load_video(clips[0].path, fps=4)])
    assert "<|im_start|>user <video>\nDetect whether" in llava.render(request)
    assert set(llava.label_token_ids(("F", "B", "A"))["A"]) == {"A", " A"}
    # 8 frames of 2x2 pooled tokens, then one newline token closing the clip.
    video_id = llava.processor.video_token_id
    assert int((llava.encode([request])["input_ids"] == video_id).sum()) == 8 * 4 + 1
    info = llava.inspect(request)  # no multimodal rope: no temporal position ids
    assert info["temporal_position_ids"] is None and info["frames_per_video"] == [8]


def test_a_batch_of_two_frame_counts_scores_like_one_at_a_time(llava, clips):
    six, eight = load_video(clips[0].path, fps=3), load_video(clips[1].path, fps=4)
    requests = [Request(prompts.aot_messages("zero-shot", "FB"), [six]),
                Request(prompts.aot_messages("zero-shot", "FB"), [eight]),
                _few_shot(eight, eight)]  # alone: one frame count, the processor stacks it
    batched = llava.score(requests, ("F", "B"))
    for request, together in zip(requests, batched):
        alone = llava.score([request], ("F", "B"))[0]
        assert alone.info["video_encoding"] == "stacked"
        assert together.info["video_encoding"] == "per_clip"
        _assert_equal_scores(together, alone)
    assert [s.info["frames_per_video"] for s in batched] == [[6], [8], [8] * 5]
    assert batched[0].logprobs != batched[1].logprobs  # each row got its own clip


def test_a_batch_of_two_frame_counts_generates_like_one_at_a_time(llava, clips):
    six, eight = load_video(clips[0].path, fps=3), load_video(clips[1].path, fps=4)
    requests = [Request(prompts.aot_messages("zero-shot", "BF"), [eight]),
                Request(prompts.aot_messages("zero-shot", "BF"), [six])]
    batched = llava.generate(requests, GREEDY)
    assert [g.text for g in batched] == [llava.generate([r], GREEDY)[0].text for r in requests]
    assert [g.info["frames_per_video"] for g in batched] == [[8], [6]]


def test_few_shot_demonstrations_of_another_frame_count(llava, clips):
    demo, test = load_video(clips[2].path, fps=3), load_video(clips[0].path, fps=4)
    request = _few_shot(demo, test)
    [generation] = llava.generate([request], GREEDY)
    [scores] = llava.score([request], ("F", "B"))
    for info in (generation.info, scores.info):
        assert info["frames_per_video"] == [6, 6, 6, 6, 8]
        assert info["video_encoding"] == "per_clip"
    assert generation.n_new_tokens > 0 and 0 < scores.label_mass < 1
    # ...and it batches with a zero-shot request of yet another length.
    other = Request(prompts.aot_messages("zero-shot", "BF"), [load_video(clips[1].path, fps=2)])
    together = llava.score([other, request], ("F", "B"))[1]
    _assert_equal_scores(together, scores)
    assert llava.generate([other, request], GREEDY)[1].text == generation.text


def test_frame_order_and_pair_items_run(llava, clips):
    order = build_items(clips, TaskSpec(task="frame_order", fps=None, n_frames=4))
    # Four images of one prompt are one multi-image input: 4x4 tokens and a newline each,
    # no anyres tiles (a single image would add them).
    inputs = llava.encode([order[0].request])
    assert int((inputs["input_ids"] == llava.processor.image_token_id).sum()) == 4 * (16 + 1)
    generations = llava.generate([item.request for item in order], GREEDY)
    assert len(generations) == 2 and all(g.n_new_tokens > 0 for g in generations)
    assert "frames_per_video" not in generations[0].info
    pairs = build_items(clips[:1], TaskSpec(task="pair_order", fps=None, n_frames=3))[:2]
    batched = llava.score([item.request for item in pairs], ("A", "B"))
    for item, together in zip(pairs, batched):
        alone = llava.score([item.request], ("A", "B"))[0]
        assert together.logprobs == pytest.approx(alone.logprobs, abs=1e-4)


@pytest.fixture
def mixed_study(app, tmp_path):
    """Two source clips of 2 s and 3 s: at 4 fps, 8 and 12 frames in one batch."""
    from webapp.researcher import studies
    from webapp.stimuli import catalog

    sources = []
    for i, n_frames in ((1, 24), (2, 36)):
        path = tmp_path / f"src{i}.mp4"
        encode_browser_mp4(moving_square(n_frames=n_frames, seed=i), path, fps=12)
        sources.append(ClipSpec(f"clip{i}", path, ["Fall"], annotation_brief="A square slides."))
    with app.app_context():
        catalog.import_clips(sources, "mixed", Path(app.config["STIMULUS_ROOT"]))
        studies.create_study("mixed-study", "arrow-of-time", "mixed")
    return "mixed-study"


def test_run_models_on_llava_onevision_with_clips_of_different_lengths(
        app, runner, mixed_study, tiny_model, monkeypatch):
    from analysis.vlm.runner import Runner
    from webapp.extensions import db
    from webapp.models import Trial

    calls, call = [], Runner._call

    def recording(self, kind, items):
        calls.append((kind, len(items)))
        return call(self, kind, items)

    monkeypatch.setattr(Runner, "_call", recording)
    result = runner.invoke(args=[
        "run-models", "--model", tiny_model(ARCH), "--study", mixed_study, "--no-progress",
        "--max-new-tokens", "4", "--fps", "4", "--label-orders", "FB,BF"])
    assert result.exit_code == 0, result.output
    assert "8 trials (0 cached, 8 computed, 0 errors" in result.output
    # One call per kind for the whole batch: no failed batch retried item by item.
    assert sorted(calls) == [("generate", 8), ("score", 8)]
    with app.app_context():
        trials = db.session.scalars(select(Trial)).all()
        assert len(trials) == 8
        assert {len(t.extra["frame_indices"]) for t in trials} == {8, 12}
        assert all(0 <= t.extra["p_forward"] <= 1 for t in trials)
        # Each stored trial says how its clip reached the model.
        assert {t.extra["video_encoding"] for t in trials} == {"per_clip"}
        assert sorted({tuple(t.extra["frames_per_video"]) for t in trials}) == [(8,), (12,)]
