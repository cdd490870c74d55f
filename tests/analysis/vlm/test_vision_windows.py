"""Window attention of the Qwen-VL vision towers grouped by window length
(analysis/vlm/backends/vision_windows.py): the same features as transformers' per-window
loop, in one SDPA call per window length and layer."""
import pytest
import torch
from torch.overrides import TorchFunctionMode

from analysis.vlm.backends.vision_windows import group_windows, windowed_sdpa
from analysis.vlm.sampling import load_video


class CountAttention(TorchFunctionMode):
    calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.nn.functional.scaled_dot_product_attention:
            self.calls += 1
        return func(*args, **(kwargs or {}))


def _video_features(backend, inputs):
    with torch.no_grad(), CountAttention() as counter:
        out = backend.model.get_video_features(
            pixel_values_videos=inputs["pixel_values_videos"],
            video_grid_thw=inputs["video_grid_thw"], return_dict=True).pooler_output
    return torch.cat(list(out)) if isinstance(out, (tuple, list)) else out, counter.calls


@pytest.mark.parametrize("arch", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_loaded_backend_encodes_a_batch_of_clips_in_one_call_per_layer(arch, hf_backend_for,
                                                                         clips):
    from analysis.vlm import prompts
    from analysis.vlm.backends.base import Request

    backend = hf_backend_for(arch)
    video = load_video(clips[0].path, fps=4)
    inputs = backend.encode([Request(prompts.aot_messages("zero-shot", "FB"), [video])] * 4)
    layers = len(backend.model.model.visual.blocks)
    grouped, calls = _video_features(backend, inputs)
    # Four clips of equal frames: every window has one length, so one call per layer.
    assert calls == layers
    assert group_windows(backend.model, enabled=False) == layers
    try:
        looped, looped_calls = _video_features(backend, inputs)
    finally:
        group_windows(backend.model)
    assert looped_calls > 4 * layers  # transformers' path: one call per window and layer
    torch.testing.assert_close(grouped, looped, rtol=0, atol=1e-6)


def test_windows_of_mixed_lengths_equal_one_call_per_window():
    rng = torch.Generator().manual_seed(0)
    query, key, value = (torch.randn(3, 20, 8, generator=rng) for _ in range(3))
    bounds = [0, 5, 9, 14, 17, 17, 20]  # lengths 5, 4, 5, 3, 0 and 3, out of order
    expected = torch.cat([torch.nn.functional.scaled_dot_product_attention(
        query[:, a:b], key[:, a:b], value[:, a:b], scale=0.3)
        for a, b in zip(bounds[:-1], bounds[1:]) if b > a], dim=1).transpose(0, 1)
    with CountAttention() as counter:
        got = windowed_sdpa(query, key, value, torch.tensor(bounds), 0.3)
    assert counter.calls == 3  # lengths 5, 4 and 3
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


def test_other_attention_implementations_are_left_alone(tiny_model):
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(tiny_model("qwen2_5_vl"),
                                                        attn_implementation="eager")
    assert group_windows(model) == 0
    assert all("forward" not in module.__dict__ for module in model.modules())
