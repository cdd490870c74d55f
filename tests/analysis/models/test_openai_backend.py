"""The OpenAI-compatible backend against a local server of the same tiny model: parity with
the transformers backend, retries, and the key read from the environment."""
import pytest

from analysis.models.backends import load_backend
from analysis.models.backends.base import GenerationParams
from analysis.models.tasks import TaskSpec, build_items
from tests.analysis.models.openai_server import TinyOpenAIServer

PARAMS = GenerationParams(max_new_tokens=8)


@pytest.fixture(scope="module")
def items(clips):
    return build_items(clips, TaskSpec(fps=4, label_orders=("FB", "BF")))[:4]


def test_http_backend_matches_transformers_backend(hf_backend, items):
    requests = [item.request for item in items]
    with TinyOpenAIServer(hf_backend, "tiny-qwen2.5-vl") as server:
        http = load_backend("openai", "tiny-qwen2.5-vl", base_url=server.base_url,
                            video_mode="video_url", top_logprobs=100000, concurrency=4)
        assert http.describe()["served_model"]["id"] == "tiny-qwen2.5-vl"
        texts = [g.text for g in http.generate(requests, PARAMS)]
        scores = http.score(requests, ("F", "B"))
        http.close()
    assert texts == [g.text for g in hf_backend.generate(requests, PARAMS)]
    for remote, local in zip(scores, hf_backend.score(requests, ("F", "B"))):
        for label in ("F", "B"):
            assert remote.logprobs[label] == pytest.approx(local.logprobs[label], abs=1e-4)


def test_http_backend_retries_rate_limits(hf_backend, items, monkeypatch):
    monkeypatch.setenv("TINY_KEY", "secret-123")
    with TinyOpenAIServer(hf_backend, "tiny", fail_first=2) as server:
        http = load_backend("openai", "tiny", base_url=server.base_url, api_key_env="TINY_KEY",
                            backoff_s=0.01, concurrency=1)
        assert http.client.headers["Authorization"] == "Bearer secret-123"
        out = http.generate([items[0].request], PARAMS)
        assert server.requests_seen == 3 and out[0].text
        http.close()


def test_http_backend_gives_up_after_max_retries(hf_backend, items):
    import httpx

    with TinyOpenAIServer(hf_backend, "tiny", fail_first=10) as server:
        http = load_backend("openai", "tiny", base_url=server.base_url, backoff_s=0.001,
                            max_retries=2)
        with pytest.raises(httpx.HTTPStatusError):
            http.generate([items[0].request], PARAMS)
        assert server.requests_seen == 3
        http.close()


def test_frames_mode_sends_one_image_per_frame(hf_backend, items):
    with TinyOpenAIServer(hf_backend, "tiny") as server:
        http = load_backend("openai", "tiny", base_url=server.base_url, frame_format="jpeg")
        body = http.body(items[0].request)
        parts = body["messages"][1]["content"]
        assert sum(p["type"] == "image_url" for p in parts) == len(items[0].request.visuals[0].frames)
        assert parts[0]["image_url"]["url"].startswith("data:image/jpeg;base64,")
        assert "mm_processor_kwargs" not in body
        http.close()


def test_unknown_served_model_is_an_error(hf_backend):
    with TinyOpenAIServer(hf_backend, "tiny") as server:
        http = load_backend("openai", "other", base_url=server.base_url)
        with pytest.raises(ValueError, match="does not serve"):
            http.describe()
        http.close()
