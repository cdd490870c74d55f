"""The OpenAI batch API on any compatible server: a run's calls as one JSONL file.

The file holds one chat-completions request per line (``custom_id``, ``method``, ``url``,
``body``), the format OpenAI's ``/v1/batches`` and vLLM's offline ``run-batch`` read.  It is
uploaded (``POST /v1/files``, purpose ``batch``), a batch is created on it
(``POST /v1/batches``, 24 h window) and polled (``GET /v1/batches/{id}``) until it ends:
``completed``, ``failed``, ``expired`` or ``cancelled``.  Its output file (answered lines) and
error file (failed lines; an expired batch's unanswered ones) are then read
(``GET /v1/files/{id}/content``).  Each line's body is the reply a synchronous call gets, and
is read by the same code (``OpenAIBackend.generation``, ``label_scores``).  A line that has no
answer is an outcome of its own (a transient :class:`BackendError`), never a guess.  A batch
whose id or files the server answers 404 (or 410) for is gone (:class:`BatchGone`).
"""
from __future__ import annotations

import json
import time

from analysis.vlm.backends.base import BackendError, BatchCall, BatchGone, GenerationParams

ENDED = ("completed", "failed", "expired", "cancelled")
GONE = (404, 410)  # what a server answers for a batch (or a file) it no longer has
# A batch file's size the client refuses to read (OpenAI's input limit is 200 MB).
MAX_RESULT_BYTES = 512 * 1024 * 1024


def request_file(backend, calls: list[BatchCall], params: GenerationParams) -> bytes:
    """The batch's JSONL input: the bodies a synchronous run would send."""
    lines = []
    for call in calls:
        body = (backend.generation_body(call.request, params) if call.kind == "generate"
                else backend.score_body(call.request))
        lines.append(json.dumps({"custom_id": call.custom_id, "method": "POST",
                                 "url": "/v1/chat/completions", "body": body}))
    return ("\n".join(lines) + "\n").encode()


def submit(backend, calls: list[BatchCall], params: GenerationParams) -> str:
    """Upload the calls and create their batch; its id."""
    upload = backend._request("POST", "/files", data={"purpose": "batch"},
                              files={"file": ("batch.jsonl", request_file(backend, calls, params),
                                              "application/jsonl")})
    batch = backend._request("POST", "/batches", {
        "input_file_id": _field(upload, "id", "/files"), "endpoint": "/v1/chat/completions",
        "completion_window": "24h"})
    return _field(batch, "id", "/batches")


def answers(backend, batch_id: str, calls: list[BatchCall], poll_s: float
            ) -> dict[str, object]:
    """Each call's outcome (see :func:`outcomes`) once batch ``batch_id`` has ended; raises
    :class:`BatchGone` where the server no longer has the batch or its files."""
    try:
        return outcomes(backend, wait(backend, batch_id, poll_s), calls)
    except BackendError as error:
        if error.status not in GONE:
            raise
        raise BatchGone(f"batch {batch_id} is no longer on {backend.base_url} (HTTP "
                        f"{error.status} for it or its files)") from error


def wait(backend, batch_id: str, poll_s: float) -> dict:
    """The batch once it has ended, polled every ``poll_s`` seconds."""
    while True:
        batch = backend._request("GET", f"/batches/{batch_id}")
        if _field(batch, "status", f"/batches/{batch_id}") in ENDED:
            return batch
        time.sleep(poll_s)


def outcomes(backend, batch: dict, calls: list[BatchCall]) -> dict[str, object]:
    """Each call's outcome by custom id: its :class:`Generation` or :class:`LabelScores`,
    or the :class:`BackendError` of a line with no answer."""
    by_id = {call.custom_id: call for call in calls}
    replies: dict[str, dict] = {}
    errors: dict[str, str] = {}
    for name in ("output_file_id", "error_file_id"):
        if batch.get(name):
            _read_lines(backend, batch[name], by_id, replies, errors)
    status = batch["status"]
    found: dict[str, object] = {}
    for custom_id, call in by_id.items():
        reply = replies.get(custom_id)
        if reply is None:
            why = errors.get(custom_id) or f"no line for it in batch {batch['id']} ({status})"
            found[custom_id] = BackendError(f"batch {batch['id']} ({status}): {why}",
                                            transient=True)
            continue
        try:
            found[custom_id] = (backend.generation(reply) if call.kind == "generate"
                                else backend.label_scores(reply, call.labels))
        except (KeyError, IndexError, TypeError, AttributeError) as error:
            found[custom_id] = BackendError(f"batch {batch['id']}: the answer to one call is "
                                            f"not a chat completion ({error!r})", transient=True)
    return found


def _read_lines(backend, file_id: str, by_id: dict, replies: dict, errors: dict) -> None:
    """One result file's lines into ``replies`` (a 200's body) or ``errors`` (why not)."""
    content = backend._request("GET", f"/files/{file_id}/content", raw=True)
    if len(content) > MAX_RESULT_BYTES:
        raise BackendError(f"batch file {file_id} is larger than {MAX_RESULT_BYTES >> 20} MiB",
                           transient=False)
    for number, text in enumerate(content.decode("utf-8", "replace").splitlines(), 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
            custom_id = line["custom_id"]
        except (ValueError, KeyError, TypeError):
            raise BackendError(f"batch file {file_id} line {number} is not a batch result "
                               f"line: {text[:120]!r}", transient=True) from None
        if custom_id not in by_id:
            continue  # not a call of this run
        response = line.get("response") or {}
        if response.get("status_code") == 200 and not line.get("error"):
            replies[custom_id] = response.get("body")
        else:
            error = line.get("error") or (response.get("body") or {}).get("error") or {}
            errors[custom_id] = (f"HTTP {response.get('status_code')}: "
                                 f"{error.get('code', '')} {error.get('message', '')}".strip()
                                 if isinstance(error, dict) else str(error)[:200])


def _field(reply, name: str, path: str) -> str:
    if not isinstance(reply, dict) or not isinstance(reply.get(name), str):
        raise BackendError(f"{path} did not answer a batch API object with an {name!r}: "
                           f"{str(reply)[:200]}", transient=False)
    return reply[name]
