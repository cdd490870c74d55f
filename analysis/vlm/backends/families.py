"""Families of served models: what each accepts in a chat-completions request.

Plain data, without httpx: the backend registry reads it to decide, before any request,
whether a served model can be scored from log-probabilities, and every backend reads the
tags a family's models put around their reasoning (local folders are matched by their name).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    """What a family of served models accepts in a chat-completions request."""

    name: str
    pattern: str  # regex on the lower-cased model id, provider prefix ("openai/") removed
    token_limit: str = "max_tokens"
    fixed: dict = field(default_factory=dict)  # accepted only at this value: never sent
    unsent: tuple[str, ...] = ()  # set by every run, but not sent to this family
    refused: tuple[str, ...] = ()  # "logprobs", "repetition_penalty", "thinking"
    # What opens and closes a thinking model's reasoning in its output.
    reasoning_tags: tuple[str, str] = ("<think>", "</think>")


# OpenAI's reasoning-models guide (platform.openai.com/docs/guides/reasoning) and the API's
# 400s ("Unsupported parameter: 'max_tokens' ... Use 'max_completion_tokens' instead";
# "'temperature' does not support 0 with this model. Only the default (1) value is
# supported"): reasoning models take max_completion_tokens, which also bounds their hidden
# reasoning tokens, and refuse temperature and top_p other than 1, seed, logprobs and the
# penalties.  OpenAI's API refuses fields it does not know, such as vLLM's repetition_penalty
# and chat_template_kwargs (the thinking switch): its reasoning models always reason.
FAMILIES = (
    Family("OpenAI reasoning models (o1, o3, o4, GPT-5)", r"^(o1|o3|o4|gpt-5)\b",
           token_limit="max_completion_tokens", fixed={"temperature": 1.0, "top_p": 1.0},
           unsent=("seed",), refused=("logprobs", "repetition_penalty", "thinking")),
    Family("OpenAI chat models (GPT-4o, GPT-4.1, GPT-4, GPT-3.5)", r"^(gpt-4|gpt-3\.5|chatgpt)",
           refused=("repetition_penalty", "thinking")),
    # Kimi-VL-A3B-Thinking's chat template and outputs (moonshotai, 2025) think in these.
    Family("Kimi-VL thinking models", r"^kimi-vl.*thinking",
           reasoning_tags=("\u25c1think\u25b7", "\u25c1/think\u25b7")),
)
OTHER = Family("OpenAI-compatible server", "")


def model_family(model: str) -> Family:
    """The family of a served model id (``OTHER`` when none matches: everything is sent)."""
    base = model.strip().rsplit("/", 1)[-1].lower()
    return next((f for f in FAMILIES if re.search(f.pattern, base)), OTHER)


def returns_logprobs(model: str) -> bool:
    """Whether a served model answers with log-probabilities (logit scoring needs them)."""
    return "logprobs" not in model_family(model).refused
