"""What a participant reads, in their language: the study's texts rendered on the server, and
the device requirements the browser checks before consent.

The language is the study's, picked by ``?lang=`` when the study offers it, else by the
browser's Accept-Language, else the study's first language.  Values the server knows (the
estimated duration, the number of sessions, the minimum window) are filled here; the few only
the browser knows (a countdown, the window it measured) stay as ``{placeholders}`` that the
runner fills, escaped (static/js/screens.js).
"""
from __future__ import annotations

from collections.abc import Mapping

from markupsafe import Markup

from experiments import texts as text_defaults
from experiments.designs import STUDY_CONFIG_KEY, design_from_snapshot
from experiments.study_file import DEFAULT_BROWSERS, estimate_session_minutes

# How the study file's browser engines are named to a participant (product names).
BROWSER_NAMES = {"chromium": "Chrome, Edge", "firefox": "Firefox", "webkit": "Safari"}
DEFAULT_SETTINGS = {"languages": ["en"], "browsers": list(DEFAULT_BROWSERS),
                    "devices": ["desktop"], "min_window": [800, 600]}


def study_settings(snapshot: Mapping | None) -> dict:
    """The participant-side settings of a study's design snapshot (defaults for a study made
    without a study file)."""
    stored = (snapshot or {}).get(STUDY_CONFIG_KEY) or {}
    return {**DEFAULT_SETTINGS, **{k: v for k, v in stored.items() if v is not None}}


def choose_language(languages, requested: str | None, accept_languages=None) -> str:
    """``requested`` when the study offers it, else the best Accept-Language match, else the
    study's first language."""
    languages = list(languages) or [text_defaults.DEFAULT_LANGUAGE]
    if requested in languages:
        return requested
    if accept_languages is not None:
        # Accept-Language often names a region ("de-CH"): its primary tag counts too.
        for value, _quality in accept_languages:
            primary = value.split("-")[0].lower()
            if primary in languages:
                return primary
    return languages[0]


def requirements(settings: Mapping) -> dict:
    """What the runner's device check asks of the browser (before consent)."""
    width, height = settings["min_window"]
    return {"browsers": list(settings["browsers"]), "devices": list(settings["devices"]),
            "min_window": {"w": width, "h": height}, "fullscreen": True}


def session_minutes(session) -> float:
    """How long ``session`` takes: the study file's estimate, else one from its schedule."""
    settings = study_settings(session.design_snapshot)
    design = design_from_snapshot(session.design, session.design_snapshot)
    return (settings.get("estimate") or {}).get("session_minutes") \
        or estimate_session_minutes(design, session.schedule)


def session_texts(session, language: str, extra: Mapping[str, object] | None = None,
                  ) -> dict[str, str]:
    """Every text of ``session``'s study in ``language``, rendered, server-known values filled
    (and ``extra`` values, e.g. the next session's number for its calendar file)."""
    settings = study_settings(session.design_snapshot)
    design = design_from_snapshot(session.design, session.design_snapshot)
    width, height = settings["min_window"]
    values = {"duration_minutes": session_minutes(session), "sessions": design.sessions,
              "min_width": width, "min_height": height,
              "browsers": ", ".join(BROWSER_NAMES.get(b, b) for b in settings["browsers"]),
              **(extra or {})}
    return text_defaults.render_all(settings.get("texts") or {}, language, values)


def session_language(session, requested: str | None, accept_languages=None) -> str:
    """The language ``session``'s texts are in: see :func:`choose_language`."""
    return choose_language(study_settings(session.design_snapshot)["languages"], requested,
                           accept_languages)


def session_reading(session, requested: str | None, accept_languages=None) -> dict:
    """What the session's GET adds for the runner: its language, texts and device check."""
    language = session_language(session, requested, accept_languages)
    return {"language": language, "texts": session_texts(session, language),
            "requirements": requirements(study_settings(session.design_snapshot))}


def page_texts(snapshot: Mapping | None, requested: str | None, accept_languages=None,
               ) -> tuple[str, dict[str, str]]:
    """(language, rendered texts) for a server-rendered participant page of a study (or of no
    study: ``snapshot`` None offers the shipped languages)."""
    settings = study_settings(snapshot)
    languages = settings["languages"] if snapshot else text_defaults.SHIPPED_LANGUAGES
    language = choose_language(languages, requested, accept_languages)
    rendered = text_defaults.render_all(settings.get("texts") or {}, language)
    return language, {key: Markup(html) for key, html in rendered.items()}  # sanitised HTML
