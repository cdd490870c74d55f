"""A tiny OpenAI-compatible chat-completions server over the transformers backend (tests only).

It accepts what ``vllm serve`` accepts from our HTTP backend: text and ``image_url`` parts,
``video_url`` parts holding comma-separated base64 frames, ``mm_processor_kwargs.fps``,
``logprobs``/``top_logprobs``.  ``fail_first`` makes it answer 429 to that many requests,
to exercise retries.
"""
import base64
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from PIL import Image

from analysis.models.backends.base import GenerationParams, Request
from analysis.models.sampling import Visual


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


class TinyOpenAIServer:
    def __init__(self, backend, model_name: str, fail_first: int = 0):
        self.backend, self.model_name = backend, model_name
        self.fail_first, self.requests_seen = fail_first, 0
        self.lock = threading.Lock()  # one model call at a time, as on one GPU
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

    def complete(self, body: dict) -> dict:
        request = _translate(body)
        with self.lock:
            if body.get("logprobs"):
                return self._logprobs(request, int(body.get("top_logprobs", 20)))
            params = GenerationParams(max_new_tokens=body.get("max_tokens", 16),
                                      temperature=body.get("temperature", 0.0),
                                      top_p=body.get("top_p", 1.0), seed=body.get("seed", 0))
            out = self.backend.generate([request], params)[0]
        return {"id": "cmpl-tiny", "object": "chat.completion", "created": int(time.time()),
                "model": self.model_name,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": out.text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": out.n_prompt_tokens,
                          "completion_tokens": out.n_new_tokens}}

    def _logprobs(self, request: Request, k: int) -> dict:
        import torch

        inputs = self.backend.encode([request])
        with torch.no_grad():
            logits = self.backend.model(**inputs).logits[0, -1].float()
        logp = torch.log_softmax(logits, -1)
        values, ids = logp.topk(min(k, logp.numel()))
        decode = self.backend.processor.tokenizer.decode
        top = [{"token": decode([i]), "logprob": float(v)} for v, i in zip(values.tolist(), ids.tolist())]
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": top[0]["token"]},
                             "logprobs": {"content": [{**top[0], "top_logprobs": top}]}}],
                "model": self.model_name}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: dict):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path != "/v1/models":
                    return self._send(404, {"error": "not found"})
                self._send(200, {"data": [{"id": server.model_name, "object": "model",
                                           "owned_by": "tests"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests_seen += 1
                    fail = server.requests_seen <= server.fail_first
                if fail:
                    return self._send(429, {"error": "rate limited"})
                self._send(200, server.complete(body))

        return Handler
