"""The OpenAI-compatible backend against a local server of the same tiny model: parity with
the transformers backend, retries (Retry-After, jitter, what is never retried), the key read
from the environment, and the request fields each model family gets."""
import email.utils
import time
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from analysis.vlm.backends import base, families, http_errors, load_backend
from analysis.vlm.backends.base import GenerationParams
from analysis.vlm.tasks import TaskSpec, build_items
from tests.analysis.vlm.openai_server import TinyOpenAIServer

PARAMS = GenerationParams(max_new_tokens=8)
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def items(clips):
    return build_items(clips, TaskSpec(fps=4, label_orders=("FB", "BF")))[:4]


def _gaps(server) -> list[float]:
    times = [entry["time"] for entry in server.log if entry["path"] == CHAT]
    return [b - a for a, b in zip(times, times[1:])]


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


@pytest.mark.parametrize("status", [408, 429, 500, 503])
def test_transient_statuses_are_retried_up_to_max_retries(hf_backend, items, status):
    with TinyOpenAIServer(hf_backend, "tiny", fail_first=10, fail_status=status) as server:
        http = load_backend("openai", "tiny", base_url=server.base_url, backoff_s=0.001,
                            max_retries=2)
        [outcome] = http.generate([items[0].request], PARAMS)
        http.close()
    assert isinstance(outcome, base.BackendError) and outcome.transient
    assert f"HTTP {status} (after 3 attempts)" in str(outcome)
    assert server.requests_seen == 3


@pytest.mark.parametrize("status, message", [
    (409, "Conflict: request already in progress"),
    (401, "Incorrect API key provided: sk-wrong. You can find your API key at ..."),
    (400, "Invalid image: cannot decode"),
])
def test_other_4xx_are_never_retried(hf_backend, items, status, message):
    def refuse(method, path, body):
        return status, {"error": {"message": message, "type": "invalid_request_error"}}, {}

    with TinyOpenAIServer(hf_backend, "tiny", script=refuse) as server:
        http = load_backend("openai", "tiny", base_url=server.base_url, backoff_s=0.001,
                            max_retries=3)
        [outcome] = http.generate([items[0].request], PARAMS)
        http.close()
    assert sum(server.calls().values()) == 1
    assert isinstance(outcome, base.BackendError) and not outcome.transient
    assert f"HTTP {status}: {message}" in str(outcome)


def _asked_waits(http) -> list[float]:
    """Records every wait the backend's retry schedule asks for (the wall clock of a loaded
    machine only adds to a sleep, so the schedule is what a test can hold exactly)."""
    waits, wait = [], http._wait

    def recorded(state):
        waits.append(wait(state))
        return waits[-1]
    http._wait = recorded
    return waits


def test_retry_after_seconds_is_honoured(hf_backend, items):
    with TinyOpenAIServer(hf_backend, "tiny", fail_first=1,
                          fail_headers={"Retry-After": "1"}) as server:
        http = load_backend("openai", "tiny", base_url=server.base_url, backoff_s=0.01)
        waits = _asked_waits(http)
        [out] = http.generate([items[0].request], PARAMS)
        http.close()
    assert out.text is not None
    [wait] = waits
    assert 1.0 <= wait <= 1.01  # the server's 1 s plus at most backoff_s of jitter
    [gap] = _gaps(server)
    assert gap >= 1.0  # and it was slept


def test_retry_after_http_date_is_honoured(hf_backend, items):
    def two_seconds_ahead() -> str:
        return email.utils.format_datetime(datetime.now(timezone.utc) + timedelta(seconds=2),
                                           usegmt=True)

    with TinyOpenAIServer(hf_backend, "tiny", fail_first=1,
                          fail_headers={"Retry-After": two_seconds_ahead}) as server:
        http = load_backend("openai", "tiny", base_url=server.base_url, backoff_s=0.01)
        waits = _asked_waits(http)
        http.generate([items[0].request], PARAMS)
        http.close()
    # An HTTP-date has whole seconds: 2 s ahead when sent is 1 to 2 s away when read.
    [wait] = waits
    assert 0.1 < wait <= 2.01, wait  # above: parsed, not the 0.01 s backoff
    [gap] = _gaps(server)
    assert gap >= wait - 0.01


def test_retry_after_forms():
    parse, now = http_errors.retry_after_s, datetime(2026, 1, 1, 12, tzinfo=timezone.utc)
    assert parse(httpx.Headers({"Retry-After": "7"})) == 7
    assert parse(httpx.Headers({"retry-after": "Thu, 01 Jan 2026 12:00:30 GMT"}), now) == 30
    assert parse(httpx.Headers({"Retry-After": "Thu, 01 Jan 2026 11:00:00 GMT"}), now) == 0
    assert parse(httpx.Headers({"retry-after-ms": "250", "Retry-After": "1"})) == 0.25
    assert parse(httpx.Headers({"Retry-After": "soon"})) is None
    assert parse(httpx.Headers({})) is None


def test_backoff_without_retry_after_is_jittered():
    import tenacity

    http = load_backend("openai", "tiny", base_url="http://127.0.0.1:9/v1", backoff_s=0.5)
    state = tenacity.RetryCallState(retry_object=None, fn=None, args=(), kwargs={})
    state.attempt_number = 3
    error = httpx.HTTPStatusError("503", request=httpx.Request("POST", "http://x"),
                                  response=httpx.Response(503))
    state.set_exception((type(error), error, None))
    waits = [http._wait(state) for _ in range(50)]
    http.close()
    assert all(0 <= w <= 0.5 * 2 ** 2 for w in waits)  # full jitter over 0.5 * 2^(3-1) s
    assert len(set(waits)) > 40


def test_unreachable_server_is_one_transient_error():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens there
    http = load_backend("openai", "tiny", base_url=f"http://127.0.0.1:{port}/v1",
                        backoff_s=0.001, max_retries=1)
    start = time.monotonic()
    with pytest.raises(base.BackendError, match=r"cannot reach .* \(after 2 attempts\)") as out:
        http.describe()
    http.close()
    assert out.value.transient and time.monotonic() - start < 5


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
        with pytest.raises(ValueError, match=r"serve model 'other' \(it serves \['tiny'\]"):
            http.describe()
        http.close()


# -- what each model family is sent ---------------------------------------------------------

@pytest.mark.parametrize("model, family", [
    ("o1", "reasoning"), ("o3-2025-04-16", "reasoning"), ("o4-mini", "reasoning"),
    ("gpt-5", "reasoning"), ("openai/gpt-5-mini", "reasoning"), ("gpt-4o", "chat"),
    ("gpt-4.1-2025-04-14", "chat"), ("Qwen/Qwen2.5-VL-7B-Instruct", None), ("o10-vl", None),
])
def test_model_families(model, family):
    found = families.model_family(model)
    assert (found is families.OTHER) == (family is None)
    if family:
        assert family in found.name.lower()


def test_reasoning_models_get_only_what_they_accept(hf_backend, items):
    with TinyOpenAIServer(hf_backend, "o3-mini") as server:
        http = load_backend("openai", "o3-mini", base_url=server.base_url)
        params = GenerationParams(max_new_tokens=8, temperature=1.0, top_p=1.0, seed=3)
        [out] = http.generate([items[0].request], params)
        http.close()
    assert out.text is not None
    [entry] = [e for e in server.log if e["path"] == CHAT]
    assert entry["fields"] == ["max_completion_tokens", "messages", "model"]


def test_refused_parameters_are_an_error_before_any_request(hf_backend, items):
    with TinyOpenAIServer(hf_backend, "o3") as server:
        http = load_backend("openai", "o3", base_url=server.base_url)
        with pytest.raises(ValueError) as refused:
            http.check(GenerationParams(temperature=0.0), {"generate", "score"})
        with pytest.raises(ValueError, match="temperature 0.6"):
            http.generate([items[0].request], GenerationParams.paper())
        http.check(GenerationParams(temperature=1.0), {"generate"})  # the defaults pass
        http.close()
    message = str(refused.value)
    assert "o3 is one of the OpenAI reasoning models" in message
    assert "temperature 0 (only its default 1: --sampling api-default)" in message
    assert "logprobs" in message and "--scoring generate" in message
    assert not server.calls()


def test_other_servers_get_what_the_run_sets(hf_backend, items):
    params = GenerationParams(max_new_tokens=8, temperature=0.6, top_p=0.95, seed=2)
    with TinyOpenAIServer(hf_backend, "tiny") as plain, \
            TinyOpenAIServer(hf_backend, "tiny", vllm_like=True) as vllm:
        for server in (plain, vllm):
            http = load_backend("openai", "tiny", base_url=server.base_url)
            http.describe()
            http.generate([items[0].request], params)
            http.close()
    sent = [[e["fields"] for e in s.log if e["path"] == CHAT][0] for s in (plain, vllm)]
    assert sent[0] == ["max_tokens", "messages", "model", "seed", "temperature", "top_p"]
    # vllm serve would fill an unset repetition_penalty from the model's generation config.
    assert sent[1] == sorted(sent[0] + ["repetition_penalty"])
