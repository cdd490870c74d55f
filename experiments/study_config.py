"""A study's whole configuration (:class:`StudyConfig`: its design and the study-level
settings and texts), what a participant reads of it in their language (:func:`study_texts`),
and how long a session of it takes (:func:`estimate_session_minutes`).

:mod:`experiments.study_file` reads one from a study file; ``StudyConfig.settings()`` is what
a study stores beside its design.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from experiments import texts as text_defaults
from experiments.designs import Design
from experiments.platforms import DEFAULT_PLATFORM
from experiments.study_settings import default
from experiments.trial_types import TRIAL_TYPES


@dataclass(frozen=True)
class StudyConfig:
    """A study's whole configuration: its design plus the study-level settings and texts."""

    design: Design
    stimulus_set: str
    # The study-level settings' defaults are declared with them (experiments.study_settings).
    title: str = default("study.title")
    languages: tuple[str, ...] = default("study.languages")
    places: int | None = default("participants.places")
    browsers: tuple[str, ...] = default("participants.browsers")
    devices: tuple[str, ...] = default("participants.devices")
    min_window: tuple[int, int] = (default("participants.min_window_width"),
                                   default("participants.min_window_height"))
    min_refresh_hz: int | None = default("participants.min_refresh_hz")
    max_refresh_hz: int | None = default("participants.max_refresh_hz")
    platform: str = default("recruitment.platform")
    # The study file's return URLs by outcome (experiments.platforms.URL_OUTCOMES).
    return_urls: dict = field(default_factory=dict)
    # The study's own texts (Markdown) by language and key; the rest are the shipped defaults.
    texts: dict = field(default_factory=dict)
    # The lab's facts the consent states (texts.STUDY_FACTS): Markdown, or Markdown by language.
    contact: str | dict = default("study.contact")
    ethics: str | dict = default("study.ethics")
    data_retention: str | dict = default("study.data_retention")
    # The study's own clip annotations by language (experiments.study_annotations).
    annotations: dict = field(default_factory=dict)
    time_zone: str = default("study.time_zone")

    def settings(self) -> dict:
        """The study-level settings as JSON (stored beside the design in its snapshot).

        ``own_texts`` are the file's texts, each stored once: what a participant reads in a
        language is filled in when it is read (:func:`study_texts`), so the stored form never
        holds a copy per language."""
        return {"stimulus_set": self.stimulus_set, "title": self.title,
                "languages": list(self.languages), "places": self.places,
                "browsers": list(self.browsers), "devices": list(self.devices),
                "min_window": list(self.min_window), "time_zone": self.time_zone,
                # Stored where given only: most studies keep the defaults.
                **{key: getattr(self, key) for key in ("min_refresh_hz", "max_refresh_hz")
                   if getattr(self, key) is not None},
                **({"platform": self.platform} if self.platform != DEFAULT_PLATFORM else {}),
                **({"return_urls": dict(self.return_urls)} if self.return_urls else {}),
                **{fact: getattr(self, fact) for fact in text_defaults.STUDY_FACTS},
                "own_texts": {lang: dict(keys) for lang, keys in self.texts.items()},
                **({"annotations": self.annotations} if self.annotations else {})}

    def facts(self, language: str) -> dict[str, str]:
        return lab_facts({fact: getattr(self, fact) for fact in text_defaults.STUDY_FACTS},
                         self.languages, language)

    @classmethod
    def from_settings(cls, design: Design, settings: dict) -> "StudyConfig":
        data = dict(settings)
        data.pop("estimate", None)
        if "own_texts" in data:  # else a study stored before texts were filled in
            data["texts"] = data.pop("own_texts")
        for key in ("languages", "browsers", "devices", "min_window"):
            if key in data:
                data[key] = tuple(data[key])
        return cls(design=design, **data)

    def resolved_texts(self, language: str) -> dict[str, str]:
        return text_defaults.resolve(self.texts, language)


def lab_facts(values: Mapping, languages, language: str) -> dict[str, str]:
    """The lab's facts (``values`` by :data:`texts.STUDY_FACTS`) in ``language``: a fact given
    by language is that language's, else the study's first language's."""
    found = {}
    for fact in text_defaults.STUDY_FACTS:
        value = values.get(fact) or ""
        if isinstance(value, dict):
            value = value.get(language) or value.get(languages[0], "")
        found[fact] = value
    return found


def study_texts(settings: Mapping, task: str, language: str) -> dict[str, dict[str, str]]:
    """A stored study's texts for a participant reading ``language``, as the overrides by
    language that ``texts.resolve`` and ``texts.render_all`` take: its own texts, with
    ``language``'s filled with the task's and the lab's paragraphs (``texts.for_study``).

    Filled here, one language at a time, so that the stored form holds each text once (a
    stored form with a filled copy per language grew a 47 KB file to 41.7 MB); a study stored
    that way still has its filled ``texts``, read as they are."""
    if "texts" in settings:
        return settings["texts"] or {}
    own = settings.get("own_texts") or {}
    facts = lab_facts(settings, settings.get("languages") or ["en"], language)
    return {**own, language: text_defaults.for_study(own, language, task, facts)}


# Rough seconds a participant spends beyond the trials (each trial type says how long one of
# its own takes, ``duration_s``): the screens before the trials (consent, checks,
# instructions), each break, the debrief, a practice trial's feedback.
SETUP_S, BREAK_S, DEBRIEF_S, FEEDBACK_S = 120.0, 30.0, 60.0, 1.2


def estimate_session_minutes(design: Design, schedule: list[dict], clip_s: float = 3.0) -> int:
    """Whole minutes one session of ``schedule`` takes, from its trials and the design's timings.

    This fills ``{duration_minutes}`` in the consent text, so it is never typed by hand.
    """
    seconds = SETUP_S + DEBRIEF_S + BREAK_S * max(design.main_blocks - 1, 0)
    for trial in schedule:
        trial_s = TRIAL_TYPES[trial["trial_type"]].duration_s(design, clip_s)
        practice = str(trial.get("block") or "").startswith("practice")
        seconds += trial_s + design.inter_trial_ms / 1000 + (FEEDBACK_S if practice else 0.0)
    return max(1, -int(-seconds // 60))
