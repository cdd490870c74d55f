"""Language codes and what CLDR (through Babel) knows of each language: whether a code names
one, its plural categories, the plural form a number takes, its writing direction.

A study's languages are BCP 47 tags (``ja``, ``pt-BR``, ``zh-Hant``) that CLDR has data for;
a country code written for a language (``jp``, ``cn``, ``se``) is the usual mistake, and is
refused with the language it was likely meant for.
"""
from __future__ import annotations

import difflib
import re
from functools import lru_cache

from babel import Locale, UnknownLocaleError, localedata
from babel.languages import get_official_languages
from babel.lists import format_list

# language[-Script][-REGION]: the tags a study may use (BCP 47's common subset, CLDR's data).
TAG = re.compile(r"^[a-z]{2,3}(-[A-Z][a-z]{3})?(-([A-Z]{2}|[0-9]{3}))?$")
PLURAL_CATEGORIES = ("zero", "one", "two", "few", "many", "other")


@lru_cache(maxsize=256)
def _locale(tag: str) -> Locale | None:
    try:
        return Locale.parse(tag, sep="-")
    except (UnknownLocaleError, ValueError):
        return None


def problem(tag: str) -> str | None:
    """None when ``tag`` names a language CLDR knows, else why not with the likely code."""
    if not isinstance(tag, str) or not TAG.match(tag):
        return (f"expected a language code such as \"ja\" or \"pt-BR\" (BCP 47), got "
                f"{tag!r}{_hint(str(tag))}")
    locale = _locale(tag)
    if locale is None:
        return f"unknown language code {tag!r}{_hint(tag)}"
    if locale.language != tag.split("-")[0]:  # a retired code Babel maps on ("iw": he)
        return f"outdated language code {tag!r} (did you mean {locale.language!r}?)"
    return None


def _hint(tag: str) -> str:
    primary = tag.split("-")[0].split("_")[0].lower()
    if _locale(primary) is not None:
        return f" (did you mean {primary!r}?)" if primary != tag else ""
    # A country's code written for its language (ISO 3166 is not ISO 639): jp, eg, ir.
    spoken = list(dict.fromkeys(code.split("_")[0] for code in
                                get_official_languages(primary.upper(), de_facto=True)))
    if spoken:
        return f" (did you mean {' or '.join(map(repr, spoken[:2]))}?)"
    close = difflib.get_close_matches(primary, _languages(), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


@lru_cache(maxsize=1)
def _languages() -> list[str]:
    return sorted({name.split("_")[0] for name in localedata.locale_identifiers()})


def plural_categories(tag: str) -> frozenset[str]:
    """The CLDR plural categories of ``tag``'s language (``other`` always; ``ja``: only it)."""
    locale = _locale(tag)
    return frozenset({"other", *(locale.plural_form.tags if locale else ())})


def plural_category(tag: str, number: float) -> str:
    """The category ``number`` takes in ``tag``'s language ("one" for 1 in English)."""
    locale = _locale(tag)
    return locale.plural_form(number) if locale else ("one" if number == 1 else "other")


def or_list(items: list[str], tag: str) -> str:
    """``items`` as one choice in ``tag``'s language, by CLDR's "or" list pattern ("Chrome,
    Edge oder Firefox"; Arabic joins with أو); joined with commas where CLDR has no locale."""
    locale = _locale(tag)
    return format_list(items, style="or", locale=locale) if locale else ", ".join(items)


def direction(tag: str) -> str:
    """``rtl`` or ``ltr``: how ``tag``'s script runs (Arabic, Hebrew, Persian: rtl)."""
    locale = _locale(tag)
    return "rtl" if locale is not None and locale.text_direction == "rtl" else "ltr"
