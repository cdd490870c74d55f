"""Any OpenAI-compatible chat-completions server: proprietary APIs or a ``vllm serve`` cluster.

Videos go out either as a sequence of images (``video_mode="frames"``, how AoT-PsyPhyBENCH
sent sampled frames to proprietary APIs) or as one ``video_url`` of base64 frames with the
declared fps in ``mm_processor_kwargs`` (``video_mode="video_url"``, vLLM's format).  Frames
are PNG (lossless) by default.  Requests run with bounded concurrency and are retried with
exponential backoff on rate limits, server errors and dropped connections.  The API key is
read from the environment variable named by ``api_key_env`` at construction.
"""
from __future__ import annotations

import base64
import io
import json
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor

from analysis.models.backends.base import (SURFACE_FORMS, Backend, Generation, GenerationParams,
                                           LabelScores, Request)
from analysis.models.provenance import library_versions

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
VIDEO_MODES = ("frames", "video_url")


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, model: str, *, base_url: str, api_key_env: str = "OPENAI_API_KEY",
                 video_mode: str = "frames", frame_format: str = "png", concurrency: int = 8,
                 max_retries: int = 5, timeout_s: float = 120.0, top_logprobs: int = 20,
                 backoff_s: float = 1.0):
        import httpx

        if video_mode not in VIDEO_MODES:
            raise ValueError(f"video_mode must be one of {VIDEO_MODES}")
        if frame_format not in ("png", "jpeg"):
            raise ValueError("frame_format must be png or jpeg")
        self.model_id, self.base_url = model, base_url.rstrip("/")
        self.video_mode, self.frame_format = video_mode, frame_format
        self.concurrency, self.max_retries = concurrency, max_retries
        self.top_logprobs, self.backoff_s = top_logprobs, backoff_s
        key = os.environ.get(api_key_env, "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s)
        self._description = None

    def describe(self) -> dict:
        if self._description is None:
            served = self._request("GET", "/models")
            entry = next((m for m in served.get("data", []) if m.get("id") == self.model_id), None)
            if entry is None:
                raise ValueError(f"{self.base_url} does not serve model {self.model_id!r}")
            self._description = {
                "backend": self.name, "model": self.model_id, "base_url": self.base_url,
                "served_model": entry, "weights_sha256": None, "video_mode": self.video_mode,
                "frame_format": self.frame_format, "top_logprobs": self.top_logprobs,
                "libraries": library_versions()}
        return self._description

    # -- payloads -----------------------------------------------------------------------------
    def _parts(self, part: dict, request: Request) -> list[dict]:
        """One backend-neutral part as OpenAI content parts (a video may become several)."""
        if part["type"] == "text":
            return [{"type": "text", "text": part["text"]}]
        visual = request.visuals[part["visual"]]
        if part["type"] == "image" or self.video_mode == "frames":
            return [{"type": "image_url", "image_url": {"url": _data_url(f, self.frame_format)}}
                    for f in visual.frames]
        encoded = ",".join(_b64(f, self.frame_format) for f in visual.frames)
        return [{"type": "video_url",
                 "video_url": {"url": f"data:video/{self.frame_format};base64,{encoded}"}}]

    def body(self, request: Request) -> dict:
        """The chat-completions request body, without decoding parameters."""
        messages = [{"role": m["role"],
                     "content": [out for p in m["content"] for out in self._parts(p, request)]}
                    for m in request.messages]
        body = {"model": self.model_id, "messages": messages}
        videos = [v for v in request.visuals if v.kind == "video"]
        if self.video_mode == "video_url" and videos:
            body["mm_processor_kwargs"] = {"fps": videos[-1].metadata_fps}
        return body

    def render(self, request: Request) -> str:
        """The request with pixels elided (they are keyed separately by the visuals)."""
        return json.dumps([{"role": m["role"], "content": [
            p if p["type"] == "text" else {"type": p["type"], "visual": p["visual"]}
            for p in m["content"]]} for m in request.messages], sort_keys=True)

    # -- calls ---------------------------------------------------------------------------------
    def _request(self, method: str, path: str, body: dict | None = None) -> dict:
        import httpx

        for attempt in range(self.max_retries + 1):
            try:
                response = self.client.request(method, path, json=body)
            except httpx.TransportError:
                if attempt == self.max_retries:
                    raise
            else:
                if response.status_code not in RETRY_STATUS or attempt == self.max_retries:
                    response.raise_for_status()
                    return response.json()
            time.sleep(self.backoff_s * 2 ** attempt)
        raise RuntimeError("unreachable")

    def _map(self, fn, requests: list[Request]) -> list:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(fn, requests))

    def generate(self, requests: list[Request], params: GenerationParams) -> list[Generation]:
        def one(request: Request) -> Generation:
            body = {**self.body(request), "max_tokens": params.max_new_tokens,
                    "temperature": params.temperature, "top_p": params.top_p,
                    "seed": params.seed, "frequency_penalty": 0}
            if params.repetition_penalty != 1.0:
                body["repetition_penalty"] = params.repetition_penalty  # vLLM extension
            reply = self._request("POST", "/chat/completions", body)
            usage = reply.get("usage") or {}
            text = reply["choices"][0]["message"].get("content") or ""
            return Generation(text, usage.get("prompt_tokens", 0),
                              usage.get("completion_tokens", 0),
                              {"system_fingerprint": reply.get("system_fingerprint")})
        return self._map(one, requests)

    def score(self, requests: list[Request], labels: tuple[str, ...]) -> list[LabelScores]:
        forms = {label: SURFACE_FORMS.get(label, (label, " " + label)) for label in labels}

        def one(request: Request) -> LabelScores:
            body = {**self.body(request), "max_tokens": 1, "temperature": 0, "logprobs": True,
                    "top_logprobs": self.top_logprobs}
            reply = self._request("POST", "/chat/completions", body)
            top = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
            found = {entry["token"]: entry["logprob"] for entry in top}
            scores = {label: _logsumexp([found[f] for f in fs if f in found])
                      for label, fs in forms.items()}
            seen = {label: [f for f in fs if f in found] for label, fs in forms.items()}
            return LabelScores(scores, seen, {"top_logprobs": len(top)})
        return self._map(one, requests)

    def close(self) -> None:
        self.client.close()


def _logsumexp(values: list[float]) -> float:
    if not values:
        return -math.inf  # not among the top logprobs the server returned
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def _b64(frame, fmt: str) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    options = {"quality": 95} if fmt == "jpeg" else {}
    Image.fromarray(frame).save(buffer, format=fmt.upper(), **options)
    return base64.b64encode(buffer.getvalue()).decode()


def _data_url(frame, fmt: str) -> str:
    return f"data:image/{fmt};base64,{_b64(frame, fmt)}"
