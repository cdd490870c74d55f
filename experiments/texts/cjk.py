"""Line breaks inside a paragraph of Chinese or Japanese text.

Markdown turns a line break inside a paragraph (a soft break) into a space, which is right
between words of English and wrong between Chinese or Japanese characters ("保存され、 お名前").
CSS Text level 3 (section 4.1.3, segment break transformation) removes such a break when the
characters on both sides are East Asian wide, fullwidth or halfwidth and neither is Hangul
(Korean separates words with spaces), or when either side is a zero-width space; browsers do
not apply that rule yet, so the soft break is removed here, before the HTML reaches them.
"""
from __future__ import annotations

import unicodedata

from markdown_it.rules_core import StateCore
from markdown_it.token import Token

_WIDE = {"F", "W", "H"}
_ZERO_WIDTH_SPACE = "\u200b"


def _is_hangul(char: str) -> bool:
    return unicodedata.name(char, "").startswith("HANGUL")


def joins(before: str, after: str) -> bool:
    """Whether a soft break between the characters ``before`` and ``after`` is removed."""
    if _ZERO_WIDTH_SPACE in (before, after):
        return True
    return all(unicodedata.east_asian_width(char) in _WIDE and not _is_hangul(char)
               for char in (before, after))


def _neighbour(children: list[Token], start: int, step: int) -> str:
    """The character next to a soft break: the nearest text across emphasis marks."""
    index = start + step
    while 0 <= index < len(children):
        token = children[index]
        if token.type in ("text", "code_inline") and token.content:
            return token.content[-1] if step < 0 else token.content[0]
        if token.type in ("softbreak", "hardbreak", "image"):
            return ""
        index += step
    return ""


def join_cjk_soft_breaks(state: StateCore) -> None:
    """A markdown-it core rule: drop the soft breaks that :func:`joins` removes."""
    for block in state.tokens:
        children = block.children or []
        for index, token in enumerate(children):
            if token.type != "softbreak":
                continue
            before, after = _neighbour(children, index, -1), _neighbour(children, index, 1)
            if before and after and joins(before, after):
                token.type, token.content = "text", ""
