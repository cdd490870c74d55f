"""Input sampling, reversed stimuli and what the model is told about time."""
import numpy as np
import pytest

from analysis.vlm import prompts
from analysis.vlm.aot_items import reversal_checks
from analysis.vlm.backends.base import GenerationParams, Request
from analysis.vlm.sampling import load_video, sample_indices, subset
from analysis.vlm.tasks import TaskSpec, build_items
from experiments.catalog_records import StimulusRecord
from tests.factories import moving_square, write_lossless


def test_sampling_at_fps_is_centred_and_mirror_symmetric():
    # 3 s at 29.97 fps sampled at 2 fps (AoT-PsyPhyBENCH sec. 4.6): 6 frames, 0.5 s apart.
    forward = sample_indices(90, 29.97, fps=2)
    assert forward == [7, 22, 37, 52, 67, 82]
    assert sample_indices(90, 29.97, fps=2, mirrored=True) == [89 - i for i in reversed(forward)]
    assert sample_indices(90, 30, n_frames=4) == [11, 33, 56, 78]  # experiments.media rule


@pytest.mark.parametrize("kwargs", [{}, {"fps": 2, "n_frames": 4}, {"fps": -1}, {"n_frames": 0}])
def test_sampling_rejects_bad_requests(kwargs):
    with pytest.raises(ValueError):
        sample_indices(90, 30, **kwargs)


def test_reversed_clip_gives_exactly_reversed_pixel_values(tmp_path, hf_backend):
    frames = moving_square(n_frames=24)
    fwd = write_lossless(frames, tmp_path / "f.mkv")
    bwd = write_lossless(frames[::-1].copy(), tmp_path / "b.mkv")
    f = load_video(fwd, fps=4)
    b = load_video(bwd, fps=4, mirrored=True)
    assert np.array_equal(b.frames, f.frames[::-1])
    # Both directions are declared identically to the model (no timestamp cue).
    assert b.metadata_indices == f.metadata_indices and b.metadata_fps == f.metadata_fps
    inputs = [hf_backend.encode([Request(prompts.aot_messages("zero-shot"), [v])]) for v in (f, b)]
    grid = inputs[0]["video_grid_thw"][0].tolist()
    assert grid == inputs[1]["video_grid_thw"][0].tolist()
    t, tp = grid[0], hf_backend.processor.video_processor.temporal_patch_size
    shape = (t, grid[1] * grid[2], 3, tp, -1)  # (temporal patch, token, channel, frame in patch, pixels)
    pf = inputs[0]["pixel_values_videos"].reshape(shape)
    pb = inputs[1]["pixel_values_videos"].reshape(shape)
    # Reversal = temporal patches in reverse order and the frames inside each patch swapped.
    assert np.array_equal(pb.numpy(), pf.flip(0).flip(3).numpy())


def test_stored_reversed_clips_pass_the_reversal_check(clips):
    spec = TaskSpec(fps=4)
    items = build_items(clips, spec)
    assert len(items) == 4
    assert all(0 <= item.extra["reversal_mad"] < 4 for item in items)  # codec noise only


def test_a_wrong_reversed_clip_is_refused(clips, tmp_path):
    forward = [c for c in clips if c.direction == "forward"]
    impostor = StimulusRecord(99, "s99", "clip", "backward", source_clip_id=forward[0].source_clip_id,
                              path=forward[1].path, sha256="x", clip_fps=12.0,
                              clip_frame_count=24)
    videos = {s.id: load_video(s.path, fps=4, mirrored=s.direction == "backward")
              for s in (forward[0], impostor)}
    with pytest.raises(ValueError, match="not the reverse"):
        reversal_checks([forward[0], impostor], videos)


def test_qwen25_temporal_ids_collapse_at_native_fps(hf_backend, clips):
    request = lambda v: Request(prompts.aot_messages("zero-shot"), [v])  # noqa: E731
    sampled = load_video(clips[0].path, fps=4)  # 8 frames of 24 at 12 fps: declared 4 fps
    native = load_video(clips[0].path, fps=4, metadata_fps="native")  # declared 12 fps
    assert sampled.metadata_fps == pytest.approx(4.0) and native.metadata_fps == 12.0
    # 4 temporal patches of 2 frames; Qwen2.5-VL spaces them by tokens_per_second * 2 / fps.
    assert hf_backend.inspect(request(sampled))["temporal_position_ids"] == 4
    assert hf_backend.inspect(request(native))["temporal_position_ids"] == 2


def test_shuffled_frames_are_declared_in_slot_order(clips):
    video = load_video(clips[0].path, fps=4)
    shuffled = subset(video, [3, 0, 2, 1, 7, 5, 6, 4])
    assert shuffled.metadata_indices == sorted(shuffled.frame_indices) == video.frame_indices
    assert np.array_equal(shuffled.frames[0], video.frames[3])


def test_temporal_ids_are_counted_per_clip_in_few_shot_requests(hf_backend, clips):
    # few-shot-4: four demonstration clips, then the test clip; each has 4 temporal patches.
    videos = [load_video(c.path, fps=4) for c in clips]
    test = load_video(clips[0].path, fps=4)
    request = Request(prompts.aot_messages("few-shot-4", n_demos=4), [*videos, test])
    info = hf_backend.inspect(request)
    assert info["temporal_position_ids_per_video"] == [4, 4, 4, 4, 4]
    assert info["temporal_position_ids"] == 4  # the test clip's own, not 20 over all five
    [generation] = hf_backend.generate([request], GenerationParams(max_new_tokens=1))
    assert generation.info["temporal_position_ids"] == 4
