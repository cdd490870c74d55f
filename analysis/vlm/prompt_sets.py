"""The arrow-of-time prompt in other languages than the papers' English: a prompt set per
language, chosen per run (``run-models --prompt-language``), so that a lab comparing
Japanese speakers with models can ask the models in Japanese too.

A set translates the system sentence (both label orders) and the question.  The answer
labels stay ``F`` and ``B``, so parsing and logit scoring read the same two tokens in every
language.  The chain-of-thought settings demonstrate with the paper's released English
reasoning traces, which a translated prompt would mix with another language: a translated
set serves the settings whose demonstrations are labels only (:data:`TRANSLATED_SETTINGS`).
"""
from __future__ import annotations

PAPER_LANGUAGE = "en"  # the papers' own prompts, verbatim (analysis.vlm.prompts)
TRANSLATED_SETTINGS = ("zero-shot", "few-shot-2", "few-shot-4")
TRANSLATIONS: dict[str, dict[str, str]] = {
    "de": {
        "system_FB": "Der Nutzer zeigt Ihnen Videos, die entweder vorwärts oder rückwärts "
                     "abgespielt werden. Beenden Sie Ihre Antwort nur mit F oder B. F für "
                     "vorwärts und B für rückwärts.",
        "system_BF": "Der Nutzer zeigt Ihnen Videos, die entweder rückwärts oder vorwärts "
                     "abgespielt werden. Beenden Sie Ihre Antwort nur mit B oder F. B für "
                     "rückwärts und F für vorwärts.",
        "user": "Erkennen Sie mit Gewissheit, ob das Video vorwärts oder rückwärts abgespielt "
                "wird.",
    },
    "ja": {
        "system_FB": "ユーザーから提供される動画は、順再生または逆再生のどちらかで再生されます。"
                     "回答の最後は F または B のみで終えてください。F は順再生、B は逆再生です。",
        "system_BF": "ユーザーから提供される動画は、逆再生または順再生のどちらかで再生されます。"
                     "回答の最後は B または F のみで終えてください。B は逆再生、F は順再生です。",
        "user": "動画が順再生か逆再生かを、確信をもって判定してください。",
    },
}
PROMPT_LANGUAGES = (PAPER_LANGUAGE, *TRANSLATIONS)


def check(language: str, task: str, setting: str) -> None:
    """Refuse a prompt language the run cannot be asked in, saying what it can."""
    if language not in PROMPT_LANGUAGES:
        raise ValueError(f"no prompt set in {language!r}; choose from {PROMPT_LANGUAGES}")
    if language == PAPER_LANGUAGE:
        return
    if task != "aot":
        raise ValueError(f"the {task} prompts are the papers' English only; --prompt-language "
                         f"{language} is for --task aot")
    if setting not in TRANSLATED_SETTINGS:
        raise ValueError(f"setting {setting!r} demonstrates with the paper's English reasoning "
                         f"traces; --prompt-language {language} serves "
                         f"{', '.join(TRANSLATED_SETTINGS)}")
