"""A tiny OpenAI-compatible chat-completions server over the transformers backend (tests only).

It accepts what ``vllm serve`` accepts from our HTTP backend: text and ``image_url`` parts,
``video_url`` parts holding comma-separated base64 frames, ``mm_processor_kwargs.fps``,
``logprobs``/``top_logprobs``.  Scripted faults, to exercise the client:

- ``fail_first``: answer ``fail_status`` (429) with ``fail_headers`` to that many requests
  (a header's value may be a function, called as the answer is sent);
- ``script(method, path, body)``: return ``(status, payload, headers)`` to answer a request
  so (a 401, a 409, one item's request failing for good), or None to serve it; a ``bytes``
  payload is sent as it is (a reply cut off on its way);
- ``vllm_like``: ``/models`` answers as ``vllm serve`` does, with a fresh ``created`` time and
  a random permission id on every call;
- ``hide_tokens``: leave these tokens out of the top logprobs (labels the server never ranks).

The batch API as OpenAI serves it: ``POST /v1/files`` (multipart, purpose ``batch``),
``POST /v1/batches``, ``GET /v1/batches/{id}`` and ``GET /v1/files/{id}/content``.  A batch
answers ``in_progress`` to its first ``batch_polls`` polls (or while ``hold_batches`` is set),
then runs each line as a synchronous request would run; ``batch_fails(index, line)`` true puts
that line in the error file (HTTP 500), and ``batch_expire_after`` lines answered, the batch
expires with the rest in the error file (``batch_expired``), as OpenAI's do.

Every request is logged (``log``: arrival time, method, path, ``fingerprint`` of its body, the
status sent), so tests count exactly what reached the server.
"""
import base64
import email.parser
import hashlib
import io
import itertools
import json
import threading
import time
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from PIL import Image

from analysis.vlm.backends.base import GenerationParams, Request
from analysis.vlm.sampling import Visual


def _frame(b64: str) -> np.ndarray:
    # np.array, not asarray: a PIL image gives a read-only view, which torch warns about.
    return np.array(Image.open(io.BytesIO(base64.b64decode(b64))).convert("RGB"))


def _translate(body: dict) -> Request:
    """OpenAI messages -> backend-neutral messages and visuals."""
    fps = float((body.get("mm_processor_kwargs") or {}).get("fps", 2.0))
    messages, visuals = [], []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        parts = []
        for part in content:
            if part["type"] == "text":
                parts.append({"type": "text", "text": part["text"]})
                continue
            if part["type"] == "image_url":
                frames = _frame(part["image_url"]["url"].split(",", 1)[1])[None]
                visuals.append(Visual("image", frames, [0], fps, 1, fps))
                parts.append({"type": "image", "visual": len(visuals) - 1})
            else:  # video_url: data:video/png;base64,<frame>,<frame>,...
                encoded = part["video_url"]["url"].split(",")[1:]
                frames = np.stack([_frame(b) for b in encoded])
                n = len(frames)
                visuals.append(Visual("video", frames, list(range(n)), fps, n, fps))
                parts.append({"type": "video", "visual": len(visuals) - 1})
        messages.append({"role": message["role"], "content": parts})
    return Request(messages, visuals)


def fingerprint(body: dict | None) -> str | None:
    """Which call a chat request is: its messages, and whether it asks for logprobs."""
    if body is None:
        return None
    kind = "score" if body.get("logprobs") else "generate"
    digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()
    return f"{digest[:16]}/{kind}"


class TinyOpenAIServer:
    def __init__(self, backend, model_name: str, fail_first: int = 0, fail_status: int = 429,
                 fail_headers: dict | None = None, script=None, vllm_like: bool = False,
                 hide_tokens=(), batch_polls: int = 1, batch_fails=None,
                 batch_expire_after: int | None = None):
        self.backend, self.model_name = backend, model_name
        self.batch_polls, self.batch_fails = batch_polls, batch_fails
        self.batch_expire_after, self.hold_batches = batch_expire_after, False
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.batch_lines = 0  # lines run in batches
        self.fail_first, self.requests_seen = fail_first, 0
        self.fail_status, self.fail_headers = fail_status, dict(fail_headers or {})
        self.script, self.vllm_like, self.hide_tokens = script, vllm_like, set(hide_tokens)
        self.log: list[dict] = []
        self._ticks = itertools.count()
        self.lock = threading.Lock()  # one model call at a time, as on one GPU
        self.log_lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def calls(self, status: int | None = None) -> Counter:
        """How many chat requests reached the server, by fingerprint (those answered
        ``status`` only, if given)."""
        return Counter(e["fingerprint"] for e in self.log if e["path"] == "/v1/chat/completions"
                       and (status is None or e["status"] == status))

    def models(self) -> dict:
        entry = {"id": self.model_name, "object": "model", "owned_by": "tests"}
        if self.vllm_like:  # vllm/entrypoints/openai/protocol.py ModelCard
            created = int(time.time()) + next(self._ticks)  # never the same twice
            entry.update(created=created, owned_by="vllm", root=f"/models/{self.model_name}",
                         parent=None, max_model_len=32768,
                         permission=[{"id": f"modelperm-{uuid.uuid4().hex}",
                                      "object": "model_permission", "created": created,
                                      "allow_sampling": True, "allow_logprobs": True}])
        return {"object": "list", "data": [entry]}

    def complete(self, body: dict) -> dict:
        request = _translate(body)
        with self.lock:
            if body.get("logprobs"):
                return self._logprobs(request, int(body.get("top_logprobs", 20)))
            limit = body.get("max_tokens", body.get("max_completion_tokens", 16))
            params = GenerationParams(max_new_tokens=limit,
                                      temperature=body.get("temperature", 0.0),
                                      top_p=body.get("top_p", 1.0), seed=body.get("seed", 0))
            out = self.backend.generate([request], params)[0]
        return {"id": "cmpl-tiny", "object": "chat.completion", "created": int(time.time()),
                "model": self.model_name,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": out.text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": out.n_prompt_tokens,
                          "completion_tokens": out.n_new_tokens}}

    def upload(self, content_type: str, data: bytes) -> tuple[int, dict]:
        form = email.parser.BytesParser().parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + data)
        parts = {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
                 for part in form.get_payload()}
        if parts.get("purpose") != b"batch" or "file" not in parts:
            return 400, {"error": {"message": "expected purpose=batch and a file"}}
        file_id = f"file-{uuid.uuid4().hex[:12]}"
        self.files[file_id] = parts["file"]
        return 200, {"id": file_id, "object": "file", "purpose": "batch",
                     "bytes": len(parts["file"])}

    def create_batch(self, body: dict) -> tuple[int, dict]:
        if body.get("input_file_id") not in self.files or \
                body.get("endpoint") != "/v1/chat/completions":
            return 400, {"error": {"message": "unknown input_file_id or endpoint"}}
        batch_id = f"batch_{uuid.uuid4().hex[:12]}"
        self.batches[batch_id] = {"id": batch_id, "object": "batch", "status": "validating",
                                  "input_file_id": body["input_file_id"],
                                  "endpoint": body["endpoint"], "output_file_id": None,
                                  "error_file_id": None, "polls": 0}
        return 200, self._public(self.batches[batch_id])

    def poll_batch(self, batch_id: str) -> tuple[int, dict]:
        batch = self.batches.get(batch_id)
        if batch is None:
            return 404, {"error": {"message": f"no batch {batch_id}"}}
        batch["polls"] += 1
        if batch["status"] in ("validating", "in_progress"):
            if self.hold_batches or batch["polls"] <= self.batch_polls:
                batch["status"] = "in_progress"
            else:
                self._run_batch(batch)
        return 200, self._public(batch)

    def _run_batch(self, batch: dict) -> None:
        lines = [json.loads(line) for line in self.files[batch["input_file_id"]].splitlines()]
        output, errors = [], []
        for index, line in enumerate(lines):
            custom = {"id": f"req-{index}", "custom_id": line["custom_id"]}
            if self.batch_expire_after is not None and index >= self.batch_expire_after:
                errors.append({**custom, "response": None, "error": {
                    "code": "batch_expired", "message": "not run before the batch expired"}})
            elif self.batch_fails and self.batch_fails(index, line):
                errors.append({**custom, "response": {"status_code": 500, "body": {
                    "error": {"message": "scripted failure"}}}, "error": None})
            else:
                self.batch_lines += 1
                output.append({**custom, "response": {"status_code": 200,
                                                      "body": self.complete(line["body"])},
                               "error": None})
        for name, found in (("output_file_id", output), ("error_file_id", errors)):
            if found:
                file_id = f"file-{uuid.uuid4().hex[:12]}"
                self.files[file_id] = "".join(json.dumps(f) + "\n" for f in found).encode()
                batch[name] = file_id
        batch["status"] = "completed" if self.batch_expire_after is None else "expired"
        batch["request_counts"] = {"total": len(lines), "completed": len(output),
                                   "failed": len(errors)}

    @staticmethod
    def _public(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if k != "polls"}

    def _logprobs(self, request: Request, k: int) -> dict:
        import torch

        inputs = self.backend.encode([request])
        with torch.no_grad():
            logits = self.backend.model(**inputs).logits[0, -1].float()
        logp = torch.log_softmax(logits, -1)
        values, ids = logp.topk(min(k + len(self.hide_tokens), logp.numel()))
        decode = self.backend.processor.tokenizer.decode
        top = [{"token": decode([i]), "logprob": float(v)} for v, i in zip(values.tolist(), ids.tolist())]
        top = [entry for entry in top if entry["token"] not in self.hide_tokens][:k]
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": top[0]["token"]},
                             "logprobs": {"content": [{**top[0], "top_logprobs": top}]}}],
                "model": self.model_name}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: dict | bytes, headers: dict | None = None,
                      body: dict | None = None):
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                with server.log_lock:
                    server.log.append({"time": time.monotonic(), "method": self.command,
                                       "path": self.path, "fingerprint": fingerprint(body),
                                       "fields": sorted(body or ()), "status": status})
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value() if callable(value) else value)
                self.end_headers()
                self.wfile.write(data)

            def _scripted(self, body: dict | None) -> bool:
                answer = server.script and server.script(self.command, self.path, body)
                if answer:
                    status, payload, headers = answer
                    self._send(status, payload, headers, body)
                return bool(answer)

            def do_GET(self):
                if self._scripted(None):
                    return
                if self.path.startswith("/v1/batches/"):
                    return self._send(*server.poll_batch(self.path.rsplit("/", 1)[1]))
                if self.path.startswith("/v1/files/") and self.path.endswith("/content"):
                    content = server.files.get(self.path.split("/")[3])
                    return self._send(200, content) if content is not None else \
                        self._send(404, {"error": "no such file"})
                if self.path != "/v1/models":
                    return self._send(404, {"error": "not found"})
                self._send(200, server.models())

            def do_POST(self):
                data = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path == "/v1/files":
                    if self._scripted(None):
                        return
                    return self._send(*server.upload(self.headers["Content-Type"], data))
                body = json.loads(data)
                if self.path == "/v1/batches":
                    return self._send(*server.create_batch(body))
                with server.lock:
                    server.requests_seen += 1
                    fail = server.requests_seen <= server.fail_first
                if fail:
                    return self._send(server.fail_status, {"error": "rate limited"},
                                      server.fail_headers, body)
                if self._scripted(body):
                    return
                self._send(200, server.complete(body), body=body)

        return Handler
