"""A study is a file: parse, validate and write the TOML file a lab edits.

The file names a base design (``experiments.designs.DESIGNS``) and overrides what a lab
changes: sessions, blocks, practice, keys, timings, exclusion thresholds, who may take part,
and texts per language (see ``experiments/studies/arrow-of-time.toml``).  Every problem is a
:class:`Problem` that names the file, the line, the field, what was expected and what was
found; unknown keys are errors, so a typo is never silently ignored::

    study.toml:14: blocks.trials_per_block: expected a positive integer, got "ten"

:func:`load` returns a :class:`StudyConfig` (the :class:`~experiments.designs.Design` plus the
study-level settings) or raises :class:`StudyFileError` with every problem; :func:`to_toml`
(:mod:`experiments.study_format`, with the schema) writes a config back, and ``load`` of that
text gives the same config.  Reading is bounded in time and memory
(:mod:`experiments.study_scan`).
"""
from __future__ import annotations

import difflib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from experiments import texts as text_defaults
from experiments.designs import Design, get_design
from experiments.response_keys import reserved_key_warnings
from experiments.study_config import StudyConfig, estimate_session_minutes, study_texts
from experiments.study_format import (
    BROWSERS,
    DEFAULT_BROWSERS,
    LOOK_ALIKE_KEYS,
    MAX_TEXT_CHARS,
    MAX_TITLE_CHARS,
    MAX_TRIALS_PER_BLOCK,
    SCHEMA,
    WEBKIT_ONSET_ERROR,
    Setting,
    _show,
    check_value,
    title_problem,
    to_toml,
)
from experiments.study_scan import MAX_FILE_BYTES, scan

# What the configuration (experiments.study_config) and the schema (experiments.study_format)
# declare is named here too: one module to import.
__all__ = ["BROWSERS", "DEFAULT_BROWSERS", "MAX_FILE_BYTES", "MAX_TEXT_CHARS", "MAX_TITLE_CHARS",
           "SCHEMA", "Problem", "StudyConfig", "StudyFileError", "check", "check_value",
           "consent_warnings", "estimate_session_minutes", "load", "loads", "problem_at",
           "read_source", "study_texts", "title_problem", "to_toml"]


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.path}: {self.message}"


class StudyFileError(ValueError):
    """A study file with errors; ``problems`` lists every one of them."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(map(str, problems)))


# Problems reported of one file: the first ones say what to fix, and each costs a little work.
MAX_PROBLEMS = 50

# Settings a file may write in another form: a problem with the first is shown at the second.
_WRITTEN_AS: dict[tuple[str, ...], tuple[tuple[str, ...], str]] = {
    ("blocks", "clips_per_session"): (("blocks", "trials_per_block"),
                                      "blocks.trials_per_block × blocks.count")}


def problem_at(source: str, name: str, setting: str, message: str) -> Problem:
    """A problem found after the file was read (when the study is created, where its stimulus
    set can be seen) at the line of ``setting`` ("blocks.clips_per_session"), or of the
    setting the file wrote it as (``blocks.trials_per_block``)."""
    reader = _Reader(name, source, None)
    path = tuple(setting.split("."))
    written, how = _WRITTEN_AS.get(path, ((), ""))
    if written in reader.lines and path not in reader.lines:
        path, message = written, f"{message} ({how})"
    return Problem(name, reader.line(path), ".".join(path), message)


class _Reader:
    """Collects problems while a parsed file is checked against the schema."""

    def __init__(self, name: str, source: str, base_dir: Path | None):
        self.name, self.base_dir = name, base_dir
        self.scan = scan(source)
        self.lines = self.scan.lines
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.unshown = 0

    def line(self, path: tuple) -> int:
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)

    def error(self, path: tuple, message: str, warn: bool = False) -> None:
        found = self.warnings if warn else self.problems
        if len(found) >= MAX_PROBLEMS:
            self.unshown += 1
            return
        found.append(Problem(self.name, self.line(path), ".".join(path) or "(file)", message))

    def unknown(self, path: tuple, key: str, known) -> None:
        if len(self.problems) >= MAX_PROBLEMS:  # not shown: spare the search for a hint
            self.unshown += 1
            return
        close = difflib.get_close_matches(key, list(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        self.error(path + (key,), f"unknown key{hint}; expected one of {', '.join(sorted(known))}")


def loads(source: str, name: str = "study.toml", base_dir: Path | None = None) -> StudyConfig:
    """Parse and validate a study file's text; raises :class:`StudyFileError`."""
    config, problems, _ = check(source, name, base_dir)
    if problems:
        raise StudyFileError(problems)
    return config


def load(path: str | Path) -> StudyConfig:
    path = Path(path)
    return loads(read_source(path), path.name, path.parent)


def read_source(path: Path) -> str:
    """The text of the study file at ``path``, read no further than :data:`MAX_FILE_BYTES`;
    raises :class:`StudyFileError` for a larger file or one that is not UTF-8."""
    with open(path, "rb") as handle:
        raw = handle.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise StudyFileError([Problem(path.name, 1, "(file)", f"expected a study file of at "
                                                              f"most {MAX_FILE_BYTES // 1024} KiB, "
                                                              "got more")])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise StudyFileError([Problem(path.name, line, "(file)", f"expected UTF-8 text, got "
                                                                 f"byte 0x{raw[error.start]:02x}")])


def check(source: str, name: str = "study.toml", base_dir: Path | None = None):
    """``(config or None, problems, warnings)`` of a study file's text; its ``{file = ...}``
    texts are read in ``base_dir``, and are errors without one (an uploaded file's)."""
    reader = _Reader(name, source, base_dir)
    config = _validate(reader, source)
    if reader.unshown:
        reader.problems.append(Problem(name, 1, "(file)", f"and {reader.unshown} more "
                                                          "problem(s), shown once these are fixed"))
    return config, reader.problems, reader.warnings


def _parse(reader: _Reader, source: str) -> dict | None:
    """The file's tables; None after a problem (a limit it passes, text that is not TOML)."""
    found = reader.scan
    if found.refusal is not None:
        reader.problems.append(Problem(reader.name, *found.refusal))
        return None
    for path, number, first in found.twice:
        reader.problems.append(Problem(reader.name, number, ".".join(path),
                                       f"defined twice (first on line {first})"))
    try:
        return tomllib.loads(source)
    except tomllib.TOMLDecodeError as error:
        match = re.search(r"\(at line (\d+), column \d+\)", str(error))
        # tomllib says only "at end of document" of a string left open
        where = int(match.group(1)) if match else \
            found.open_string or max(1, len(source.splitlines()))
        if not reader.problems:
            reader.problems.append(Problem(reader.name, where, "(file)", f"not valid TOML: {error}"))
        return None


def _validate(reader: _Reader, source: str) -> StudyConfig | None:
    """The file's configuration, or None with its problems in ``reader``."""
    data = _parse(reader, source)
    if data is None:
        return None
    values = _check_sections(reader, data)
    text_overrides = _check_texts(reader, data.get("texts", {}), values.get(("study", "languages"),
                                                                           ("en",)))
    config = None if reader.problems else _build(reader, values, text_overrides)
    if config is not None and "webkit" in config.browsers:
        reader.error(("participants", "browsers"),
                     f"webkit (Safari) is allowed, but its measured onset error "
                     f"({WEBKIT_ONSET_ERROR} in WebKitGTK, bench/rt_engines.py) misses the goal "
                     f"(|mean| < 5 ms, SD < 3 ms); the default is {list(DEFAULT_BROWSERS)}",
                     warn=True)
    if config is not None and not _check_facts(reader, config):
        config = None
    # A key that a browser the study accepts keeps from the page can never be an answer
    # there (every presentation is lost and re-offered, then stored technical).
    reserved = reserved_key_warnings(config.design.response_keys, config.browsers) \
        if config is not None else []
    setting = ("responses", "keys") if ("responses", "keys") in values else \
        ("participants", "browsers")
    for warning in reserved:
        reader.error(setting, f"{warning} Choose other keys or leave that browser out of "
                              "participants.browsers")
    if reserved:
        config = None
    if config is not None and frozenset(config.design.response_keys) in LOOK_ALIKE_KEYS:
        reader.error(("responses", "keys"),
                     f"{' and '.join(k.upper() for k in config.design.response_keys)} look alike "
                     "on a keyboard legend and on the catch videos' keycaps; choose keys that "
                     "cannot be mistaken for each other", warn=True)
    return config


# What participants miss in a consent without each fact (a consent form should say them all).
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


def _check_facts(reader: _Reader, config: StudyConfig) -> bool:
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


def _check_sections(reader: _Reader, data: dict) -> dict[tuple, object]:
    values: dict[tuple, object] = {}
    for section, value in data.items():
        if section == "texts":
            continue
        if section not in SCHEMA:
            reader.unknown((), section, [*SCHEMA, "texts"])
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
    if ("blocks", "trials_per_block") in values and ("blocks", "clips_per_session") in values:
        reader.error(("blocks", "trials_per_block"),
                     "collides with blocks.clips_per_session: give one of them")
    return values


def _check_texts(reader: _Reader, texts, languages) -> dict[str, dict[str, str]]:
    path = ("texts",)
    if not isinstance(texts, dict):
        reader.error(path, f"expected a table of languages, got {_show(texts)}")
        return {}
    known = text_defaults.text_keys()
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
            text = _text_value(reader, where + (key,), value)
            if text is None:
                continue
            allowed = text_defaults.allowed_placeholders(key)
            for extra in sorted(text_defaults.placeholders(text) - allowed):
                reader.error(where + (key,), f"unknown placeholder {{{extra}}}; "
                                             f"expected {sorted(allowed) or 'none'}")
            found[language][key] = text
    for language in languages:
        shipped = set(text_defaults.defaults(language)) | set(found.get(language, {}))
        missing = [key for key in known if key not in shipped]
        if missing:
            more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
            reader.error(path + (language,), f"{len(missing)} text(s) missing, shown in English: "
                                             f"{', '.join(missing[:8])}{more}", warn=True)
    return found


def _text_value(reader: _Reader, path: tuple, value) -> str | None:
    if isinstance(value, dict) and set(value) == {"file"} and isinstance(value["file"], str):
        value = _text_file(reader, path, value["file"])
    elif not isinstance(value, str):
        reader.error(path, f'expected Markdown text or {{file = "NAME.md"}}, got {_show(value)}')
        return None
    if value is not None and len(value) > MAX_TEXT_CHARS:
        reader.error(path, f"expected Markdown of at most {MAX_TEXT_CHARS} characters, got "
                           f"{len(value)}")
        return None
    return value


def _text_file(reader: _Reader, path: tuple, name: str) -> str | None:
    """The text of a ``{file = NAME}`` beside the study file: only in its folder (links
    resolved), only a regular file, read no further than a text may be long."""
    if reader.base_dir is None:
        # Without the file's folder (an upload) a path would name a file on the server.
        reader.error(path, "expected the Markdown inline (a {file = ...} text cannot be "
                           "read without the study file's folder, as in an upload), "
                           f"got {_show({'file': name})}")
        return None
    folder = reader.base_dir.resolve()
    target = (folder / name).resolve()
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


def _build(reader: _Reader, values: dict, text_overrides: dict) -> StudyConfig | None:
    base = get_design(values[("study", "design")])
    if ("blocks", "repeats_per_direction") in values and not base.included_splits:
        reader.error(("blocks", "repeats_per_direction"),
                     f"only for a sweep design (one with included_splits, such as tra-sweep); "
                     f"{base.name} shows each clip once per session")
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
    if not _check_design(reader, design):
        return None
    study = {key: values[(section, key)] for section, key in values
             if section in ("study", "participants") and not SCHEMA[section][key].design_field}
    window = (study.pop("min_window_width", 800), study.pop("min_window_height", 600))
    study.pop("design", None)
    study.pop("stimulus_set", None)
    for key in ("languages", "browsers", "devices"):
        if key in study:
            study[key] = tuple(study[key])
    return StudyConfig(design=design, stimulus_set=values[("study", "stimulus_set")],
                       min_window=window, texts=text_overrides, **study)


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


def _check_design(reader: _Reader, design: Design) -> bool:
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
    gate, rule = design.practice.min_accuracy, design.exclusions.min_practice_accuracy
    if rule > gate:
        reader.error(("exclusions", "min_practice_accuracy"),
                     f"expected at most practice.pass_accuracy ({gate}): a participant the "
                     f"practice gate lets through must not be excluded by it, got {rule}")
        ok = False
    return ok
