"""Strict parsers for model answers.

A parser never guesses: text that does not end in a well-formed answer is reported as
unparseable (``response=None``) and kept verbatim in ``extra.raw_text`` by the runner.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

PARSE_OK = "ok"
PARSE_UNPARSEABLE = "unparseable"
PARSE_CUT_OFF = "reasoning_cut_off"  # no answer: the reasoning never ended (analysis.vlm.reasoning)

# Decorations a model may wrap a one-letter answer in: markdown emphasis, quotes, brackets,
# LaTeX \boxed{}, a trailing full stop.  They are stripped; words are not.
_DECORATION = re.compile(r"^[\s*_`\"'“”‘’(\[{$\\]+|[\s*_`\"'“”‘’)\]}.!。$\\]+$")
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_TEXT = re.compile(r"\\(?:text|mathrm|textbf)\{([^{}]*)\}")  # \boxed{\text{B}}
_FENCE = re.compile(r"^\s*```\w*\s*$")  # a markdown code fence line (```json)
_SEPARATOR = re.compile(r"[\s:=]+")
_ORDER = re.compile(
    r"the\s+correct\s+temporal\s+order\s+is\s*:?\s*[*\"'“\[(]*\s*"
    r"(\d+(?:\s*(?:,|->|→)\s*\d+)*)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Parsed:
    """A parsed answer: ``response`` is None exactly when ``status`` is not ``"ok"``."""

    response: object
    status: str
    detail: str = ""


def _unparseable(detail: str) -> Parsed:
    return Parsed(None, PARSE_UNPARSEABLE, detail)


def _final_token(text: str) -> tuple[str, str] | None:
    """The last token of the last non-empty line, undecorated.

    Tokens are separated by whitespace, ``:`` and ``=``, so ``Answer:F`` and
    ``{"answer":"F"}`` end in ``F`` as ``Answer: F`` and ``{"answer": "F"}`` do.
    """
    text = _BOXED.sub(r"\1", _TEXT.sub(r"\1", text))
    lines = [line for line in text.strip().splitlines()
             if line.strip() and not _FENCE.match(line)]
    if not lines:
        return None
    last_line = lines[-1]
    tokens = [t for t in (_DECORATION.sub("", t) for t in _SEPARATOR.split(last_line)) if t]
    return (tokens[-1] if tokens else ""), last_line


def _json_answers(text: str) -> list | None:
    """The values of the ``answer`` fields (any case) of the JSON object the text ends with,
    code fences aside; None when it does not end with one."""
    body = "\n".join(line for line in text.strip().splitlines() if not _FENCE.match(line))
    body = body.strip()
    start = body.rfind("{") if body.endswith("}") else -1
    while start >= 0:  # the outermost object that parses to the end of the text
        try:
            pairs = json.loads(body[start:], object_pairs_hook=list)
        except ValueError:
            start = body.rfind("{", 0, start)
            continue
        return [value for key, value in pairs if key.lower() == "answer"]
    return None


def parse_choice(text: str | None, labels: tuple[str, ...]) -> Parsed:
    """Parse a final one-letter answer such as ``F``/``B`` or ``A``/``B``.

    The answer is the last token of the last non-empty line, stripped of markdown,
    quotes, brackets and a full stop.  It must be one of ``labels`` exactly (case
    sensitive: a lowercase ``b`` is a word, not a label), and that line must not also
    name another label on its own (``"F or B"`` is an echo of the instruction).  Text
    ending in a JSON object with an ``answer`` field answers with that field alone
    (``{"answer": "F", "confidence": "high"}``), which must be exactly one label.

    Parameters
    ----------
    text : str or None
        Generated text.
    labels : tuple of str
        Allowed answers, e.g. ``("F", "B")``.

    Returns
    -------
    Parsed
        ``response`` is the label, or None with ``status="unparseable"``.

    Examples
    --------
    >>> parse_choice("The splash shrinks, so it is reversed.\\nB", ("F", "B")).response
    'B'
    >>> parse_choice("F or B", ("F", "B")).status
    'unparseable'
    """
    if text is None:
        return _unparseable("no text")
    answers = _json_answers(text)
    if answers:
        token = _DECORATION.sub("", answers[0]) if isinstance(answers[0], str) else None
        if len(answers) == 1 and token in labels:
            return Parsed(token, PARSE_OK)
        return _unparseable(f"JSON answer {answers} is not one of {labels}")
    found = _final_token(text)
    if found is None:
        return _unparseable("empty")
    token, last_line = found
    if token not in labels:
        return _unparseable(f"final token {token!r} is not one of {labels}")
    standalone = set(re.findall(r"(?<![A-Za-z])([A-Z])(?![A-Za-z])", last_line))
    others = standalone & (set(labels) - {token})
    if others:
        return _unparseable(f"final line names several labels: {sorted(standalone)}")
    return Parsed(token, PARSE_OK)


def parse_arrow_of_time(text: str | None) -> Parsed:
    """Parse an arrow-of-time answer: the final ``F`` or ``B`` (see :func:`parse_choice`)."""
    return parse_choice(text, ("F", "B"))


def parse_frame_order(text: str | None, n_frames: int) -> Parsed:
    """Parse "The correct temporal order is: 3, 1, 4, 2" (EGO-FLIGHT, Appendix G).

    The last occurrence of the phrase counts (models often restate the format first).
    The numbers are 1-based frame labels in presentation order and must be a
    permutation of ``1..n_frames``; anything else is unparseable.

    Returns
    -------
    Parsed
        ``response`` is the list of labels in the claimed chronological order.
    """
    if n_frames < 2:
        raise ValueError(f"n_frames must be >= 2, got {n_frames}")
    if text is None:
        return _unparseable("no text")
    matches = _ORDER.findall(text)
    if not matches:
        return _unparseable("no 'The correct temporal order is:' statement")
    numbers = [int(n) for n in re.findall(r"\d+", matches[-1])]
    if sorted(numbers) != list(range(1, n_frames + 1)):
        return _unparseable(f"{numbers} is not a permutation of 1..{n_frames}")
    return Parsed(numbers, PARSE_OK)
