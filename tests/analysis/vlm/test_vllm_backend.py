"""vLLM parity with the transformers backend on the same tiny model.

Skipped when vllm is not importable (it is an optional extra and needs a GPU).
"""
import pytest

from analysis.vlm.backends.base import GenerationParams
from analysis.vlm.tasks import TaskSpec, build_items

vllm = pytest.importorskip("vllm")
torch = pytest.importorskip("torch")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="vLLM needs a GPU")
def test_vllm_matches_transformers(tiny_model, clips):
    from analysis.vlm.backends import load_backend

    path = tiny_model("qwen2_5_vl")
    items = build_items(clips, TaskSpec(fps=4))
    requests = [item.request for item in items]
    params = GenerationParams(max_new_tokens=8)
    reference = load_backend("hf", path, device="cuda", dtype="float32")
    expected_text = [g.text for g in reference.generate(requests, params)]
    expected_scores = reference.score(requests, ("F", "B"))
    reference.close()
    backend = load_backend("vllm", path, dtype="float32", top_logprobs=20,
                           gpu_memory_utilization=0.3)
    assert backend.render(requests[0]) == reference.render(requests[0])
    assert [g.text for g in backend.generate(requests, params)] == expected_text
    for got, want in zip(backend.score(requests, ("F", "B")), expected_scores):
        for label in ("F", "B"):
            if got.logprobs[label] > float("-inf"):  # only labels within the top logprobs
                assert got.logprobs[label] == pytest.approx(want.logprobs[label], abs=1e-3)
