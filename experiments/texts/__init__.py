"""Participant-facing texts: the shipped defaults per language, and safe rendering.

Every string a participant reads has a stable key: ``en.toml`` lists them all, with the
file each came from, but for a trial type's own, which live with the type in its texts file
(``experiments/trial_types/aot.toml`` beside ``aot.py``, a table per shipped language) and
join the shipped texts while the type is registered.  A study may override any key for any
language; a language without a key falls back to English.  Texts are Markdown with
``{placeholder}`` fields that the server fills (``{duration_minutes}``, ``{n}``, ...): the
placeholders a key may use are those of its English default, so a typo such as
``{duraton_minutes}`` is caught when a study is validated.  A key whose English default is
written over several lines (a TOML multi-line string) is Markdown paragraphs; any other is
one line (a title, a button, a sentence) and renders without a surrounding ``<p>``.

A few placeholders are filled when a study is stored, not when a text is shown
(:func:`for_study`): ``{task}`` takes the paragraph of the design's task (``consent_task_aot``
for ``{task}`` in ``consent``: a task type's texts file gives ``KEY_task_TASK`` for each such
KEY), and ``{contact}``, ``{ethics}`` and ``{data_retention}`` take the paragraph of the
lab's own fact (``consent_contact`` with the study file's ``study.contact``); a fact a study
does not give leaves no paragraph.

Rendering happens on the server: markdown-it-py turns Markdown (and any inline HTML) into
HTML, then nh3 (the Ammonia sanitiser) keeps only harmless tags and attributes: no scripts,
no event handlers, no ``javascript:`` links.  Placeholder values are escaped and filled in
after sanitising, so neither a text nor a value can smuggle markup through the other; a value
that lands inside a tag (an ``href``) is filled only if it is an http(s) URL, since escaping
alone would let ``javascript:`` through where the sanitiser can no longer see it.
"""
from __future__ import annotations

import html
import re
import tomllib
from collections.abc import Mapping
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path

import nh3
from markdown_it import MarkdownIt

from experiments import languages
from experiments.texts.cjk import join_cjk_soft_breaks
from experiments.trial_types import TRIAL_TYPES, TrialType

DEFAULT_LANGUAGE = "en"
SHIPPED_LANGUAGES = ("en", "de")
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_TAGS = {"p", "br", "hr", "strong", "em", "b", "i", "u", "code", "pre", "blockquote", "ul", "ol",
         "li", "a", "h1", "h2", "h3", "h4", "kbd", "small", "sup", "sub"}
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
_SCHEMES = {"http", "https", "mailto"}
# What a placeholder inside a tag's attribute may be filled with.
_WEB_URL = re.compile(r"https?://[^\s\x00-\x1f]+", re.IGNORECASE)
_MARKDOWN = MarkdownIt("commonmark", {"html": True, "linkify": False})
_MARKDOWN.core.ruler.push("cjk_soft_breaks", join_cjk_soft_breaks)
# The lab's facts a consent should state (study file [study] settings of these names).
STUDY_FACTS = ("contact", "ethics", "data_retention")
STUDY_PLACEHOLDERS = frozenset({"task", *STUDY_FACTS})


def defaults(language: str) -> dict[str, str]:
    """The shipped texts of ``language``: its file here and the registered trial types' own
    (an empty dict for a language not shipped).  Read from the registry each time, so a type
    registered later brings its texts."""
    return _defaults(language, tuple((name, _module_file(module))
                                     for name, module in TRIAL_TYPES.items()))


@lru_cache(maxsize=8)
def _defaults(language: str, types: tuple[tuple[str, str], ...]) -> dict[str, str]:
    if language not in SHIPPED_LANGUAGES:
        return {}
    source = resources.files(__package__).joinpath(f"{language}.toml").read_text("utf-8")
    texts = tomllib.loads(source)
    for name, module_file in types:
        own = _texts_file(module_file).get(language, {})
        if clash := sorted(set(own) & set(texts)):
            raise ValueError(f"trial type {name!r}: its texts repeat the keys {clash}")
        texts.update(own)
    return texts


def type_texts(module: TrialType) -> dict[str, dict[str, str]]:
    """A trial type's own texts by language: the TOML file beside its module (``aot.py``:
    ``aot.toml``, a table per language), or none where it has no such file."""
    return _texts_file(_module_file(module))


def _module_file(module: TrialType) -> str:
    return getattr(module, "__file__", None) or ""


@cache
def _texts_file(module_file: str) -> dict[str, dict[str, str]]:
    path = Path(module_file).with_suffix(".toml")
    return tomllib.loads(path.read_text("utf-8")) if module_file and path.is_file() else {}


def is_block(key: str) -> bool:
    """Whether ``key``'s texts are paragraphs: its English default spans several lines."""
    return "\n" in defaults(DEFAULT_LANGUAGE).get(plural_base(key), "")


def text_keys() -> tuple[str, ...]:
    """Every text key, in the order of ``en.toml`` and then of the trial types' own."""
    return tuple(defaults(DEFAULT_LANGUAGE))


# Plural forms: a counted text KEY ("other", the form any language has) gives KEY_one in
# English, and a language gives KEY_CATEGORY for each CLDR category it has (ja: none; ar:
# zero, one, two, few, many).  The count is the first number among the values filled in.
def counted_keys() -> tuple[str, ...]:
    """The texts with plural forms: those whose English gives KEY_one."""
    english = defaults(DEFAULT_LANGUAGE)
    return tuple(key for key in english if f"{key}_one" in english)


def plural_base(key: str) -> str:
    """The counted text ``key`` is a plural form of, else ``key`` itself."""
    base, _, category = key.rpartition("_")
    counted = category in languages.PLURAL_CATEGORIES and f"{base}_one" in defaults(DEFAULT_LANGUAGE)
    return base if counted else key


def absent_plural_form(key: str, language: str) -> str | None:
    """Why ``language`` never shows plural form ``key`` (``fa`` has no ``_two``), or None."""
    base = plural_base(key)
    category, categories = key[len(base) + 1:], languages.plural_categories(language)
    if base == key or category in categories:
        return None
    return (f"{language} has no {category!r} plural form (CLDR gives it "
            f"{', '.join(c for c in languages.PLURAL_CATEGORIES if c in categories)})")


def language_keys(language: str) -> tuple[str, ...]:
    """The keys a complete translation into ``language`` gives: every text, with the plural
    forms of that language's categories and no others."""
    categories = languages.plural_categories(language) - {"other"}
    forms = [f"{key}_{category}" for key in counted_keys() for category in
             languages.PLURAL_CATEGORIES if category in categories]
    return tuple(dict.fromkeys([key for key in text_keys() if plural_base(key) == key] + forms))


def allowed_keys() -> tuple[str, ...]:
    """Every key a study may give in some language: the texts and every plural form."""
    return tuple(dict.fromkeys([*text_keys(), *(
        f"{key}_{category}" for key in counted_keys()
        for category in languages.PLURAL_CATEGORIES if category != "other")]))


def plural_key(texts: Mapping[str, str], key: str, language: str,
               values: Mapping[str, object]) -> str:
    """The form of ``key`` that the first number of ``values`` its text fills asks for in
    ``language`` (``key`` itself for "other", or where the text has no such form)."""
    for name in PLACEHOLDER.findall(texts.get(key, "")):
        value = values.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            form = f"{key}_{languages.plural_category(language, value)}"
            return form if form in texts else key
    return key


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


def allowed_placeholders(key: str) -> set[str]:
    """The fields the server fills in ``key``: those of its English default (a plural form:
    its counted text's)."""
    return placeholders(defaults(DEFAULT_LANGUAGE).get(plural_base(key), ""))


def resolve(overrides: Mapping[str, Mapping[str, str]], language: str) -> dict[str, str]:
    """Every key's text in ``language``: the study's text, else the shipped text of that
    language, else the study's English, else the shipped English.  A counted text given in
    ``language`` keeps only that language's plural forms: its "other" form reads better
    than an English "one"."""
    english = {**defaults(DEFAULT_LANGUAGE), **overrides.get(DEFAULT_LANGUAGE, {})}
    own = {**defaults(language), **overrides.get(language, {})}
    texts = {**english, **own}
    for key in counted_keys():
        if key in own and language != DEFAULT_LANGUAGE:
            for category in languages.PLURAL_CATEGORIES:
                if f"{key}_{category}" not in own:
                    texts.pop(f"{key}_{category}", None)
    return texts


def for_study(overrides: Mapping[str, Mapping[str, str]], language: str, task: str,
              facts: Mapping[str, str]) -> dict[str, str]:
    """The study's own texts of ``language`` plus every text whose ``{task}`` or lab facts
    (:data:`STUDY_FACTS`) this fills: ``{task}`` in KEY with KEY_task_TASK, a fact in KEY
    with KEY_FACT around the fact's value (the value alone where no such text exists), a
    fact missing from ``facts`` with nothing."""
    texts = resolve(overrides, language)
    filled = dict(overrides.get(language, {}))
    for key, text in texts.items():
        frame = "_task_" in key or key.endswith(tuple(f"_{fact}" for fact in STUDY_FACTS))
        if frame or not placeholders(text) & STUDY_PLACEHOLDERS:
            continue  # a paragraph filled into others, never shown on its own

        def fill(match: re.Match, key: str = key) -> str:
            name = match.group(1)
            if name == "task":
                return texts.get(f"{key}_task_{task}", "")
            if name not in STUDY_FACTS:
                return match.group(0)
            value = (facts.get(name) or "").strip()
            frame = texts.get(f"{key}_{name}", "{%s}" % name)
            return frame.replace("{%s}" % name, value) if value else ""

        filled[key] = PLACEHOLDER.sub(fill, text)
    return filled


def sanitise(markup: str) -> str:
    """Keep only harmless HTML: no script or style, no ``on*`` handlers, http(s)/mailto links."""
    return nh3.clean(markup, tags=_TAGS, attributes=_ATTRIBUTES, url_schemes=_SCHEMES,
                     link_rel="noopener noreferrer")


# Markdown costs 5-15 us a character (a study file's 256 KiB of "![" took 3.8 s), and every
# participant's entry, session and consent renders all texts of a language: each text is
# rendered once per worker.  512 texts of at most 20,000 characters and their HTML: ~50 MB at
# worst, the shipped texts shared by every study.
@lru_cache(maxsize=512)
def _sanitised(block: bool, text: str) -> str:
    markup = _MARKDOWN.render(text) if block else _MARKDOWN.renderInline(text.strip())
    return sanitise(markup).strip()


def render(key: str, text: str, values: Mapping[str, object] | None = None) -> str:
    """The sanitised HTML of one text, with its placeholders filled from ``values`` (escaped;
    a placeholder without a value stays as written)."""
    safe = _sanitised(is_block(key), text)
    values = values or {}

    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name not in values:
            return match.group(0)
        value = str(values[name])
        in_tag = safe.rfind("<", 0, match.start()) > safe.rfind(">", 0, match.start())
        if in_tag and not _WEB_URL.fullmatch(value):
            return ""
        return html.escape(value)

    return PLACEHOLDER.sub(fill, safe)


def render_all(overrides: Mapping[str, Mapping[str, str]], language: str,
               values: Mapping[str, object] | None = None) -> dict[str, str]:
    """Every text of ``language`` rendered to sanitised HTML, for the participant runner.

    Study placeholders that :func:`for_study` did not fill (a study stored before it did)
    are left out rather than shown as ``{contact}``."""
    values = {**dict.fromkeys(STUDY_PLACEHOLDERS, ""), **(values or {})}
    texts = resolve(overrides, language)
    # A count the server fills picks its plural form here; the browser picks those it fills.
    texts.update({key: texts[plural_key(texts, key, language, values)] for key in counted_keys()})
    return {key: render(key, text, values).replace("<p></p>\n", "")
            for key, text in texts.items()}
