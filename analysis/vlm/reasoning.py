"""A thinking model's output split into its reasoning and the answer that is scored.

The raw text is always kept; the scored text never holds reasoning.  Reasoning comes either
inline, between its family's tags (``<think>...</think>``, or a family's own:
``backends.families``), possibly opened by the chat template in the prompt, or apart from
the answer, as OpenAI-compatible servers send it (``reasoning_content``, or ``reasoning``).
A reasoning that never closed (the thinking budget or the token limit cut it off) gives no
answer: the item is stored as cut off, never parsed from a half thought.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from analysis.vlm.backends.families import model_family

NONE, COMPLETE, CUT_OFF = "none", "complete", "cut_off"  # reasoning statuses


@dataclass(frozen=True)
class Reasoning:
    status: str  # NONE (no reasoning in the output), COMPLETE or CUT_OFF
    text: str | None  # the reasoning (None without)
    answer: str | None  # the scored text (None when cut off)
    n_tokens: int = 0  # reasoning tokens, counted by the server or the tokenizer

    def as_dict(self) -> dict:
        return asdict(self)


def tags(model: str) -> tuple[str, str]:
    """The tags around the reasoning of ``model`` (a served id or a local folder)."""
    return model_family(model.rstrip("/\\")).reasoning_tags


def prompt_opens(prompt: str, model: str) -> bool:
    """Whether the rendered prompt ends inside an opened reasoning (templates of R1-style
    models open it for the model)."""
    return prompt.rstrip().endswith(tags(model)[0])


def split_inline(text: str, model: str, opened: bool = False, count=None) -> Reasoning:
    """Split reasoning written between ``model``'s tags out of ``text``.

    ``opened``: the prompt already opened the reasoning.  ``count``: the tokenizer's count
    of a text (local models), else 0 tokens are said.
    """
    opening, closing = tags(model)
    head, closed, answer = text.partition(closing)
    start = head.find(opening)
    if start < 0 and not opened:
        return Reasoning(NONE, None, text)
    reasoning = head[start + len(opening):] if start >= 0 else head
    n = count(reasoning) if count is not None else 0
    if not closed:
        return Reasoning(CUT_OFF, reasoning.strip(), None, n)
    return Reasoning(COMPLETE, reasoning.strip(), answer.strip(), n)


def split_served(content: str | None, reasoning: str | None, finish_reason: str | None,
                 model: str, n_tokens: int | None = None) -> Reasoning:
    """A server's reply: its separate reasoning field, else reasoning inline in the content,
    else hidden reasoning that only the token count (``usage``) tells of.

    A reply stopped by the token limit (``finish_reason`` "length") with no answer after its
    reasoning was cut off while thinking.
    """
    content, n = content or "", n_tokens or 0
    if reasoning:
        text: str | None = reasoning.strip()
    else:
        inline = split_inline(content, model)
        if inline.status != NONE or not n:
            return replace(inline, n_tokens=n)
        text = None  # OpenAI's reasoning models send only how many tokens they thought
    if finish_reason == "length" and not content.strip():
        return Reasoning(CUT_OFF, text, None, n)
    return Reasoning(COMPLETE, text, content.strip(), n)
