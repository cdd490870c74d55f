"""A study is a file: parse, validate and write the TOML file a lab edits.

The file names a base design (``experiments.designs.DESIGNS``) and overrides what a lab
changes: sessions, blocks, practice, keys, timings, exclusion thresholds, who may take part,
and texts per language (see ``experiments/studies/arrow-of-time.toml``).  Every problem is a
:class:`Problem` that names the file, the line, the field, what was expected and what was
found; unknown keys are errors, so a typo is never silently ignored::

    study.toml:14: blocks.trials_per_block: expected a positive integer, got "ten"

:func:`load` returns a :class:`StudyConfig` (the :class:`~experiments.designs.Design` plus the
study-level settings) or raises :class:`StudyFileError` with every problem; :func:`to_toml`
(:mod:`experiments.study_format`; the settings are declared in
:mod:`experiments.study_settings`) writes a config back, and ``load`` of that
text gives the same config.  Reading is bounded in time and memory
(:mod:`experiments.study_scan`).
"""
from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from experiments import study_annotations, study_checks
from experiments.response_keys import reserved_key_warnings
from experiments.study_checks import consent_warnings
from experiments.study_config import StudyConfig, estimate_session_minutes, study_texts
from experiments.study_format import (
    LOOK_ALIKE_KEYS,
    SCHEMA,
    WEBKIT_ONSET_ERROR,
    check_value,
    title_problem,
    to_toml,
    visible,
)
from experiments.study_scan import MAX_FILE_BYTES, scan
from experiments.study_settings import BROWSERS, DEFAULT_BROWSERS, MAX_TEXT_CHARS, MAX_TITLE_CHARS

# What the configuration (experiments.study_config), the settings (experiments.study_settings)
# and their checks (experiments.study_format) declare is named here too: one module to import.
__all__ = ["BROWSERS", "DEFAULT_BROWSERS", "MAX_FILE_BYTES", "MAX_TEXT_CHARS", "MAX_TITLE_CHARS",
           "SCHEMA", "Problem", "Reader", "StudyConfig", "StudyFileError", "check",
           "check_value", "consent_warnings", "estimate_session_minutes", "load", "loads",
           "parse_tables", "problem_at", "read_source", "study_texts", "title_problem",
           "to_toml"]


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
    reader = Reader(name, source, None)
    path = tuple(setting.split("."))
    written, how = _WRITTEN_AS.get(path, ((), ""))
    if written in reader.lines and path not in reader.lines:
        path, message = written, f"{message} ({how})"
    return Problem(name, reader.line(path), ".".join(path), message)


class Reader:
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
        found.append(Problem(self.name, self.line(path), visible(".".join(path)) or "(file)",
                             message))

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


def read_source(path: Path, limit: int = MAX_FILE_BYTES, kind: str = "study file") -> str:
    """The text of the ``kind`` of file at ``path`` (a study file, a run file), read no
    further than ``limit`` bytes; raises :class:`StudyFileError` for a file that cannot be
    read, is larger or is not UTF-8."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as error:
        raise StudyFileError([Problem(path.name, 1, "(file)", f"cannot be read: "
                                                            f"{error.strerror or error}")])
    if len(raw) > limit:
        raise StudyFileError([Problem(path.name, 1, "(file)", f"expected a {kind} of at most "
                                                            f"{limit // 1024} KiB, got more")])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise StudyFileError([Problem(path.name, line, "(file)", f"expected UTF-8 text, got "
                                                                 f"byte 0x{raw[error.start]:02x}")])


def check(source: str, name: str = "study.toml", base_dir: Path | None = None):
    """``(config or None, problems, warnings)`` of a study file's text; its ``{file = ...}``
    texts are read in ``base_dir``, and are errors without one (an uploaded file's)."""
    reader = Reader(name, source, base_dir)
    config = _validate(reader, source)
    if reader.unshown:
        reader.problems.append(Problem(name, 1, "(file)", f"and {reader.unshown} more "
                                                          "problem(s), shown once these are fixed"))
    return config, reader.problems, reader.warnings


def parse_tables(reader: Reader, source: str) -> dict | None:
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
    except ValueError as error:  # a TOMLDecodeError, or one tomllib lets through (int limits)
        match = re.search(r"\(at line (\d+), column \d+\)", str(error))
        # tomllib says only "at end of document" of a string left open
        where = int(match.group(1)) if match else \
            found.open_string or max(1, len(source.splitlines()))
        if not reader.problems:
            reader.problems.append(Problem(reader.name, where, "(file)", f"not valid TOML: {error}"))
        return None


def _validate(reader: Reader, source: str) -> StudyConfig | None:
    """The file's configuration, or None with its problems in ``reader``."""
    data = parse_tables(reader, source)
    if data is None:
        return None
    values = study_checks.check_sections(reader, data)
    languages = values.get(("study", "languages"), ("en",))
    text_overrides = study_checks.check_texts(reader, data.get("texts", {}), languages)
    annotations = study_annotations.check_annotations(reader, data.get("annotations", {}),
                                                      languages)
    config = None if reader.problems else study_checks.build(reader, values, text_overrides)
    if config is not None and annotations:
        config = replace(config, annotations=annotations)
    if config is not None and "webkit" in config.browsers:
        reader.error(("participants", "browsers"),
                     f"webkit (Safari) is allowed, but its measured onset error "
                     f"({WEBKIT_ONSET_ERROR} in WebKitGTK, bench/rt_engines.py) misses the goal "
                     f"(|mean| < 5 ms, SD < 3 ms); the default is {list(DEFAULT_BROWSERS)}",
                     warn=True)
    if config is not None:
        study_checks.check_text_coverage(reader, config)
    if config is not None and not study_checks.check_facts(reader, config):
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
