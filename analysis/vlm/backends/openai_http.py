"""Any OpenAI-compatible chat-completions server: proprietary APIs or a ``vllm serve`` cluster.

Videos go out as a sequence of images or as one ``video_url`` (the request's payload:
:mod:`analysis.vlm.backends.openai_payload`).

Requests run with bounded concurrency.  Each is retried (tenacity) on dropped connections,
timeouts, 408, 429, 5xx and a 200 whose body is not JSON (cut off by a proxy or an
overloaded server), never on any other 4xx, after the wait the server's
``Retry-After`` asks for, else a random share of an exponentially growing window (full
jitter; :mod:`analysis.vlm.backends.http_errors`).  A request that still fails becomes that
request's outcome, so the others are kept.  With ``batch_api`` a run's calls go out as one
batch instead (:mod:`analysis.vlm.backends.openai_batch`).
Only what the run sets is sent, under the names the model's family expects (``families``),
and a parameter the family refuses is an error before any item runs.  The API key is read
from the environment variable named by ``api_key_env`` at construction.
"""
from __future__ import annotations

import json
import math
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata

import httpx
import tenacity

from analysis.vlm.backends import openai_batch, openai_payload
from analysis.vlm.backends.base import (
    SURFACE_FORMS,
    Backend,
    BatchCall,
    Generation,
    GenerationParams,
    LabelScores,
    Request,
)
from analysis.vlm.backends.families import model_family
from analysis.vlm.backends.http_errors import MalformedReply, failure, retry_after_s, transient
from analysis.vlm.reasoning import split_served

# The fields of a /models entry that say what the model computes.  The rest is volatile:
# vLLM answers with a fresh "created" time and a random permission id on every call.
SERVED_IDENTITY = ("id", "root", "parent", "max_model_len")


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, model: str, *, base_url: str, api_key_env: str = "OPENAI_API_KEY",
                 video_mode: str = "frames", frame_format: str = "png", concurrency: int = 8,
                 max_retries: int = 5, timeout_s: float = 120.0, top_logprobs: int = 20,
                 backoff_s: float = 1.0, max_wait_s: float = 120.0, revision: str | None = None,
                 batch_api: bool = False, batch_poll_s: float = 30.0):
        if video_mode not in openai_payload.VIDEO_MODES:
            raise ValueError(f"video_mode must be one of {openai_payload.VIDEO_MODES}")
        if frame_format not in ("png", "jpeg"):
            raise ValueError("frame_format must be png or jpeg")
        if concurrency < 1 or max_retries < 0 or timeout_s <= 0:
            raise ValueError("concurrency must be >= 1, max_retries >= 0 and timeout > 0")
        self.model_id, self.base_url = model, base_url.rstrip("/")
        self.family, self.revision = model_family(model), revision
        self.video_mode, self.frame_format = video_mode, frame_format
        self.concurrency, self.max_retries, self.timeout_s = concurrency, max_retries, timeout_s
        self.top_logprobs, self.backoff_s, self.max_wait_s = top_logprobs, backoff_s, max_wait_s
        self.api_key_env = api_key_env
        self.batch_api, self.batch_poll_s = batch_api, batch_poll_s
        key = os.environ.get(api_key_env, "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s)
        self._backoff = tenacity.wait_random_exponential(multiplier=backoff_s, max=max_wait_s)
        self._vllm = False
        self._description: dict | None = None

    def describe(self) -> dict:
        """The served model's stable identity (see ``SERVED_IDENTITY``) and our settings.

        A served name alone does not pin weights: ``revision`` is the researcher's word for
        them (a dated API model id pins them too)."""
        if self._description is None:
            reply = self._request("GET", "/models")
            served = reply.get("data") if isinstance(reply, dict) else None
            if not isinstance(served, list) or not all(isinstance(m, dict) for m in served):
                raise ValueError(f"{self.base_url}/models did not answer an OpenAI model list "
                                 f"({{\"data\": [{{\"id\": ...}}]}}); got {str(reply)[:200]}")
            entry = next((m for m in served if m.get("id") == self.model_id), None)
            if entry is None:
                ids = [m.get("id") for m in served][:10]
                raise ValueError(f"{self.base_url} does not serve model {self.model_id!r} "
                                 f"(it serves {ids}); check --model")
            self._vllm = entry.get("owned_by") == "vllm"
            self._description = {
                "backend": self.name, "model": self.model_id, "base_url": self.base_url,
                "served_model": {k: entry[k] for k in SERVED_IDENTITY if k in entry},
                "revision": self.revision, "weights_sha256": None,
                "video_mode": self.video_mode, "frame_format": self.frame_format,
                "top_logprobs": self.top_logprobs,
                # The server computes the answer; here only the frame encoder can change it.
                "libraries": {"pillow": metadata.version("pillow")}}
        return self._description

    def check(self, params: GenerationParams, kinds: set[str]) -> None:
        family, refused = self.family, []
        for name in ("temperature", "top_p"):
            value, allowed = getattr(params, name), family.fixed.get(name)
            if allowed is not None and value != allowed:
                refused.append(f"{name} {value:g} (only its default {allowed:g}: "
                               "--sampling api-default)")
        if "repetition_penalty" in family.refused and params.repetition_penalty != 1.0:
            refused.append(f"repetition_penalty {params.repetition_penalty:g}")
        if "logprobs" in family.refused and "score" in kinds:
            refused.append("logprobs, which logit scoring needs (--scoring generate)")
        if "thinking" in family.refused and params.thinking is not None:
            refused.append("a thinking switch (leave --thinking out)")
        if params.thinking_budget is not None:
            raise ValueError("--thinking-budget: an OpenAI-compatible server has no standard "
                             "reasoning budget; bound the whole reply with --max-new-tokens "
                             "(a reply cut off while thinking is stored as cut off)")
        if refused:
            raise ValueError(f"{self.model_id} is one of the {family.name}, which refuse "
                             + "; ".join(refused))

    # -- payloads -----------------------------------------------------------------------------
    def body(self, request: Request) -> dict:
        """The chat-completions request body, without decoding parameters."""
        return openai_payload.body(request, self.model_id, self.video_mode, self.frame_format)

    def decoding(self, params: GenerationParams) -> dict:
        """The decoding fields of a generation request: what the run sets, named for the
        family, leaving out what the family only accepts at its default."""
        family = self.family
        out: dict[str, object] = {family.token_limit: params.max_new_tokens}
        for name in ("temperature", "top_p", "seed"):
            if name not in family.fixed and name not in family.unsent:
                out[name] = getattr(params, name)
        # vLLM fills unset fields from the model's generation_config.json (Qwen2.5-VL:
        # repetition_penalty 1.05), so there the run's own value goes out even at 1.
        if params.repetition_penalty != 1.0 or self._vllm:
            out["repetition_penalty"] = params.repetition_penalty  # a vLLM extension
        if params.thinking is not None:  # vLLM and SGLang pass it to the chat template
            out["chat_template_kwargs"] = {"enable_thinking": params.thinking}
        return out

    def render(self, request: Request) -> str:
        """The request with pixels elided (they are keyed separately by the visuals)."""
        return json.dumps([{"role": m["role"], "content": [
            p if p["type"] == "text" else {"type": p["type"], "visual": p["visual"]}
            for p in m["content"]]} for m in request.messages], sort_keys=True)

    # -- calls ---------------------------------------------------------------------------------
    def _send(self, method: str, path: str, body: dict | None, raw: bool = False,
              **content) -> dict | bytes:
        """One attempt; ``raw``: the body's bytes (a file's content), not its JSON;
        ``content``: httpx's ``files`` and ``data`` of a multipart upload."""
        response = self.client.request(method, path, json=body, **content)
        response.raise_for_status()
        if raw:
            return response.content
        try:
            return response.json()
        except ValueError as error:
            raise MalformedReply(response) from error

    def _wait(self, state: tenacity.RetryCallState) -> float:
        """Seconds before the next attempt: what the server asked for, plus jitter so that
        concurrent requests do not return together, else full-jitter exponential backoff."""
        error = state.outcome.exception() if state.outcome is not None else None
        after = (retry_after_s(error.response.headers)
                 if isinstance(error, httpx.HTTPStatusError) else None)
        if after is None:
            return self._backoff(state)
        return min(after, self.max_wait_s) + random.uniform(0, self.backoff_s)

    def _request(self, method: str, path: str, body: dict | None = None, **options):
        """The reply's JSON (or bytes, with ``raw=True``), retried while the failure is
        transient; else a :class:`BackendError` saying what to do."""
        retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(self.max_retries + 1),
                                     wait=self._wait, retry=tenacity.retry_if_exception(transient),
                                     reraise=True)
        try:
            return retrying(self._send, method, path, body, **options)
        except (httpx.HTTPError, MalformedReply) as error:
            attempts = retrying.statistics.get("attempt_number", 1)
            raise failure(f"{method} {self.base_url}{path}", error, attempts, self.base_url,
                          self.api_key_env, self.timeout_s) from error

    def _map(self, fn, requests: list[Request]) -> list:
        """``fn`` over the requests, concurrently: each one's result or the error it raised."""
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [pool.submit(fn, request) for request in requests]
        return [future.exception() or future.result() for future in futures]

    def generate(self, requests: list[Request], params: GenerationParams
                 ) -> list[Generation | Exception]:
        self.check(params, {"generate"})
        return self._map(lambda request: self._timed(lambda: self.generation(self._request(
            "POST", "/chat/completions", self.generation_body(request, params))),), requests)

    def score(self, requests: list[Request], labels: tuple[str, ...]
              ) -> list[LabelScores | Exception]:
        if "logprobs" in self.family.refused:
            raise ValueError(f"{self.model_id} is one of the {self.family.name}, which "
                             "return no logprobs")
        return self._map(lambda request: self._timed(lambda: self.label_scores(self._request(
            "POST", "/chat/completions", self.score_body(request)), labels)), requests)

    # -- one call's body and reply, the same for a synchronous call and a batch's line --------
    def generation_body(self, request: Request, params: GenerationParams) -> dict:
        return {**self.body(request), **self.decoding(params)}

    def score_body(self, request: Request) -> dict:
        """The label scores' request: one token, with the top logprobs of the first."""
        return {**self.body(request), self.family.token_limit: 1, "temperature": 0,
                "logprobs": True, "top_logprobs": self.top_logprobs}

    def generation(self, reply: dict) -> Generation:
        usage = reply.get("usage")
        choice = reply["choices"][0]
        message = choice["message"]
        text = message.get("content") or ""
        # vLLM's reasoning parsers (and DeepSeek's API) send reasoning_content; newer
        # vLLM and OpenRouter send reasoning; OpenAI counts its hidden reasoning tokens.
        thought = message.get("reasoning_content") or message.get("reasoning")
        details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
        reasoning = split_served(text, thought if isinstance(thought, str) else None,
                                 choice.get("finish_reason"), self.model_id,
                                 _tokens(details, "reasoning_tokens"))
        return Generation(text, _tokens(usage, "prompt_tokens"),
                          _tokens(usage, "completion_tokens"),
                          {"system_fingerprint": reply.get("system_fingerprint"),
                           "finish_reason": choice.get("finish_reason")},
                          reasoning.as_dict())

    @staticmethod
    def label_scores(reply: dict, labels: tuple[str, ...]) -> LabelScores:
        forms = {label: SURFACE_FORMS.get(label, (label, " " + label)) for label in labels}
        usage = reply.get("usage")
        spent = {"n_prompt_tokens": _tokens(usage, "prompt_tokens"),
                 "n_new_tokens": _tokens(usage, "completion_tokens")}
        top = _top_logprobs(reply)
        if top is None:  # the call worked; the server just gives no logprobs
            return LabelScores({label: -math.inf for label in labels},
                               {label: [] for label in labels},
                               {"top_logprobs": 0, **spent,
                                "score_missing": "the server returned no logprobs"})
        found = {entry["token"]: entry["logprob"] for entry in top}
        scores = {label: _logsumexp([found[f] for f in fs if f in found])
                  for label, fs in forms.items()}
        seen = {label: [f for f in fs if f in found] for label, fs in forms.items()}
        info: dict[str, object] = {"top_logprobs": len(top), **spent}
        if not any(seen.values()):
            info["score_missing"] = f"no label among the server's top {len(top)} logprobs"
        return LabelScores(scores, seen, info)

    @staticmethod
    def _timed(call):
        """A synchronous call's result with its wall time (a batch's lines have none)."""
        start = time.perf_counter()
        result = call()
        result.info["wall_s"] = round(time.perf_counter() - start, 6)
        return result

    def submit_batch(self, calls: list[BatchCall], params: GenerationParams) -> str:
        return openai_batch.submit(self, calls, params)

    def batch_outcomes(self, batch_id: str, calls: list[BatchCall]) -> dict[str, object]:
        return openai_batch.answers(self, batch_id, calls, self.batch_poll_s)

    def close(self) -> None:
        self.client.close()


def _tokens(usage, key: str) -> int:
    """A token count of a reply's ``usage``: 0 where the server sent none or no count (a
    string, a negative number), so a strange reply never fails its item or the ledger."""
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _top_logprobs(reply: dict) -> list | None:
    """The first answer token's top logprobs, or None where the reply carries none (servers
    that do not implement logprobs answer ``null`` or an empty list)."""
    try:
        top = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    except (KeyError, IndexError, TypeError):
        return None
    return top if isinstance(top, list) else None


def _logsumexp(values: list[float]) -> float:
    if not values:
        return -math.inf  # not among the top logprobs the server returned
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))

