"""What a participant reads, in their language: the study's texts rendered on the server, and
the device requirements the browser checks before consent.

The language is the study's, picked by ``?lang=`` when the study offers it, else by the
browser's Accept-Language, else the study's first language.  Values the server knows (the
estimated duration, the number of sessions, the minimum window) are filled here; the few only
the browser knows (a countdown, the window it measured) stay as ``{placeholders}`` that the
runner fills, escaped (static/js/screens.js).
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping

from markupsafe import Markup

from experiments import languages, study_annotations
from experiments import texts as text_defaults
from experiments.designs import STUDY_CONFIG_KEY, Design
from experiments.study_file import estimate_session_minutes, study_texts
from experiments.study_settings import default

# How the study file's browser engines are named to a participant (product names).
BROWSER_NAMES = {"chromium": ("Chrome", "Edge"), "firefox": ("Firefox",), "webkit": ("Safari",)}
# The settings' declared defaults, as a stored study holds them.
DEFAULT_SETTINGS = {"languages": list(default("study.languages")),
                    "browsers": list(default("participants.browsers")),
                    "devices": list(default("participants.devices")),
                    "min_window": [default("participants.min_window_width"),
                                   default("participants.min_window_height")],
                    "min_refresh_hz": default("participants.min_refresh_hz"),
                    "max_refresh_hz": default("participants.max_refresh_hz"),
                    "platform": default("recruitment.platform"), "return_urls": {}}


def browser_list(settings: Mapping, language: str) -> str:
    """The study's browsers as one choice in ``language`` (a list joined with English commas
    read wrongly inside a translated sentence)."""
    return languages.or_list([name for engine in settings["browsers"]
                              for name in BROWSER_NAMES.get(engine, (engine,))], language)


def study_settings(snapshot: Mapping | None) -> dict:
    """The participant-side settings of a study's design snapshot (defaults for a study made
    without a study file)."""
    stored = (snapshot or {}).get(STUDY_CONFIG_KEY) or {}
    return {**DEFAULT_SETTINGS, **{k: v for k, v in stored.items() if v is not None}}


def choose_language(languages, requested: str | None, accept_languages=None,
                    remembered: str | None = None) -> str:
    """``requested`` when the study offers it, else ``remembered`` (the language the
    participant's session was in, or their last session's), else the best Accept-Language
    match, else the study's first language."""
    languages = list(languages) or [text_defaults.DEFAULT_LANGUAGE]
    return preferred_language(languages, requested, accept_languages, remembered) \
        or languages[0]


def preferred_language(languages, requested: str | None, accept_languages=None,
                       remembered: str | None = None) -> str | None:
    """The language :func:`choose_language` picks, or None where nothing asks for one (the
    study's first is then a default, not anyone's choice)."""
    for language in (requested, remembered):
        if language is not None and language in languages:
            return language
    if accept_languages is not None:
        # Accept-Language often names a region ("de-CH"): its primary tag counts too.
        for value, _quality in accept_languages:
            primary = value.split("-")[0].lower()
            if primary in languages:
                return primary
    return None


def requirements(settings: Mapping) -> dict:
    """What the runner's device check asks of the browser (before consent)."""
    width, height = settings["min_window"]
    return {"browsers": list(settings["browsers"]), "devices": list(settings["devices"]),
            "min_window": {"w": width, "h": height}, "fullscreen": True,
            "refresh_hz": {"min": settings["min_refresh_hz"], "max": settings["max_refresh_hz"]}}


def refresh_range(settings: Mapping) -> str:
    """The refresh rates a study admits, in symbols every language reads ("≥ 100 Hz")."""
    low, high = settings["min_refresh_hz"], settings["max_refresh_hz"]
    if low is not None and high is not None:
        return f"{low}–{high} Hz"
    return f"≥ {low} Hz" if low is not None else f"≤ {high} Hz" if high is not None else "any"


def session_minutes(session) -> float:
    """How long ``session`` takes: the study file's estimate, else one from its schedule."""
    settings = study_settings(session.design_snapshot)
    design = Design.from_snapshot(session)
    return (settings.get("estimate") or {}).get("session_minutes") \
        or estimate_session_minutes(design, session.schedule)


def session_texts(session, language: str, extra: Mapping[str, object] | None = None,
                  ) -> dict[str, str]:
    """Every text of ``session``'s study in ``language``, rendered, server-known values filled
    (and ``extra`` values, e.g. the next session's number for its calendar file)."""
    settings = study_settings(session.design_snapshot)
    design = Design.from_snapshot(session)
    width, height = settings["min_window"]
    values = {"duration_minutes": session_minutes(session), "sessions": design.sessions,
              "min_width": width, "min_height": height, "refresh_range": refresh_range(settings),
              "browsers": browser_list(settings, language), **(extra or {})}
    return text_defaults.render_all(study_texts(settings, design.task, language), language,
                                    values)


def remembered_language(device_info: Mapping | None) -> str | None:
    """The language a session's participant chose (by the link's ?lang=, their last session
    or their browser at entry), stored with the session; None if nothing chose one."""
    return (device_info or {}).get("language")


def session_language(session, requested: str | None, accept_languages=None) -> str:
    """The language ``session``'s texts are in: see :func:`choose_language` (the session's
    remembered language comes before the browser's)."""
    return choose_language(study_settings(session.design_snapshot)["languages"], requested,
                           accept_languages, remembered_language(session.device_info))


def consent_version(session, language: str) -> str:
    """A short hash of the consent text ``session``'s participant read in ``language`` (the
    rendered form, with the sessions sentence where the design has several): which wording
    a recorded consent was given to."""
    rendered = session_texts(session, language)
    shown = [rendered["consent"]]
    if Design.from_snapshot(session).sessions > 1:
        shown.append(rendered["consent_sessions"])
    return hashlib.sha256("\n".join(shown).encode()).hexdigest()[:16]


def session_reading(session, requested: str | None, accept_languages=None) -> dict:
    """What the session's GET adds for the runner: its language, texts and device check."""
    language = session_language(session, requested, accept_languages)
    return {"language": language, "direction": languages.direction(language),
            "texts": session_texts(session, language),
            "requirements": requirements(study_settings(session.design_snapshot))}


def annotated(session, trials: list[dict], language: str) -> list[dict]:
    """The browser's ``trials`` (in schedule order) with each clip annotation in
    ``language`` where the study gives its own (experiments.study_annotations)."""
    own = study_settings(session.design_snapshot).get("annotations")
    if not own:
        return trials
    for view, scheduled in zip(trials, session.schedule):
        if view["params"].get("annotation"):
            view["params"]["annotation"] = study_annotations.annotation(own, language, scheduled)
    return trials


def page_texts(snapshot: Mapping | None, requested: str | None, accept_languages=None,
               remembered: str | None = None) -> tuple[str, dict[str, str]]:
    """(language, rendered texts) for a server-rendered participant page of a study (or of no
    study: ``snapshot`` None offers the shipped languages)."""
    settings = study_settings(snapshot)
    languages = settings["languages"] if snapshot else text_defaults.SHIPPED_LANGUAGES
    language = choose_language(languages, requested, accept_languages, remembered)
    rendered = text_defaults.render_all(_texts(snapshot, settings, language), language)
    return language, {key: Markup(html) for key, html in rendered.items()}  # sanitised HTML


def _texts(snapshot: Mapping | None, settings: Mapping, language: str) -> dict:
    """The study's texts for ``language`` (:func:`study_texts`; none without a study)."""
    if not snapshot:
        return {}
    return study_texts(settings, str(snapshot.get("task", "")), language)


# The device check's problem text for each screen-out reason (static/js/device.js problems()).
SCREEN_OUT_TEXTS = {"device": "device_problem_desktop", "browser": "device_problem_browser",
                    "fullscreen": "device_problem_fullscreen", "window": "device_problem_window",
                    "video": "device_problem_video", "refresh": "device_problem_refresh"}


def screen_out_text(snapshot: Mapping | None, language: str, reasons, device: Mapping | None,
                    code: str) -> Markup:
    """The screen-out text, as the runner showed it, for a screened-out participant who opens
    their link again: why (from the stored reasons and device check), and the code."""
    settings = study_settings(snapshot)
    overrides = _texts(snapshot, settings, language)
    width, height = settings["min_window"]
    device = device or {}
    values = {"min_width": width, "min_height": height, "refresh_range": refresh_range(settings),
              "hz": round(device["refresh_hz"]) if device.get("refresh_hz") else "?",
              "browsers": browser_list(settings, language),
              "width": device.get("window_w", "?"), "height": device.get("window_h", "?")}
    chosen = text_defaults.resolve(overrides, language)
    why = " ".join(Markup(text_defaults.render(key, chosen[key], values)).striptags()
                   for key in dict.fromkeys(SCREEN_OUT_TEXTS.get(r) for r in reasons) if key)
    return Markup(text_defaults.render("screen_out", chosen["screen_out"],
                                       {"reasons": why, "code": code}))
