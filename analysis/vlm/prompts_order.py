"""Frame-ordering and ordered-pair prompts (EGO-FLIGHT Appendix G and sec. 5).

Ordered pairs use EGO-FLIGHT's "Does Frame A or Frame B happen first?"; showing each pair
in both orders gives TimeCausality's positional-bias check without its top/bottom letters.

Frames are shown as separate images, each preceded by its label ("Frame 1:" ...), in the
presentation order; labels are 1-based presentation positions (see analysis/columns.py).
"""
from __future__ import annotations

ANNOTATION_LEVELS = ("none", "brief", "comprehensive")
PROMPT_STYLES = ("open", "proprietary")

_INTRO = ('You are shown {n} frames from a video. These frames have been shuffled and are NOT in '
          'their original order. The labels "Frame 1", "Frame 2", etc. refer to the order they '
          'appear in this message, not their chronological order.\n\n')
_CONTEXT = "The video shows: {context}\n\n"
_TASK = ("Your task: Determine the correct chronological order of these frames based on the "
         "visual content.\n\n")
_CUES = ("- Object positions and movements\n- Progress of any actions being performed\n"
         "- Any other visual cues that indicate sequence\n")
_EXAMPLE = 'For example (with 8 frames): "The correct temporal order is: 5, 2, 8, 1, 4, 7, 3, 6"'

_OPEN_NO_HINTS = ("First, briefly describe what you observe in each frame. Then explain your "
                  "reasoning for the temporal order based on:\n\n" + _CUES
                  + '\nFinally, provide your answer in this format:\n\n'
                  '"The correct temporal order is: [comma-separated frame numbers]"\n\n' + _EXAMPLE)
_PROPRIETARY_STEPS = ("1. Briefly describe what you observe in each frame.\n"
                      "2. Explain your reasoning for the temporal order based on:\n" + _CUES)
_PROPRIETARY_NO_HINTS = (_PROPRIETARY_STEPS + "3. Finally, provide your answer in this format:"
                         "\n\nThe correct temporal order is: [comma-separated frame numbers]"
                         "\n\n" + _EXAMPLE)
_PROPRIETARY_HINTS = (
    "HINTS PROVIDED: {hints}\n\n"
    "CRITICAL HINT INFORMATION: The frames marked as HINTS above are shown to you with their "
    "CORRECT temporal positions explicitly stated. These hint frames MUST remain in their "
    "specified positions in your final answer. For example, if a hint says \"Frame X should be "
    "in temporal position Y\", that means in the final temporal sequence, Frame X MUST be at "
    "position Y -- you cannot move it to a different position. Use these fixed hint frames as "
    "anchor points to determine where the remaining frames should go.\n\n")
_PROPRIETARY_HINT_STEPS = (
    _PROPRIETARY_STEPS + "3. Use the fixed hint frames as anchor points to determine where the "
    "remaining (non-hint) frames should be placed.\n4. Finally, provide your answer in this "
    "format:\n\nThe correct temporal order is: [comma-separated frame numbers]\n\n" + _EXAMPLE)

PAIRWISE_QUESTION = "Does Frame A or Frame B happen first?"
PAIRWISE_ANSWER = "Answer with A or B only."


def _hint_text(hints: dict[int, int]) -> str:
    """``{label: temporal position}`` -> "Frame 3 should be in temporal position 1; ..."."""
    return "; ".join(f"Frame {label} should be in temporal position {pos}"
                     for label, pos in sorted(hints.items(), key=lambda kv: kv[1]))


def _open_hint_block(n: int, hints: dict[int, int]) -> str:
    """EGO-FLIGHT's open-model hint prompt, generalised from hints at positions 2 and 4."""
    if n != 4 or len(hints) != 2:
        raise ValueError("the open-model hint prompt is defined for 4 frames with 2 hints")
    free = [label for label in range(1, n + 1) if label not in hints]
    by_pos = {pos: label for label, pos in hints.items()}
    free_positions = [pos for pos in range(1, n + 1) if pos not in by_pos]

    def option(first: int, second: int) -> str:
        slots = dict(by_pos)
        slots[free_positions[0]], slots[free_positions[1]] = first, second
        return "The correct temporal order is: " + ", ".join(str(slots[p]) for p in range(1, n + 1))

    ordinal = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th"}
    a, b = free
    return (f"GUARANTEED CORRECT HINTS (you MUST use these exactly):\n{_hint_text(hints)}\n\n"
            f"Your task:\n  1. Look at Frame {a} and Frame {b} -- these are the only frames you "
            f"need to decide about.\n  2. Describe what you see in each of the four frames.\n"
            f"  3. Decide: which one ({a} or {b}) happened {ordinal[free_positions[0]]} "
            f"chronologically? Which one happened {ordinal[free_positions[1]]} chronologically?\n\n"
            f"CRITICAL: Your final answer MUST have EXACTLY 4 numbers separated by commas.\n\n"
            f"There are ONLY 2 valid answers:\n  • {option(a, b)}\n  • {option(b, a)}\n\n"
            f"You MUST choose one of these two options.")


def frame_order_text(n: int, context: str | None, hints: dict[int, int] | None = None,
                     style: str = "open") -> str:
    """The EGO-FLIGHT ordering instruction for ``n`` shuffled frames.

    Parameters
    ----------
    n : int
        Number of frames shown.
    context : str or None
        Scene annotation (brief or comprehensive); None for the "no annotation" level, which
        drops the "The video shows:" line.
    hints : dict, optional
        ``{presented label: true temporal position}`` (1-based) of the hint frames.
    style : {"open", "proprietary"}
        EGO-FLIGHT used different wordings for open-weight and proprietary models.
    """
    if style not in PROMPT_STYLES:
        raise ValueError(f"style must be one of {PROMPT_STYLES}, got {style!r}")
    text = _INTRO.format(n=n)
    if hints and style == "proprietary":
        text += _PROPRIETARY_HINTS.format(hints=_hint_text(hints))
    if context:
        text += _CONTEXT.format(context=context)
    if hints and style == "open":
        return text + _open_hint_block(n, hints)
    if hints:
        return text + _TASK + _PROPRIETARY_HINT_STEPS
    return text + _TASK + (_OPEN_NO_HINTS if style == "open" else _PROPRIETARY_NO_HINTS)


def frame_order_messages(n: int, text: str) -> list[dict]:
    """A user turn with ``Frame i:`` labels before each image, then the instruction."""
    content: list[dict[str, str | int]] = []
    for i in range(n):
        content.append({"type": "text", "text": f"Frame {i + 1}:"})
        content.append({"type": "image", "visual": i})
    content.append({"type": "text", "text": text})
    return [{"role": "user", "content": content}]


def pairwise_messages(context: str | None) -> list[dict]:
    """EGO-FLIGHT sec. 5 pairwise question: visual 0 is Frame A, visual 1 is Frame B."""
    content = [{"type": "text", "text": "Frame A:"}, {"type": "image", "visual": 0},
               {"type": "text", "text": "Frame B:"}, {"type": "image", "visual": 1}]
    prefix = _CONTEXT.format(context=context) if context else ""
    content.append({"type": "text", "text": f"{prefix}{PAIRWISE_QUESTION} {PAIRWISE_ANSWER}"})
    return [{"role": "user", "content": content}]
