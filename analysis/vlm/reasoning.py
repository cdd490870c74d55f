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
    n_tokens: int = 0  # reasoning tokens: the server's count, or the generated ids'

    def as_dict(self) -> dict:
        return asdict(self)


def tags(model: str) -> tuple[str, str]:
    """The tags around the reasoning of ``model`` (a served id or a local folder)."""
    return model_family(model.rstrip("/\\")).reasoning_tags


def prompt_opens(prompt: str, model: str) -> bool:
    """Whether the rendered prompt ends inside an opened reasoning (templates of R1-style
    models open it for the model)."""
    return prompt.rstrip().endswith(tags(model)[0])


def split_inline(text: str, model: str, opened: bool = False) -> Reasoning:
    """Split reasoning written between ``model``'s tags out of ``text`` (no token count).

    ``opened``: the prompt already opened the reasoning.
    """
    opening, closing = tags(model)
    head, closed, answer = text.partition(closing)
    start = head.find(opening)
    if start < 0 and not opened:
        return Reasoning(NONE, None, text)
    reasoning = head[start + len(opening):] if start >= 0 else head
    if not closed:
        return Reasoning(CUT_OFF, reasoning.strip(), None)
    return Reasoning(COMPLETE, reasoning.strip(), answer.strip())


def split_generated(ids: list[int], decode, model: str, opened: bool = False) -> Reasoning:
    """A local model's generated token ``ids`` (stop and padding tokens left out) split as
    :func:`split_inline` splits their text, the reasoning's tokens counted in ``ids``.

    The reasoning is every token up to the one that completes the closing tag (all of them
    when cut off), so reasoning and answer tokens add up to the tokens generated;
    re-tokenising the reasoning's text could count more than were generated.  ``decode``:
    token ids to text, as the answer was decoded.
    """
    found = split_inline(decode(ids), model, opened)
    if found.status == NONE:
        return found
    if found.status == CUT_OFF:
        return replace(found, n_tokens=len(ids))
    closing = tags(model)[1]
    low, high = 1, len(ids)  # the shortest prefix whose text holds the closing tag
    while low < high:
        middle = (low + high) // 2
        if closing in decode(ids[:middle]):
            high = middle
        else:
            low = middle + 1
    return replace(found, n_tokens=low)


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
