"""Runs through the OpenAI-compatible backend with the cache: a rerun against ``vllm serve``
computes nothing, a label missing from the top logprobs keeps the item, and a request that
fails for good costs only itself."""
import pytest

from analysis.vlm.backends import load_backend
from analysis.vlm.backends.base import GenerationParams
from analysis.vlm.cache import ResultCache
from analysis.vlm.run_config import RunConfig, run_key
from analysis.vlm.runner import Runner
from analysis.vlm.tasks import TaskSpec, build_items
from tests.analysis.vlm.openai_server import TinyOpenAIServer, fingerprint

PARAMS = GenerationParams(max_new_tokens=4)


@pytest.fixture(scope="module")
def items(clips):
    return build_items(clips, TaskSpec(fps=4))  # 4 items: 2 clips, forward and backward


def _run(server, items, cache, scoring="both", **options) -> Runner:
    http = load_backend("openai", server.model_name, base_url=server.base_url, backoff_s=0.001,
                        **options)
    try:
        runner = Runner(http, cache, PARAMS, scoring, batch_size=4, progress=False)
        runner.rows = runner.run(items)
    finally:
        http.close()
    return runner


def test_a_rerun_against_vllm_serve_computes_nothing(hf_backend, items, tmp_path):
    with TinyOpenAIServer(hf_backend, "tiny", vllm_like=True) as server, \
            ResultCache(tmp_path / "c.sqlite3") as cache:
        first = _run(server, items, cache, top_logprobs=100000)  # every label is ranked
        requests = sum(server.calls().values())
        second = _run(server, items, cache, top_logprobs=100000)  # a new client, new /models
        again = sum(server.calls().values()) - requests
    assert (first.stats.computed, first.stats.cached) == (4, 0) and requests == 8
    assert (second.stats.computed, second.stats.cached) == (0, 4)
    assert again == 0 and second.rows == first.rows
    served = second.description["served_model"]
    assert served == {"id": "tiny", "root": "/models/tiny", "parent": None,
                      "max_model_len": 32768}


def test_model_revision_keys_the_cache_and_the_run(hf_backend, items):
    config = RunConfig("openai", "tiny", TaskSpec(fps=4), PARAMS)
    keys, runs = {}, {}
    with TinyOpenAIServer(hf_backend, "tiny", vllm_like=True) as server:
        for revision in ("ckpt-1", "ckpt-1", "ckpt-2", None):
            http = load_backend("openai", "tiny", base_url=server.base_url, revision=revision)
            description = http.describe()
            assert description["revision"] == revision
            runner = Runner(http, None, PARAMS, progress=False)
            keys.setdefault(revision, set()).add(runner.key(items[0], "generate"))
            runs.setdefault(revision, set()).add(run_key(config, description))
            http.close()
    assert all(len(v) == 1 for v in (*keys.values(), *runs.values()))  # stable per revision
    assert len(set().union(*keys.values())) == 3 and len(set().union(*runs.values())) == 3


def test_labels_missing_from_the_top_logprobs_keep_the_item(hf_backend, items, tmp_path):
    hidden = {"F", " F", "B", " B"}
    with TinyOpenAIServer(hf_backend, "tiny", hide_tokens=hidden) as server, \
            ResultCache(tmp_path / "c.sqlite3") as cache:
        first = _run(server, items, cache, top_logprobs=5)
        again = _run(server, items, cache, top_logprobs=5)
        logits_only = _run(server, items[:1], cache, scoring="logits", top_logprobs=5)
    assert first.stats.errors == [] and len(first.rows) == 4 and first.stats.computed == 4
    for row in first.rows:
        extra = row["extra"]
        assert "raw_text" in extra and extra["parse_status"] in ("ok", "unparseable")
        assert extra["score_missing"] == "no label among the server's top 5 logprobs"
        assert "p_forward" not in extra and "p_label" not in extra
    assert (again.stats.computed, again.stats.cached) == (0, 4)  # done: never asked again
    [row] = logits_only.rows
    assert row["response"] is None and row["extra"]["response_source"] == "logits"


def test_a_request_failing_for_good_costs_only_itself(hf_backend, items, tmp_path):
    http = load_backend("openai", "tiny", base_url="http://unused/v1")
    broken = fingerprint({**http.body(items[1].request), "logprobs": False})
    http.close()
    state = {"broken": True}

    def fail_one(method, path, body):
        if state["broken"] and body is not None and fingerprint(body) == broken:
            return 503, {"error": {"message": "upstream crashed"}}, {}
        return None

    with TinyOpenAIServer(hf_backend, "tiny", script=fail_one) as server, \
            ResultCache(tmp_path / "c.sqlite3") as cache:
        first = _run(server, items, cache, scoring="generate", max_retries=2, concurrency=4)
        calls = server.calls()
        state["broken"] = False
        second = _run(server, items, cache, scoring="generate", max_retries=2)
        after = server.calls()
    assert calls[broken] == 3  # one request, two retries, never re-sent by the runner
    assert sorted(n for fp, n in calls.items() if fp != broken) == [1, 1, 1]
    assert [e["item"] for e in first.stats.errors] == [items[1].key]
    error = first.stats.errors[0]
    assert error["transient"] and "HTTP 503 (after 3 attempts): upstream crashed" in error["cause"]
    assert first.stats.computed == 3 and len(first.rows) == 3
    # The rerun asks for the failed item only.
    assert (second.stats.computed, second.stats.cached) == (1, 3)
    assert after - calls == {broken: 1}


def test_one_label_outside_the_top_logprobs_is_stored_as_json_without_infinity(
        hf_backend, items, tmp_path):
    import json

    with TinyOpenAIServer(hf_backend, "tiny", hide_tokens={"B", " B"}) as server, \
            ResultCache(tmp_path / "c.sqlite3") as cache:
        run = _run(server, items, cache, top_logprobs=100000)  # every token but B
    for row in run.rows:
        extra = row["extra"]
        json.dumps(row, allow_nan=False)  # PostgreSQL's JSON has no -Infinity either
        assert extra["label_logprobs"]["B"] is None and extra["label_logprobs"]["F"] < 0
        assert extra["labels_below_top_logprobs"] == ["B"]
        assert extra["p_forward"] == 1.0


@pytest.mark.parametrize("logprobs", [None, {"content": []}])
def test_a_server_without_logprobs_keeps_every_generated_answer(hf_backend, items, tmp_path,
                                                                logprobs):
    def no_logprobs(method, path, body):
        if body is not None and body.get("logprobs"):
            return 200, {"choices": [{"index": 0, "message": {"role": "assistant",
                                                              "content": "F"},
                                      "logprobs": logprobs}]}, {}
        return None

    with TinyOpenAIServer(hf_backend, "tiny", script=no_logprobs) as server, \
            ResultCache(tmp_path / "c.sqlite3") as cache:
        run = _run(server, items, cache)
    assert run.stats.errors == [] and len(run.rows) == len(items)
    for row in run.rows:
        assert row["extra"]["score_missing"] == "the server returned no logprobs"
        assert "raw_text" in row["extra"] and "p_forward" not in row["extra"]


@pytest.mark.parametrize("models", [{"data": None}, [1, 2], {"data": ["srv"]}])
def test_a_malformed_model_list_is_a_clear_error(hf_backend, models):
    def malformed(method, path, body):
        return (200, models, {}) if path.endswith("/models") else None

    with TinyOpenAIServer(hf_backend, "tiny", script=malformed) as server:
        http = load_backend("openai", "tiny", base_url=server.base_url)
        with pytest.raises(ValueError, match="did not answer an OpenAI model list"):
            http.describe()
        http.close()


def test_a_reply_cut_off_is_retried_like_a_5xx(hf_backend, clips, tmp_path):
    """A 200 whose JSON is cut off (a proxy, an overloaded server) is asked again; only a
    call that stays garbled past its retries fails its item."""
    items = (build_items(clips, TaskSpec(fps=4, label_orders=("FB", "BF")))
             + build_items(clips, TaskSpec(fps=2)))
    garbled: set[str] = set()

    def garble_first_attempt(method, path, body):
        if body is None or fingerprint(body) in garbled:
            return None
        garbled.add(fingerprint(body))
        return 200, b'{"id": "cmpl-1", "choices": [{"index": 0, "mess', {}

    with TinyOpenAIServer(hf_backend, "tiny", script=garble_first_attempt) as server, \
            ResultCache(tmp_path / "c.sqlite3") as cache:
        run = _run(server, items, cache, max_retries=2, concurrency=4)
        calls = server.calls()
    assert len(items) == 12 and run.stats.errors == []
    assert run.stats.computed == 12 and len(run.rows) == 12
    assert len(calls) == 24 and set(calls.values()) == {2}  # generate and score, each twice


def test_a_reply_garbled_past_its_retries_fails_its_item_as_transient(hf_backend, items,
                                                                      tmp_path):
    def garble(method, path, body):
        return (200, b'{"choices": [', {}) if body is not None else None

    with TinyOpenAIServer(hf_backend, "tiny", script=garble) as server, \
            ResultCache(tmp_path / "c.sqlite3") as cache:
        run = _run(server, items[:1], cache, scoring="generate", max_retries=1)
    [error] = run.stats.errors
    assert error["transient"] and run.stats.computed == 0
    assert "not JSON (after 2 attempts)" in error["cause"]
