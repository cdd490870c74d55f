"""Prompt texts, verbatim from the papers, and backend-neutral chat messages.

A message is ``{"role": str, "content": [part, ...]}``; a part is ``{"type": "text",
"text": str}`` or ``{"type": "video" | "image", "visual": i}`` where ``i`` indexes the
request's list of :class:`~analysis.vlm.sampling.Visual`.  Backends turn parts into
their own formats; the rendered prompt (chat template applied) is what the cache keys on.

Sources: AoT-PsyPhyBENCH (sec. 4.1-4.3, Figures 6 and 7 here; the demonstrations and
traces of Figures 2 and 3 and the release come from ``experiments.benchmarks.protocol``),
EGO-FLIGHT (Appendix G; sec. 5 for the pairwise question): see ``prompts_order``.
"""
from __future__ import annotations

from analysis.vlm import prompt_sets

# --- Arrow of time (AoT-PsyPhyBENCH sec. 4.1) -------------------------------------------
AOT_SYSTEM = {
    "FB": ("You will see videos provided from the user, played either forward or backward. "
           "Finish your answer with F or B only. F for forward and B for backward."),
    # The same sentence with the two labels named in the other order, so logit scores can
    # separate a preference for the first-named label from perception.
    "BF": ("You will see videos provided from the user, played either backward or forward. "
           "Finish your answer with B or F only. B for backward and F for forward."),
}
AOT_USER = "Detect whether the video plays forward or backward with confidence."

# Figure 6 (Simple CoT) and Figure 7 (Multi-step CoT) instructions.
COT_SIMPLE_INSTRUCTION = {
    "FB": ("Is this video played forward (F) or backward (B)? Pay attention to moving parts in "
           "the video as they may be the visual clues to indicate the direction of the playback. "
           "Think step by step before giving out your final answer. Finish your answer with F "
           "for forward or B for backward only."),
    "BF": ("Is this video played backward (B) or forward (F)? Pay attention to moving parts in "
           "the video as they may be the visual clues to indicate the direction of the playback. "
           "Think step by step before giving out your final answer. Finish your answer with B "
           "for backward or F for forward only."),
}
_MULTI_STEP_BODY = (
    "Think in three steps: **Observation**, **Assumption**, and **Conclusion**.\n"
    "In **Observation**, describe what you see in the video honestly, without making any early "
    "assumptions about whether it is played forward or backward. Pay close attention to moving "
    "elements such as people’s movements, the flow of liquid, or any changes in the size or "
    "position of objects. In **Assumption**, make a reasonable guess about what should normally "
    "happen in this scene if it were played forward. Base this guess on common sense, including "
    "causal relationships, the laws of physics, and the arrow of time. In **Conclusion**, check "
    "whether your Observation matches or contradicts your Assumption. If what you observed "
    "follows the expected behavior based on your assumption, then the video is played forward. "
    "If what you observed goes against your assumption, then the video is being played backward.\n"
)
COT_MULTI_STEP_INSTRUCTION = {
    "FB": ("Is this video played forward or backward?\n" + _MULTI_STEP_BODY
           + "Finish your answer with F for forward or B for backward only."),
    "BF": ("Is this video played backward or forward?\n" + _MULTI_STEP_BODY
           + "Finish your answer with B for backward or F for forward only."),
}

# The runner's spellings of AoT-PsyPhyBENCH's settings (experiments.benchmarks.protocol).
AOT_SETTINGS = ("zero-shot", "few-shot-2", "few-shot-4", "simple-cot", "multi-step-cot")
# Settings whose answer comes at the end of generated reasoning: scored from that text only
# (the label's probability at the first generated token would be an answer without reasoning).
COT_SETTINGS = ("simple-cot", "multi-step-cot")


def demonstrations(setting: str) -> tuple[tuple[str, str], ...]:
    """The demonstrations of a setting: ``(item_id, assistant answer)``, in the paper's order.

    One definition for runner and report: ``experiments.benchmarks.protocol`` (few-shot: the
    first n of the 4 released demonstrations; multi-step CoT: the 2 released traces; Simple
    CoT: the traces of Figures 2-3 for the same two videos; zero-shot: none).
    """
    from experiments.benchmarks import protocol

    if setting not in AOT_SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; choose from {AOT_SETTINGS}")
    return tuple((d.item_id, d.answer) for d in protocol.demonstrations(setting))


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def aot_messages(setting: str, label_order: str = "FB", n_demos: int | None = None,
                 language: str = prompt_sets.PAPER_LANGUAGE) -> list[dict]:
    """Chat messages for one arrow-of-time item; visual 0..k-1 are demos, visual k the test.

    Parameters
    ----------
    setting : {"zero-shot", "few-shot-2", "few-shot-4", "simple-cot", "multi-step-cot"}
    label_order : {"FB", "BF"}
        The order in which the prompt names the two labels.
    n_demos : int, optional
        Number of demonstrations (defaults to all of the setting's).
    language : str
        The prompt set (:mod:`analysis.vlm.prompt_sets`): the papers' English by default.
    """
    if label_order not in AOT_SYSTEM:
        raise ValueError(f"label_order must be 'FB' or 'BF', got {label_order!r}")
    demos = demonstrations(setting)[:n_demos]
    prompt_sets.check(language, "aot", setting)
    system = AOT_SYSTEM[label_order]
    if language != prompt_sets.PAPER_LANGUAGE:
        translated = prompt_sets.TRANSLATIONS[language]
        system, user = translated[f"system_{label_order}"], translated["user"]
    elif setting == "simple-cot":
        user = COT_SIMPLE_INSTRUCTION[label_order]
    elif setting == "multi-step-cot":
        user = COT_MULTI_STEP_INSTRUCTION[label_order]
    else:
        user = AOT_USER
    messages = [{"role": "system", "content": [_text(system)]}]
    for i, (_, answer) in enumerate(demos):
        messages.append({"role": "user", "content": [{"type": "video", "visual": i}, _text(user)]})
        messages.append({"role": "assistant", "content": [_text(answer)]})
    messages.append({"role": "user",
                     "content": [{"type": "video", "visual": len(demos)}, _text(user)]})
    return messages
