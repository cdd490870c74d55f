"""The transformers backend on tiny random Qwen2-VL, Qwen2.5-VL, Qwen3-VL and LLaVA-OneVision
models (LLaVA-OneVision's clips of different lengths: test_llava_onevision.py)."""
import math

import pytest

from analysis.vlm import prompts
from analysis.vlm.backends import BACKENDS, backend_class
from analysis.vlm.backends.base import GenerationParams, Request
from analysis.vlm.sampling import load_video


def _requests(clips):
    """Prompts of different lengths (6 and 8 frames; FB and BF), so the batch needs padding."""
    short = load_video(clips[0].path, fps=3)
    long = load_video(clips[1].path, fps=4, mirrored=True)
    return [Request(prompts.aot_messages("zero-shot", "FB"), [long]),
            Request(prompts.aot_messages("zero-shot", "BF"), [short]),
            Request(prompts.aot_messages("simple-cot", "FB", n_demos=0), [short])]


@pytest.mark.parametrize("arch", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl", "llava_onevision"])
def test_batched_logits_equal_single_logits(arch, hf_backend_for, clips):
    backend = hf_backend_for(arch)
    requests = _requests(clips)
    batched = backend.score(requests, ("F", "B"))
    lengths = {int(backend.encode([r])["input_ids"].shape[1]) for r in requests}
    assert len(lengths) == 3  # really different lengths: left padding is exercised
    for request, together in zip(requests, batched):
        alone = backend.score([request], ("F", "B"))[0]
        for label in ("F", "B"):
            assert together.logprobs[label] == pytest.approx(alone.logprobs[label], abs=1e-5)
        probs = together.normalised()
        assert probs["F"] + probs["B"] == pytest.approx(1.0)
        assert 0 < together.label_mass < 1


def test_batched_greedy_generation_equals_single(hf_backend, clips):
    requests = _requests(clips)
    params = GenerationParams(max_new_tokens=6)
    batched = [g.text for g in hf_backend.generate(requests, params)]
    single = [hf_backend.generate([r], params)[0].text for r in requests]
    assert batched == single
    assert all(len(text) > 0 for text in batched)


def test_sampled_generation_is_seeded_and_independent_of_batching(hf_backend, clips):
    requests = _requests(clips)
    paper = GenerationParams.paper(seed=7, max_new_tokens=6)
    first = [g.text for g in hf_backend.generate(requests, paper)]
    again = [hf_backend.generate([r], paper)[0].text for r in requests]
    assert first == again
    other = [g.text for g in hf_backend.generate(requests, GenerationParams.paper(seed=8,
                                                                                  max_new_tokens=6))]
    assert other != first


def test_surface_forms_are_single_tokens(hf_backend):
    forms = hf_backend.label_token_ids(("F", "B"))
    assert set(forms["F"]) == {"F", " F"} and set(forms["B"]) == {"B", " B"}
    assert not set(forms["F"].values()) & set(forms["B"].values())


def test_description_pins_what_changes_answers(hf_backend, tiny_model):
    described = hf_backend.describe()
    assert described["dtype"] == "float32" and described["model"] == tiny_model("qwen2_5_vl")
    assert len(described["weights_sha256"]) == 64 and len(described["processor_sha256"]) == 64
    assert {"torch", "transformers", "tokenizers"} <= set(described["libraries"])


def test_processor_fingerprint_ignores_the_last_calls_padding(hf_backend):
    # CI: a model-cache test found none of its stored calls, because the shared backend had
    # encoded a padded batch before describing itself: the tokenizer keeps its last padding
    # and truncation settings, and they were part of the processor's fingerprint.
    from analysis.vlm.backends.processor_inputs import processor_fingerprint

    processor = hf_backend.processor
    before = processor_fingerprint(processor)
    processor.tokenizer(["a", "a b c"], padding=True, truncation=True, max_length=5)
    assert processor_fingerprint(processor) == before


def test_registry_is_lazy_and_checked():
    assert set(BACKENDS) == {"hf", "vllm", "openai", "motion"}
    with pytest.raises(ValueError, match="unknown backend"):
        backend_class("llamacpp")


def test_label_scores_reject_all_minus_infinity():
    from analysis.vlm.backends.base import LabelScores

    with pytest.raises(ValueError):
        LabelScores({"F": -math.inf, "B": -math.inf}, {}).normalised()
