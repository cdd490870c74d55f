"""Rendered prompts are snapshots of the papers' texts; demonstrations come from the release."""
import json

import pytest

from analysis.vlm import prompts, prompts_order
from analysis.vlm.backends.base import Request
from experiments.benchmarks import aot_psyphybench as bench

# AoT-PsyPhyBENCH sec. 4.1 system and user prompts, through the Qwen2.5-VL chat template.
ZERO_SHOT_SNAPSHOT = (
    "<|im_start|>system\n"
    "You will see videos provided from the user, played either forward or backward. Finish your "
    "answer with F or B only. F for forward and B for backward.<|im_end|>\n"
    "<|im_start|>user\n"
    "<|vision_start|><|video_pad|><|vision_end|>Detect whether the video plays forward or "
    "backward with confidence.<|im_end|>\n"
    "<|im_start|>assistant\n")


def test_zero_shot_prompt_snapshot(hf_backend):
    request = Request(prompts.aot_messages("zero-shot", "FB"))
    assert hf_backend.render(request) == ZERO_SHOT_SNAPSHOT


def test_swapped_label_order_only_swaps_the_labels(hf_backend):
    swapped = hf_backend.render(Request(prompts.aot_messages("zero-shot", "BF")))
    assert "played either backward or forward. Finish your answer with B or F only. B for " \
           "backward and F for forward." in swapped
    assert swapped.replace("backward or forward", "").replace("B or F", "") != ZERO_SHOT_SNAPSHOT


def test_few_shot_uses_the_released_demonstrations(hf_backend):
    rendered = hf_backend.render(Request(prompts.aot_messages("few-shot-4")))
    # 4 demos (2 F, 2 B, released order) + the test video, each with the sec. 4.1 user prompt.
    assert rendered.count("<|video_pad|>") == 5
    assert rendered.count(prompts.AOT_USER) == 5
    answers = [part.split("<|im_end|>")[0] for part in rendered.split("<|im_start|>assistant\n")[1:5]]
    assert answers == ["F", "B", "F", "B"]
    assert [d for d, _ in prompts.demonstrations("few-shot-4")] == ["00058", "00012_rev",
                                                                    "00186", "00271_rev"]
    # 2-shot: the first two, one forward and one backward.
    assert [d for d, _ in prompts.demonstrations("few-shot-2")] == ["00058", "00012_rev"]


def test_multistep_cot_traces_are_verbatim():
    released = json.loads(bench.MULTI_STEP_COT_JSON.read_text())
    traces = [m["content"] for d in released for m in d["messages"] if m["role"] == "assistant"]
    messages = prompts.aot_messages("multi-step-cot")
    assistant = [m["content"][0]["text"] for m in messages if m["role"] == "assistant"]
    assert assistant == traces
    assert assistant[0].startswith("Observation: I see a building in poor condition")
    assert messages[1]["content"][1]["text"].startswith("Is this video played forward or backward?\n"
                                                        "Think in three steps:")


def test_simple_cot_instruction_is_figure_6():
    user = prompts.aot_messages("simple-cot")[-1]["content"][1]["text"]
    assert user == prompts.COT_SIMPLE_INSTRUCTION["FB"]
    assert user.startswith("Is this video played forward (F) or backward (B)? Pay attention")


def test_unknown_setting_and_label_order_are_errors():
    with pytest.raises(ValueError):
        prompts.aot_messages("three_shot")
    with pytest.raises(ValueError):
        prompts.aot_messages("zero-shot", "XY")


def test_frame_order_prompt_open_model_snapshot():
    text = prompts_order.frame_order_text(4, "A person folds a shirt.")
    assert text.startswith('You are shown 4 frames from a video. These frames have been shuffled '
                           'and are NOT in their original order.')
    assert "The video shows: A person folds a shirt.\n\n" in text
    assert text.endswith('"The correct temporal order is: [comma-separated frame numbers]"\n\n'
                         'For example (with 8 frames): "The correct temporal order is: 5, 2, 8, 1, 4, 7, 3, 6"')
    assert "The video shows" not in prompts_order.frame_order_text(4, None)


def test_frame_order_hint_prompt_lists_the_two_valid_answers():
    # hints: label 3 is at temporal position 2, label 1 at position 4 (EGO-FLIGHT "2&4")
    text = prompts_order.frame_order_text(4, "ctx", {3: 2, 1: 4})
    assert "Frame 3 should be in temporal position 2; Frame 1 should be in temporal position 4" in text
    assert "The correct temporal order is: 2, 3, 4, 1" in text
    assert "The correct temporal order is: 4, 3, 2, 1" in text
    proprietary = prompts_order.frame_order_text(4, "ctx", {3: 2, 1: 4}, style="proprietary")
    assert proprietary.index("HINTS PROVIDED") < proprietary.index("The video shows")


def test_frame_order_messages_label_each_frame(hf_backend):
    messages = prompts_order.frame_order_messages(3, "order them")
    rendered = hf_backend.render(Request(messages))
    assert rendered.count("<|image_pad|>") == 3
    assert rendered.index("Frame 1:") < rendered.index("Frame 2:") < rendered.index("order them")
