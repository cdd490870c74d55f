"""A study's own annotations of its clips, by language: the sentence a frame-ordering trial
shows above the frames ("A person folds a shirt.").

A clip's annotations come with its stimulus metadata, in English; a study in another language
gives its own under ``[annotations.LANG]``, keyed by the clip's key (``manage.py stimuli list``
shows it)::

    [annotations.ja]
    "fold-shirt" = "人がシャツをたたむ。"                       # at every annotation level
    "pour-water" = {brief = "水を注ぐ。", comprehensive = "人がグラスに水を注ぐ。"}

A clip or level a language does not give shows the metadata's annotation.
"""
from __future__ import annotations

from collections.abc import Mapping

LEVELS = ("brief", "comprehensive")  # experiments.trial_types.frame_order.ANNOTATIONS but none
MAX_ANNOTATION_CHARS = 2_000
MAX_CLIPS = 10_000


def check_annotations(reader, annotations, languages) -> dict[str, dict[str, dict[str, str]]]:
    """The file's ``[annotations]`` as ``{language: {clip_key: {level: text}}}``; each problem
    reported to ``reader`` (a study_file Reader) with its path."""
    from experiments.study_format import _show

    found: dict[str, dict[str, dict[str, str]]] = {}
    if not isinstance(annotations, dict):
        reader.error(("annotations",), f"expected a table of languages, got {_show(annotations)}")
        return found
    for language, clips in annotations.items():
        where = ("annotations", language)
        if language not in languages:
            reader.error(where, f"expected a language of study.languages {list(languages)}, "
                                f"got {language!r}")
        elif not isinstance(clips, dict) or len(clips) > MAX_CLIPS:
            reader.error(where, f"expected a table of at most {MAX_CLIPS} clip keys, got "
                                f"{_show(clips) if not isinstance(clips, dict) else len(clips)}")
        else:
            found[language] = {}
            for clip, value in clips.items():
                levels = dict.fromkeys(LEVELS, value) if isinstance(value, str) else value
                if not _fits(levels):
                    reader.error(where + (clip,), "expected a text of at most "
                                 f"{MAX_ANNOTATION_CHARS} characters, or a table of them by level "
                                 f"({', '.join(LEVELS)}), got {_show(value)}")
                else:
                    found[language][clip] = dict(levels)
    return found


def _fits(levels) -> bool:
    return isinstance(levels, dict) and bool(levels) and set(levels) <= set(LEVELS) and all(
        isinstance(text, str) and text.strip() and len(text) <= MAX_ANNOTATION_CHARS
        for text in levels.values())


def annotation(annotations: Mapping, language: str, trial: Mapping) -> str | None:
    """A scheduled trial's annotation in ``language``: the study's own for its clip and
    level, else the one it was scheduled with (the clip's metadata)."""
    own = ((annotations.get(language) or {}).get(trial.get("clip_key") or "") or {})
    shown = (trial.get("params") or {}).get("annotation")
    return own.get(trial.get("annotation_level") or "", shown) if shown else shown
