"""``manage.py run-models`` failures a researcher meets: one clear line and a non-zero exit,
never a traceback; failed items counted once each, each cause said once, with whether a
rerun can help.  And the new options: a rerun against ``vllm serve`` computes nothing."""
import socket

import pytest

from tests.analysis.vlm.openai_server import TinyOpenAIServer

OPENAI_401 = {"error": {"message": "Incorrect API key provided: sk-wrong. You can find your "
                                   "API key at https://platform.openai.com/account/api-keys.",
                        "type": "invalid_request_error", "code": "invalid_api_key"}}


def _run(runner, model, *args):
    return runner.invoke(args=["run-models", "--model", model, "--set", "tiny", "--no-progress",
                               "--max-new-tokens", "4", "--fps", "4", *args])


def _served(runner, server, *args):
    return _run(runner, server.model_name, "--backend", "openai", "--base-url", server.base_url,
                *args)


def _clear_failure(result, *phrases) -> str:
    """The command failed on purpose: click's own exit, no traceback, one line per error."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    for phrase in phrases:
        assert phrase in result.output, result.output
    return result.output


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_server(runner, stimulus_set):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = _run(runner, "tiny", "--backend", "openai", "--base-url", url, "--max-retries", "1")
    output = _clear_failure(result, f"cannot reach {url} (after 2 attempts)", "--base-url")
    assert len(output.strip().splitlines()) == 1


def test_a_refused_api_key_shows_the_servers_words(runner, stimulus_set, hf_backend):
    def refuse(method, path, body):
        return 401, OPENAI_401, {}

    with TinyOpenAIServer(hf_backend, "gpt-4o", script=refuse) as server:
        result = _served(runner, server)
    _clear_failure(result, "HTTP 401: Incorrect API key provided: sk-wrong.", "$OPENAI_API_KEY")
    assert len(server.log) == 1  # never retried


def test_a_missing_local_folder(runner, stimulus_set, tmp_path):
    missing = str(tmp_path / "no" / "such" / "model")
    _clear_failure(_run(runner, missing), f"--model {missing}: no such folder")


def test_an_unknown_hub_id_offline(runner, stimulus_set, monkeypatch):
    # As in a process that loaded the library before the switch was set (it reads
    # HF_HUB_OFFLINE once, at import): the switch must still count.
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = _run(runner, "nobody-xyz/no-such-model", "--device", "cpu")
    # Refused before loading: neither a folder nor cached, and offline.
    _clear_failure(result, "--model nobody-xyz/no-such-model: not a local folder, not in the "
                   "Hugging Face cache", "HF_HUB_OFFLINE is set")


def test_cuda_without_a_gpu(runner, stimulus_set, tiny_model):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    _clear_failure(_run(runner, tiny_model("qwen2_5_vl"), "--device", "cuda"),
                   "--device cuda: torch sees no CUDA GPU", "--device cpu")


def test_http_options_are_for_the_openai_backend(runner, stimulus_set, tiny_model):
    result = _run(runner, tiny_model("qwen2_5_vl"), "--timeout", "5", "--model-revision", "x")
    _clear_failure(result, "--timeout, --model-revision: only for --backend openai")


def test_a_parameter_the_model_refuses_stops_the_run_before_any_item(
        runner, stimulus_set, hf_backend):
    with TinyOpenAIServer(hf_backend, "o3") as server:
        refused = _served(runner, server, "--scoring", "both")
        # By default such a model is scored from its text: it returns no logprobs.
        generate_only = _served(runner, server, "--sampling", "api-default")
    _clear_failure(refused, "o3 is one of the OpenAI reasoning models (o1, o3, o4, GPT-5), "
                   "which refuse",
                   "temperature 0 (only its default 1: --sampling api-default)",
                   "logprobs, which logit scoring needs (--scoring generate)")
    assert generate_only.exit_code == 0, generate_only.output
    assert "4 trials (0 cached, 4 computed, 0 errors" in generate_only.output
    chat = [e["fields"] for e in server.log if e["path"] == "/v1/chat/completions"]
    assert chat == [["max_completion_tokens", "messages", "model"]] * 4


def test_failures_count_items_and_say_each_cause_once(runner, stimulus_set, hf_backend):
    def refuse(method, path, body):
        if body is not None:
            return 400, {"object": "error", "message": "Invalid image: cannot decode"}, {}
        return None

    def overloaded(method, path, body):
        if body is not None:
            return 503, {"error": {"message": "overloaded"}}, {}
        return None

    with TinyOpenAIServer(hf_backend, "tiny", script=refuse) as server:
        deterministic = _served(runner, server)  # generation and scoring fail: 8 calls
    with TinyOpenAIServer(hf_backend, "tiny", script=overloaded) as server:
        transient = _served(runner, server, "--max-retries", "0")
    output = _clear_failure(deterministic, "0 trials (0 cached, 0 computed, 4 errors",
                            "4 of 4 items failed:",
                            "HTTP 400: Invalid image: cannot decode",
                            "a rerun fails the same way")
    assert output.count("Invalid image") == 1 and "8 items" not in output
    _clear_failure(transient, "4 of 4 items failed:", "  4 items: POST", "HTTP 503: overloaded",
                   "transient: rerun the same command to retry only the failed items")


def test_a_rerun_against_vllm_serve_computes_nothing(runner, stimulus_set, hf_backend):
    with TinyOpenAIServer(hf_backend, "tiny", vllm_like=True) as server:
        first = _served(runner, server, "--model-revision", "ckpt-1", "--concurrency", "2",
                        "--timeout", "30")
        second = _served(runner, server, "--model-revision", "ckpt-1", "--concurrency", "2",
                         "--timeout", "30")
        new_weights = _served(runner, server, "--model-revision", "ckpt-2", "--scoring",
                               "generate")
    assert "4 trials (0 cached, 4 computed, 0 errors" in first.output, first.output
    assert "4 trials (4 cached, 0 computed, 0 errors" in second.output, second.output
    assert "4 trials (0 cached, 4 computed, 0 errors" in new_weights.output, new_weights.output


def _check_source(model: str, hf_home, port: int) -> tuple[str, float]:
    """check_model_source in a fresh process with no network: the hub at a closed port."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_CACHE")}
    env.update(HF_HOME=str(hf_home), HF_ENDPOINT=f"http://127.0.0.1:{port}")
    code = ("import json, time\n"
            "from analysis.vlm.backends.base import GenerationParams\n"
            "from analysis.vlm.run_config import RunConfig, check_model_source\n"
            "from analysis.vlm.tasks import TaskSpec\n"
            f"config = RunConfig('hf', {model!r}, TaskSpec(fps=2), GenerationParams())\n"
            "start, error = time.monotonic(), ''\n"
            "try:\n    check_model_source(config)\n"
            "except ValueError as e:\n    error = str(e)\n"
            "print(json.dumps([error, time.monotonic() - start]))\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=600)
    error, seconds = json.loads(out.stdout.strip().splitlines()[-1])
    return error, seconds


def test_a_hub_model_neither_cached_nor_reachable_fails_fast(tmp_path):
    # The README's example with no weights and no network: one line, not minutes of retries.
    port = _closed_port()
    error, seconds = _check_source("Qwen/Qwen2.5-VL-7B-Instruct", tmp_path / "hf", port)
    assert seconds < 10
    assert error.startswith("--model Qwen/Qwen2.5-VL-7B-Instruct: not a local folder, not in "
                            "the Hugging Face cache")
    assert f"http://127.0.0.1:{port} cannot be reached" in error and "\n" not in error
    # In the cache, it runs offline.
    snapshot = tmp_path / "hf/hub/models--org--cached-vlm"
    (snapshot / "snapshots/abc").mkdir(parents=True)
    (snapshot / "snapshots/abc/config.json").write_text("{}")
    (snapshot / "refs").mkdir()
    (snapshot / "refs/main").write_text("abc")
    assert _check_source("org/cached-vlm", tmp_path / "hf", port)[0] == ""
