"""``--batch-api``: a run's calls as one OpenAI batch (``/v1/files`` + ``/v1/batches``) against
the scripted server: the same answers and cache keys as synchronous calls, failed and expired
lines made synchronously, and a client that stops resumes its batch instead of resubmitting."""
import json
import sqlite3
from collections import Counter

import pytest

from analysis.vlm.backends import load_backend, openai_batch
from analysis.vlm.backends.base import GenerationParams
from analysis.vlm.cache import ResultCache
from analysis.vlm.runner import Runner
from analysis.vlm.tasks import TaskSpec, build_items
from tests.analysis.vlm.openai_server import TinyOpenAIServer

PARAMS = GenerationParams(max_new_tokens=4)  # greedy: a deterministic setting


@pytest.fixture(scope="module")
def items(clips):
    return build_items(clips, TaskSpec(fps=4))  # 4 items, each generated and scored: 8 calls


def _run(server, items, cache_path, **options) -> Runner:
    http = load_backend("openai", server.model_name, base_url=server.base_url, backoff_s=0.001,
                        top_logprobs=100000, batch_poll_s=0.001, **options)
    try:
        with ResultCache(cache_path) as cache:
            runner = Runner(http, cache, PARAMS, "both", batch_size=4, progress=False)
            runner.rows = runner.run(items)
    finally:
        http.close()
    return runner


def _stored(cache_path) -> dict:
    with sqlite3.connect(cache_path) as db:
        return {key: _timeless(json.loads(value))
                for key, value in db.execute("SELECT key, value FROM results")}


def _timeless(value):
    """``value`` without the wall times a synchronous call records and a batch line cannot
    (``wall_s`` of a call, ``model_s`` of an item's ledger): everything else must be equal."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("wall_s", "model_s")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value



def _interrupt_held_batch(server, items, cache_path, monkeypatch) -> list[float]:
    """A batch run of ``items`` that the server holds unanswered, stopped by the
    researcher's Ctrl-C at the client's first poll; the waits the client asked for."""
    polls = []

    def interrupted(seconds):
        polls.append(seconds)
        raise KeyboardInterrupt

    server.hold_batches = True
    monkeypatch.setattr(openai_batch.time, "sleep", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _run(server, items, cache_path, batch_api=True)
    return polls

def _requests(server, since: int = 0) -> Counter:
    """Requests by kind of endpoint (a batch's id and a file's id left out)."""
    return Counter(f"{e['method']} {'/'.join(e['path'].split('/')[:3])}"
                   for e in server.log[since:])


def test_a_batch_run_stores_what_a_synchronous_run_stores(hf_backend, items, tmp_path):
    # One server: its URL is part of every cache key.
    with TinyOpenAIServer(hf_backend, "tiny", batch_polls=2) as server:
        sync = _run(server, items, tmp_path / "sync.sqlite3")
        sent = len(server.log)
        batched = _run(server, items, tmp_path / "batch.sqlite3", batch_api=True)
        # Requests sent: 8 chat calls one by one, against one upload, one batch, its polls
        # and one download (and the model list each client reads first).
        assert _requests(server) - _requests(server, sent) == {"POST /v1/chat": 8,
                                                               "GET /v1/models": 1}
        assert _requests(server, sent) == {"POST /v1/files": 1, "POST /v1/batches": 1,
                                           "GET /v1/batches": 3, "GET /v1/files": 1,
                                           "GET /v1/models": 1}
        assert server.batch_lines == 8
        again = _run(server, items, tmp_path / "batch.sqlite3", batch_api=True)
    assert _timeless(batched.rows) == _timeless(sync.rows) and len(sync.rows) == 4
    assert _stored(tmp_path / "batch.sqlite3") == _stored(tmp_path / "sync.sqlite3")
    assert len(_stored(tmp_path / "sync.sqlite3")) == 8
    assert (batched.stats.computed, batched.stats.cached, batched.stats.errors) == (4, 0, [])
    report = batched.stats.batch
    assert (report["calls"], report["answered"], report["unanswered"]) == (8, 8, 0)
    assert (again.stats.computed, again.stats.cached) == (0, 4)
    assert again.stats.batch["calls"] == 0 and _requests(server)["POST /v1/batches"] == 1


def test_lines_of_the_error_file_are_made_as_synchronous_calls(hf_backend, items, tmp_path):
    with TinyOpenAIServer(hf_backend, "tiny", batch_fails=lambda index, line: index in (1, 6)
                          ) as server:
        runner = _run(server, items, tmp_path / "c.sqlite3", batch_api=True)
    report = runner.stats.batch
    assert (report["answered"], report["unanswered"]) == (6, 2)
    assert "HTTP 500" in report["causes"][0] and "scripted failure" in report["causes"][0]
    assert sum(server.calls(200).values()) == 2  # each unanswered line once, synchronously
    assert runner.stats.errors == [] and len(runner.rows) == 4 and runner.stats.computed == 4
    with TinyOpenAIServer(hf_backend, "tiny") as sync_server:
        sync = _run(sync_server, items, tmp_path / "sync.sqlite3")
    assert _timeless(runner.rows) == _timeless(sync.rows)


def test_an_expired_batch_keeps_what_it_answered(hf_backend, items, tmp_path):
    with TinyOpenAIServer(hf_backend, "tiny", batch_expire_after=5) as server:
        runner = _run(server, items, tmp_path / "c.sqlite3", batch_api=True)
    report = runner.stats.batch
    assert (report["answered"], report["unanswered"]) == (5, 3)
    assert any("(expired)" in cause and "batch_expired" in cause for cause in report["causes"])
    assert sum(server.calls(200).values()) == 3 and len(runner.rows) == 4


def test_a_client_that_stops_resumes_its_batch_instead_of_resubmitting(
        hf_backend, items, tmp_path, monkeypatch):
    with TinyOpenAIServer(hf_backend, "tiny") as server:
        polls = _interrupt_held_batch(server, items, tmp_path / "c.sqlite3", monkeypatch)
        assert polls and len(server.batches) == 1
        with ResultCache(tmp_path / "c.sqlite3") as cache:
            [(batch_id, keys)] = [batch for scope in _scopes(tmp_path)
                                  for batch in cache.open_batches(scope)]
        assert batch_id in server.batches and len(keys) == 8
        monkeypatch.undo()
        server.hold_batches = False
        resumed = _run(server, items, tmp_path / "c.sqlite3", batch_api=True)
    assert resumed.stats.batch["resumed"] == [batch_id] and resumed.stats.batch["batches"] == []
    sent = _requests(server)
    assert sent["POST /v1/batches"] == 1 and sent["POST /v1/files"] == 1
    assert sum(server.calls().values()) == 0 and resumed.stats.computed == 4
    assert _scopes(tmp_path) == []  # answered: forgotten


def test_resuming_a_batch_stores_every_answer_it_holds(hf_backend, items, tmp_path,
                                                        monkeypatch):
    """A batch resumed by a command asking for fewer items kept only that command's answers
    and then forgot the batch (outside review): the others, paid for, were sent again."""
    with TinyOpenAIServer(hf_backend, "tiny") as server:
        _interrupt_held_batch(server, items, tmp_path / "c.sqlite3", monkeypatch)
        monkeypatch.undo()
        server.hold_batches = False
        fewer = _run(server, items[:2], tmp_path / "c.sqlite3", batch_api=True)
        assert fewer.stats.batch["answered"] == 4 and fewer.stats.batch["stored_for_later"] == 4
        assert len(_stored(tmp_path / "c.sqlite3")) == 8 and _scopes(tmp_path) == []
        rest = _run(server, items, tmp_path / "c.sqlite3", batch_api=True)
    assert (rest.stats.computed, rest.stats.cached) == (0, 4)
    assert _requests(server)["POST /v1/batches"] == 1 and sum(server.calls().values()) == 0


@pytest.mark.parametrize("forget", ["batch", "files"])
def test_a_batch_the_server_forgot_is_said_and_sent_again(
        hf_backend, items, tmp_path, monkeypatch, forget):
    """A stored batch the server answered 404 for blocked every --batch-api rerun with
    "HTTP 404 ... check --base-url" (outside review): the rerun says the batch is gone and
    sends its calls not stored yet in a new batch."""
    with TinyOpenAIServer(hf_backend, "tiny") as server:
        _interrupt_held_batch(server, items, tmp_path / "c.sqlite3", monkeypatch)
        monkeypatch.undo()
        [old] = list(server.batches)
        if forget == "batch":  # the server lost it (a restart, a purge)
            del server.batches[old]
        else:  # it ended while the client was away, and its files were deleted since
            server.hold_batches = False
            assert server.poll_batch(old)[1]["status"] == "completed"
            server.files.clear()
        server.hold_batches = False
        rerun = _run(server, items, tmp_path / "c.sqlite3", batch_api=True)
    report = rerun.stats.batch
    assert report["gone"] == [f"batch {old} is no longer on {server.base_url} (HTTP 404 for "
                              "it or its files): its 8 calls not stored yet are sent again "
                              "in a new batch"]
    assert report["resumed"] == [] and len(report["batches"]) == 1 and report["batches"] != [old]
    assert (report["answered"], report["unanswered"]) == (8, 0)
    assert sum(server.calls().values()) == 0  # no call made one by one
    assert (rerun.stats.computed, rerun.stats.errors, len(rerun.rows)) == (4, [], 4)
    assert _scopes(tmp_path) == []


def _scopes(tmp_path) -> list[str]:
    with sqlite3.connect(tmp_path / "c.sqlite3") as db:
        return [scope for (scope,) in db.execute("SELECT DISTINCT scope FROM batches")]


def test_batch_api_is_an_option_of_the_openai_backend_only(runner, stimulus_set, tiny_model):
    result = runner.invoke(args=["run-models", "--model", tiny_model("qwen2_5_vl"), "--set",
                                 "tiny", "--batch-api", "--no-progress"])
    assert result.exit_code == 2 and "--batch-api: only for --backend openai" in result.output


def test_run_models_batch_api_stores_the_trials(app, runner, stimulus_set, hf_backend):
    with TinyOpenAIServer(hf_backend, "tiny") as server:
        result = runner.invoke(args=[
            "run-models", "--backend", "openai", "--model", "tiny", "--base-url",
            server.base_url, "--set", "tiny", "--batch-api", "--batch-poll", "0.01",
            "--no-progress", "--max-new-tokens", "4", "--fps", "4", "--scoring", "generate"])
        assert result.exit_code == 0, result.output
        assert "4 trials (0 cached, 4 computed, 0 errors" in result.output
        assert "1 batch: 4 of 4 calls answered" in result.output
        assert sum(server.calls().values()) == 0 and server.batch_lines == 4


def test_a_server_without_a_batch_api_is_said_in_one_line(hf_backend, items, tmp_path):
    from analysis.vlm.backends.base import BackendError

    def refuse(method, path, body):  # a chat-only server
        return (404, {"error": "not found"}, {}) if path == "/v1/files" else None

    with TinyOpenAIServer(hf_backend, "tiny", script=refuse) as server, \
            pytest.raises(BackendError, match="HTTP 404.*run without --batch-api"):
        _run(server, items, tmp_path / "c.sqlite3", batch_api=True)
