"""A study file's format: each value's check against its setting (the settings are declared
in :mod:`experiments.study_settings`), and how a configuration is written back as a file
(:func:`to_toml`).

:mod:`experiments.study_file` reads and validates files against this schema; a value is
checked here the same way wherever it comes from (a file, the dashboard's form, the command
line's ``--title``).
"""
from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from experiments import languages
from experiments import texts as text_defaults
from experiments.study_settings import (
    MAX_LANGUAGES,
    MAX_TEXT_CHARS,
    MAX_TITLE_CHARS,
    MAX_ZONE_CHARS,
    SETTINGS,
    Setting,
    design_value,
)

if TYPE_CHECKING:
    from experiments.study_config import StudyConfig

# The schema: every setting, declared once in experiments.study_settings.
SCHEMA = SETTINGS
WEBKIT_ONSET_ERROR = "mean 9.2 ms, SD 4.0 ms"
# Key pairs a participant can mistake for each other when a catch video shows one of them.
LOOK_ALIKE_KEYS = frozenset(frozenset(pair) for pair in ("o0", "i1", "l1", "il", "s5", "b8", "z2"))
# Characters a title must not hold, by Unicode category: control characters, and characters
# that are invisible or reorder the text around them (bidirectional overrides, zero-width
# and private-use characters), with which one study's title passes for another's.
_HIDDEN = {"Cc": "a control", "Cf": "an invisible or bidirectional-formatting",
           "Co": "a private-use", "Cn": "an unassigned", "Cs": "a surrogate",
           "Zl": "a line-separator", "Zp": "a paragraph-separator"}
# The catch set has a video for each such key (experiments.catch.KEYS); whether the stored
# one does is checked when a study is created, where the database can be seen.
_KEY_NAME = re.compile(r"^[a-z0-9]$")


def title_problem(title: str) -> str | None:
    """None when ``title`` may be a study's title, else "expected ..., got ..." (one rule for
    the study file, the form and ``manage.py study create --title``)."""
    if len(title) > MAX_TITLE_CHARS:
        return f"expected a title of at most {MAX_TITLE_CHARS} characters, got {len(title)}"
    for position, char in enumerate(title, start=1):
        kind = _HIDDEN.get(unicodedata.category(char))
        if kind:
            name = unicodedata.name(char, "").lower() or "no name"
            return (f"expected a title without control characters or invisible or "
                    f"bidirectional-formatting ones, got {kind} character U+{ord(char):04X} "
                    f"({name}) at character {position}")
    return None


def _longest_text(value) -> int:
    """The length of the longest string in ``value`` (a string, or a table or list of them)."""
    if isinstance(value, str):
        return len(value)
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return max((len(item) for item in items if isinstance(item, str)), default=0)


def check_value(setting: Setting, value) -> str | None:
    """None when ``value`` fits ``setting``, else "expected ..., got ..."."""
    longest = _longest_text(value)
    if longest > MAX_TEXT_CHARS:
        return f"expected text of at most {MAX_TEXT_CHARS} characters, got {longest}"
    if setting.kind == "title" and _is_text(value):
        return title_problem(value)
    if setting.kind == "language_list" and isinstance(value, list) and \
            0 < len(value) <= MAX_LANGUAGES:
        for code in value:  # a code CLDR does not know says which it likely meant
            if found := languages.problem(code):
                return found
    fits = _FITS[setting.kind](setting, value)
    bound = ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if setting.maximum is not None and value > setting.maximum:
            fits, bound = False, setting.bound  # 1e17 for an integer: the bound is the news
        elif fits:
            fits = setting.minimum is None or value >= setting.minimum
    return None if fits else f"expected {setting.expected}{bound}, got {_show(value)}"


def _is_text(value) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _is_zone(value) -> bool:
    if not _is_text(value) or len(value) > MAX_ZONE_CHARS:
        return False
    try:
        ZoneInfo(value)
    except (ValueError, ZoneInfoNotFoundError):  # ValueError: a path such as "../x"
        return False
    return True


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_FITS = {
    "int": lambda s, v: _is_int(v),
    "number": lambda s, v: _is_int(v) or (isinstance(v, float) and math.isfinite(v)),
    "bool": lambda s, v: isinstance(v, bool),
    "str": lambda s, v: _is_text(v),
    "title": lambda s, v: _is_text(v),
    "time_zone": lambda s, v: _is_zone(v),
    "choice": lambda s, v: v in s.choices,
    "language_list": lambda s, v: isinstance(v, list) and 0 < len(v) <= MAX_LANGUAGES
    and len(set(v)) == len(v) and all(isinstance(x, str) and languages.TAG.match(x) for x in v),
    "key_pair": lambda s, v: isinstance(v, list) and len(v) == 2 and len(set(v)) == 2
    and all(isinstance(x, str) and _KEY_NAME.match(x) for x in v),
    "choice_list": lambda s, v: isinstance(v, list) and bool(v) and len(set(v)) == len(v)
    and all(x in s.choices for x in v),
    "url": lambda s, v: _is_text(v),  # its scheme and placeholders: study_checks
    "localised": lambda s, v: _is_text(v) or isinstance(v, dict) and bool(v)
    and all(isinstance(k, str) and languages.TAG.match(k) and _is_text(x) for k, x in v.items()),
}


def visible(text: str) -> str:
    """``text`` with each character a title may not hold written as its escape (``\\u001b``,
    ``\\u202e``): a problem shows a file's key or value, in a terminal or on a page, and must
    never obey it (a key of ESC ] 0 ; ... retitled the terminal of `study validate`)."""
    return "".join(f"\\u{ord(char):04x}" if unicodedata.category(char) in _HIDDEN else char
                   for char in text)


def _show(value) -> str:
    """``value`` as a problem shows it: JSON, hidden characters escaped, cut short past 80
    characters."""
    shown = visible(json.dumps(value, ensure_ascii=False, default=str))
    return shown if len(shown) <= 80 else f"{shown[:60]}… ({len(shown)} characters)"


# --- writing -------------------------------------------------------------------------------

def to_toml(config: StudyConfig) -> str:
    """The study file of ``config``: every setting written out, texts the study's own only."""
    design = config.design.to_dict()
    lines = ["# Chronoscope study file (manage.py study validate FILE; study create SLUG --from FILE)"]
    for section, settings in SCHEMA.items():
        lines.append(f"\n[{section}]")
        for key, setting in settings.items():
            value = _setting_value(config, design, section, key, setting)
            if value is not None:
                lines.append(f"{key} = {toml_value(value)}")
    for language, keys in config.texts.items():
        lines.append(f"\n[texts.{language}]")
        lines.extend(f"{key} = {toml_text(text)}" for key, text in keys.items())
    for language, clips in config.annotations.items():
        lines.append(f"\n[annotations.{language}]")
        lines.extend(f"{toml_string(clip)} = {toml_value(levels)}"
                     for clip, levels in clips.items())
    return "\n".join(lines) + "\n"


def _setting_value(config, design, section, key, setting):
    if key == "trials_per_block":
        return None  # written as clips_per_session
    if key == "repeats_per_direction" and (not config.design.included_splits
                                           or config.design.adaptive_trials):
        return None  # a fixed sweep design's setting only
    if key in ("adaptive_trials", "adaptive_stop_halfwidth") and \
            not config.design.adaptive_trials:
        return None  # an adaptive design's settings only
    if key in ("title", *text_defaults.STUDY_FACTS) and not getattr(config, key):
        return None  # not given: an empty string would not load again
    if setting.design_field:
        return design_value(design, setting.design_field)
    if section == "study" and key == "design":
        return config.design.name
    if section == "recruitment":
        return config.platform if key == "platform" else \
            config.return_urls.get(key.removesuffix("_url"))
    if key in ("min_window_width", "min_window_height"):
        return config.min_window[key.endswith("height")]
    value = getattr(config, key)
    return list(value) if isinstance(value, tuple) else value


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key} = {toml_value(item)}" for key, item in value.items()) + "}"
    if isinstance(value, str):
        return toml_string(value)
    return repr(value)


def toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, and DEL, which JSON writes as it is and
    TOML allows only escaped, is escaped too."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_text(text: str) -> str:
    if "\n" in text and "'''" not in text and not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text):
        return "'''\n" + text + "'''"
    return toml_string(text)
