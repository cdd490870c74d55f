"""The checks of a parsed study file against the schema, across settings and of its texts.

Each takes the reader of :mod:`experiments.study_file`, which collects problems with their
lines (``reader.error``, ``reader.unknown``) and knows the study file's folder
(``reader.base_dir``, None for an upload).
"""
from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING

from experiments import texts as text_defaults
from experiments import trial_types
from experiments.designs import Design, get_design
from experiments.platforms import PLATFORMS, Platform, url_key, url_problem
from experiments.study_config import StudyConfig
from experiments.study_format import SCHEMA, _show, check_value
from experiments.study_settings import MAX_TEXT_CHARS, MAX_TRIALS_PER_BLOCK, Setting, default

if TYPE_CHECKING:
    from experiments.study_file import Reader

# What participants miss in a consent without each fact (a consent form should say them all).
# Below this many hours, "the next session on another day" can be the same evening.
MIN_DAY_GAP_HOURS = 12
_FACT_NEEDS = {"contact": "whom to ask about the study",
               "ethics": "which ethics committee approved the study",
               "data_retention": "how long their data are kept and who may see them"}


def consent_warnings(config: StudyConfig) -> list[tuple[str, str]]:
    """``(field, message)`` for each lab fact a language's consent would need and the study
    does not give (an example value of a shipped study is flagged too)."""
    found = []
    for fact in text_defaults.STUDY_FACTS:
        value = getattr(config, fact)
        languages = [lang for lang in config.languages
                     if "{%s}" % fact in config.resolved_texts(lang).get("consent", "")]
        missing = [lang for lang in languages if not config.facts(lang)[fact].strip()]
        if missing:
            found.append((f"study.{fact}", f"not given: the consent ({', '.join(missing)}) does not "
                                           f"tell participants {_FACT_NEEDS[fact]}"))
        elif languages and "EXAMPLE" in json.dumps(value):
            found.append((f"study.{fact}", "an example value: give the lab's own before "
                                           "participants read the consent"))
    return found


def check_facts(reader: Reader, config: StudyConfig) -> bool:
    """Errors for a fact in a language the study lacks (False after one), then warnings."""
    ok = True
    for fact in text_defaults.STUDY_FACTS:
        value = getattr(config, fact)
        extra = [lang for lang in value if lang not in config.languages] \
            if isinstance(value, dict) else []
        if extra:
            reader.error(("study", fact, extra[0]), f"expected a language of study.languages "
                                                    f"{list(config.languages)}, got {extra[0]!r}")
            ok = False
    for where, message in consent_warnings(config) if ok else ():
        reader.error(tuple(where.split(".")), message, warn=True)
    return ok


# Texts of en.toml a design shows only when it has what they are about: (keys, or prefixes
# ending in "_"), whether the design shows them, and why not.
_CONDITIONAL_TEXTS = (
    (("practice_", "instructions_practice"), lambda d: d.practice.n_trials > 0,
     "the design has no practice trials (practice.n_trials = 0)"),
    (("instructions_attention",), lambda d: d.catch_per_block > 0,
     "the design has no catch trials (blocks.catch_per_block = 0)"),
    (("consent_sessions", "session_end", "session_end_title", "session_end_button",
      "next_session", "next_session_", "calendar_", "wait", "wait_title"),
     lambda d: d.sessions > 1,
     "the design has one session"),
)


def unused_text_reason(key: str, design: Design) -> str | None:
    """Why ``design`` never shows text ``key`` (a trial type's own text where no trial is
    presented as that type, a text of practice, catch trials or later sessions it lacks), or
    None when it may show it."""
    base = text_defaults.plural_base(key)
    shown = {trial_types.presented_type(design.task)}
    if design.catch_per_block > 0:
        shown.add(trial_types.presented_type(trial_types.ATTENTION_CHECK))
    for name, module in trial_types.TRIAL_TYPES.items():
        if name not in shown and base in text_defaults.type_texts(module).get("en", {}):
            return (f"a text of {name} trials ({module.TITLE}), and design {design.name} "
                    f"presents only {', '.join(sorted(shown))} trials")
    for keys, shows, why in _CONDITIONAL_TEXTS:
        if not shows(design) and any(base == k or (k.endswith("_") and base.startswith(k))
                                     for k in keys):
            return why
    return None


def check_text_coverage(reader: Reader, config: StudyConfig) -> None:
    """Warnings for each language's texts the study shows but neither ships nor gives (shown
    in English), and, at its line, for each text of the file that it never shows."""
    for language in config.languages:
        shipped = set(text_defaults.defaults(language)) | set(config.texts.get(language, {}))
        missing = [key for key in text_defaults.language_keys(language)
                   if key not in shipped and unused_text_reason(key, config.design) is None]
        if missing:
            more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
            reader.error(("texts", language), f"{len(missing)} text(s) missing, shown in "
                                              f"English: {', '.join(missing[:8])}{more}",
                         warn=True)
    for language, keys in config.texts.items():
        for key in keys:
            why = unused_text_reason(key, config.design) or \
                text_defaults.absent_plural_form(key, language)
            if why:
                reader.error(("texts", language, key), f"never shown to participants: {why}; "
                                                       "leave it out or check the design",
                             warn=True)


def check_sections(reader: Reader, data: dict) -> dict[tuple, object]:
    values: dict[tuple, object] = {}
    for section, value in data.items():
        if section in ("texts", "annotations"):
            continue
        if section not in SCHEMA:
            reader.unknown((), section, [*SCHEMA, "texts", "annotations"])
            continue
        if not isinstance(value, dict):
            reader.error((section,), f"expected a table [{section}], got {_show(value)}")
            continue
        for key, item in value.items():
            setting = SCHEMA[section].get(key)
            if setting is None:
                reader.unknown((section,), key, SCHEMA[section])
                continue
            problem = check_value(setting, item)
            if problem:
                reader.error((section, key), problem)
            else:
                values[(section, key)] = item
    for section, settings in SCHEMA.items():
        for key, setting in settings.items():
            if setting.required and (section, key) not in values and \
                    key not in data.get(section, {}):
                reader.error((section, key), f"required: expected {setting.expected}, got nothing")
    low, high = (values.get(("participants", f"{end}_refresh_hz")) for end in ("min", "max"))
    if isinstance(low, int) and isinstance(high, int) and low > high:
        reader.error(("participants", "max_refresh_hz"), f"expected at least "
                     f"participants.min_refresh_hz ({low}), got {high}")
    if ("blocks", "trials_per_block") in values and ("blocks", "clips_per_session") in values:
        reader.error(("blocks", "trials_per_block"),
                     "collides with blocks.clips_per_session: give one of them")
    return values


def check_texts(reader: Reader, texts, languages) -> dict[str, dict[str, str]]:
    path = ("texts",)
    if not isinstance(texts, dict):
        reader.error(path, f"expected a table of languages, got {_show(texts)}")
        return {}
    known = text_defaults.allowed_keys()
    found: dict[str, dict[str, str]] = {}
    for language, keys in texts.items():
        where = path + (language,)
        if language not in languages:
            reader.error(where, f"expected a language of study.languages {list(languages)}, "
                                f"got {language!r}")
            continue
        if not isinstance(keys, dict):
            reader.error(where, f"expected a table of texts, got {_show(keys)}")
            continue
        found[language] = {}
        for key, value in keys.items():
            if key not in known:
                reader.unknown(where, key, known)
                continue
            text = text_value(reader, where + (key,), value)
            if text is None:
                continue
            allowed = text_defaults.allowed_placeholders(key)
            for extra in sorted(text_defaults.placeholders(text) - allowed):
                reader.error(where + (key,), f"unknown placeholder {{{extra}}}; "
                                             f"expected {sorted(allowed) or 'none'}")
            # A placeholder is filled with up to a whole text (a lab fact, the screen-out
            # reasons): written n times, a 39 KB file filled a 38 MB consent on every visit.
            for name, count in sorted(Counter(text_defaults.PLACEHOLDER.findall(text)).items()):
                if count > 1:
                    reader.error(where + (key,), f"expected each placeholder at most once, got "
                                                 f"{{{name}}} {count} times")
            found[language][key] = text
    return found


def text_value(reader: Reader, path: tuple, value) -> str | None:
    if isinstance(value, dict) and set(value) == {"file"} and isinstance(value["file"], str):
        value = text_file(reader, path, value["file"])
    elif not isinstance(value, str):
        reader.error(path, f'expected Markdown text or {{file = "NAME.md"}}, got {_show(value)}')
        return None
    if value is not None and len(value) > MAX_TEXT_CHARS:
        reader.error(path, f"expected Markdown of at most {MAX_TEXT_CHARS} characters, got "
                           f"{len(value)}")
        return None
    return value


def text_file(reader: Reader, path: tuple, name: str) -> str | None:
    """The text of a ``{file = NAME}`` beside the study file: only in its folder (links
    resolved), only a regular file, read no further than a text may be long."""
    if reader.base_dir is None:
        # Without the file's folder (an upload) a path would name a file on the server.
        reader.error(path, "expected the Markdown inline (a {file = ...} text cannot be "
                           "read without the study file's folder, as in an upload), "
                           f"got {_show({'file': name})}")
        return None
    folder = reader.base_dir.resolve()
    try:
        target = (folder / name).resolve()
    except (RuntimeError, ValueError) as error:  # a link loop; a NUL character in the name
        reader.error(path, f"expected a readable Markdown file, got {name!r} ({error})")
        return None
    if not target.is_relative_to(folder):
        reader.error(path, f"expected a file in the study file's folder ({folder}), got "
                           f"{name!r}, which is {target}")
        return None
    try:
        if not target.is_file():
            raise OSError("not a regular file" if target.exists() else "no such file")
        with open(target, "rb") as handle:
            raw = handle.read(4 * MAX_TEXT_CHARS + 1)  # UTF-8: at most 4 bytes a character
        return raw.decode("utf-8")
    except OSError as error:
        why = error.strerror or error
    except UnicodeDecodeError:
        why = "not UTF-8 text"
    reader.error(path, f"expected a readable Markdown file, got {name!r} ({why})")
    return None


def build(reader: Reader, values: dict, text_overrides: dict) -> StudyConfig | None:
    base = get_design(values[("study", "design")])
    if ("blocks", "repeats_per_direction") in values and (not base.included_splits
                                                          or base.adaptive_trials):
        reader.error(("blocks", "repeats_per_direction"),
                     f"only for a fixed sweep design (one with included_splits, such as "
                     f"tra-sweep); {base.name} " + ("chooses each level adaptively"
                                                    if base.adaptive_trials else
                                                    "shows each clip once per session"))
        return None
    for key in ("adaptive_trials", "adaptive_stop_halfwidth"):
        if ("blocks", key) in values and not base.adaptive_trials:
            reader.error(("blocks", key), f"only for an adaptive design (such as "
                                          f"tra-adaptive); {base.name} fixes its levels in "
                                          "the schedule")
            return None
    data = base.to_dict()
    for (section, key), value in values.items():
        setting: Setting = SCHEMA[section][key]
        if setting.design_field:
            target = data
            *parents, last = setting.design_field.split(".")
            for parent in parents:
                target = target[parent]
            target[last] = list(value) if isinstance(value, list) else value
    if ("blocks", "trials_per_block") in values:
        data["max_clips"] = values[("blocks", "trials_per_block")] * data["main_blocks"]
    practice_gate = ("exclusions", "min_practice_accuracy")
    if practice_gate not in values:
        # One threshold: the exclusion rule follows the practice gate unless the file sets it.
        data["exclusions"]["min_practice_accuracy"] = data["practice"]["min_accuracy"]
    try:
        design = Design.from_dict(data)
    except (TypeError, ValueError) as error:
        culprit = _culprit(base, values)
        reader.error(culprit, str(error) if culprit != ("study", "design")
                     else f"the settings do not make a valid design: {error}")
        return None
    if not check_design(reader, design):
        return None
    study = {key: values[(section, key)] for section, key in values
             if section in ("study", "participants") and not SCHEMA[section][key].design_field}
    window = (study.pop("min_window_width", default("participants.min_window_width")),
              study.pop("min_window_height", default("participants.min_window_height")))
    study.pop("design", None)
    study.pop("stimulus_set", None)
    for key in ("languages", "browsers", "devices"):
        if key in study:
            study[key] = tuple(study[key])
    platform = values.get(("recruitment", "platform"), default("recruitment.platform"))
    urls = {key.removesuffix("_url"): value for (section, key), value in values.items()
            if section == "recruitment" and key != "platform"}
    if not check_recruitment(reader, PLATFORMS[platform], urls):
        return None
    return StudyConfig(design=design, stimulus_set=values[("study", "stimulus_set")],
                       min_window=window, texts=text_overrides, platform=platform,
                       return_urls=urls, **study)


def check_recruitment(reader: Reader, platform: Platform, urls: dict[str, str]) -> bool:
    """Each return URL's scheme and placeholders, and the URLs the platform needs; False after
    an error."""
    ok = True
    for outcome, url in urls.items():
        problem = url_problem(url, platform, outcome)
        if problem:
            reader.error(("recruitment", url_key(outcome)), problem)
            ok = False
    for outcome in platform.required:
        if outcome not in urls:
            reader.error(("recruitment", "platform"),
                         f"expected recruitment.{url_key(outcome)} too: {platform.title}")
            ok = False
    return ok


def _culprit(base: Design, values: dict) -> tuple:
    """The first setting that alone makes ``base`` invalid (``study.design`` if none does)."""
    for (section, key), value in values.items():
        design_field = SCHEMA[section][key].design_field
        if not design_field or "." in design_field:
            continue
        try:
            Design.from_dict({**base.to_dict(), design_field: value})
        except (TypeError, ValueError):
            return (section, key)
    return ("study", "design")


def check_design(reader: Reader, design: Design) -> bool:
    """Checks across settings that the design itself cannot make; False after an error."""
    ok = True
    per_block = design.max_clips // design.main_blocks if design.max_clips else None
    if per_block is not None and design.catch_per_block >= per_block:
        reader.error(("blocks", "catch_per_block"),
                     f"expected fewer catch trials than trials per block ({per_block}), "
                     f"got {design.catch_per_block}")
        ok = False
    elif design.max_clips and per_block is not None and per_block > MAX_TRIALS_PER_BLOCK:
        reader.error(("blocks", "clips_per_session"),
                     f"expected at most {MAX_TRIALS_PER_BLOCK} trials per block, got "
                     f"{design.max_clips} over {design.main_blocks} block(s)")
        ok = False
    if design.sessions > 1 and design.session_gap_hours < MIN_DAY_GAP_HOURS:
        reader.error(("sessions", "gap_hours"),
                     f"the {design.sessions} sessions are meant for different days, but each "
                     f"opens {design.session_gap_hours:g} hour(s) after the last, so a "
                     f"participant can take them back to back; expected at least "
                     f"{MIN_DAY_GAP_HOURS} (the shipped two-day design waits 20)", warn=True)
    gate, rule = design.practice.min_accuracy, design.exclusions.min_practice_accuracy
    if rule > gate:
        reader.error(("exclusions", "min_practice_accuracy"),
                     f"expected at most practice.pass_accuracy ({gate}): a participant the "
                     f"practice gate lets through must not be excluded by it, got {rule}")
        ok = False
    return ok
