"""A run file: ``run-models --config run.toml`` reads a model run from one TOML file.

Every option of ``run-models`` is a field, named like its flag (``--max-new-tokens`` is
``max_new_tokens``, ``--set`` is ``set``) and checked by the option's own declaration (its
type, range, choices and callback): the fields are derived from the command, so an option
added to it is a field with no more work.  Options given on the command line override the
file.  A ``[libraries]`` table (written into every exported run file) is compared with the
installed versions: a difference is a warning, since it makes another run identity.

The file is read as study files are, bounded in time and memory
(:mod:`experiments.study_scan`), and every problem names the file, line and field::

    run.toml:3: max_new_token: unknown key (did you mean 'max_new_tokens'?); expected one of ...
"""
from __future__ import annotations

from pathlib import Path

import click
from click.core import ParameterSource

from analysis.vlm.provenance import library_versions
from experiments import study_file
from experiments.study_file import Problem, Reader, parse_tables

# The largest run file read (a resolved one is ~1 KB).
MAX_RUN_FILE_BYTES = 64 * 1024
LIBRARIES = "libraries"
# Options that are not part of a run's description.
NOT_FIELDS = ("config",)


class RunFileError(click.UsageError):
    """A run file with errors; ``problems`` lists every one of them."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(map(str, problems)))


def fields(command: click.Command) -> dict[str, click.Option]:
    """The run file's fields: every option of ``command`` under its long flag's name."""
    return {max(p.opts, key=len).lstrip("-").replace("-", "_"): p for p in command.params
            if isinstance(p, click.Option) and p.name not in NOT_FIELDS}


def read_source(path: Path) -> str:
    """The file's text, read no further than :data:`MAX_RUN_FILE_BYTES`."""
    try:
        return study_file.read_source(path, MAX_RUN_FILE_BYTES, "run file")
    except study_file.StudyFileError as error:
        raise RunFileError(error.problems)


def load(path: Path, command: click.Command) -> tuple[dict, list[str]]:
    """``({option name: value}, warnings)`` of the run file at ``path``; raises
    :class:`RunFileError` with every problem."""
    source = read_source(path)
    reader = Reader(path.name, source, None)
    tables = parse_tables(reader, source)
    values: dict = {}
    warnings: list[str] = []
    if tables is not None:
        known = fields(command)
        context = click.Context(command)
        for key, value in tables.items():
            if key == LIBRARIES:
                warnings = _libraries(reader, value)
            elif key not in known:
                reader.unknown((), key, [*known, LIBRARIES])
            else:
                values.update(_field(reader, context, key, known[key], value))
    if reader.problems:
        raise RunFileError(reader.problems)
    return values, [f"{path.name}: {warning}" for warning in warnings]


def _expected(option: click.Option) -> tuple[tuple[type, ...], str]:
    """The TOML value types an option takes, and their words."""
    if option.is_flag:
        return (bool,), "true or false"
    kind = option.type
    if isinstance(kind, click.Choice):
        return (str,), "one of " + ", ".join(map(repr, kind.choices))
    if isinstance(kind, click.types.IntParamType):  # IntRange too
        return (int,), "an integer"
    if isinstance(kind, click.types.FloatParamType):
        return (int, float), "a number"
    return (str,), "a string"


def _field(reader: Reader, context: click.Context, key: str, option: click.Option,
           value) -> dict:
    """``{option name: value}`` checked as the command checks its flag, or {} after a problem."""
    types, words = _expected(option)
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        shown = repr(value) if isinstance(value, str) else type(value).__name__
        reader.error((key,), f"expected {words}, got {shown[:80]}")
        return {}
    try:
        return {option.name: option.process_value(context, value)}
    except click.BadParameter as error:
        reader.error((key,), error.message.rstrip("."))
        return {}


def _libraries(reader: Reader, table) -> list[str]:
    """Warnings for the versions recorded in ``table`` that differ from those installed."""
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        reader.error((LIBRARIES,), "expected a table of library = \"version\"")
        return []
    installed = library_versions()
    return [f"{name} {version} in the file, {installed.get(name, 'not installed')} here: the "
            "answers may differ, and the run is another run" for name, version in table.items()
            if installed.get(name) != version]


def resolve(context: click.Context, options: dict) -> dict:
    """The options of the run: the run file's (``--config``), then the command line's, then
    the defaults; ``from_file`` lists the fields the file set and the command line did not."""
    if options.get("config") is None:
        resolved = {**options, "from_file": []}
    else:
        values, warnings = load(Path(options["config"]), context.command)
        for warning in warnings:
            click.echo(f"Warning: {warning}", err=True)
        taken = {name: value for name, value in values.items()
                 if context.get_parameter_source(name) in (ParameterSource.DEFAULT, None)}
        resolved = {**options, **taken, "from_file": sorted(taken)}
    if not resolved.get("model"):
        raise click.UsageError("give --model, or model in the run file (--config)")
    return resolved


def resolved_fields(command: click.Command, options: dict) -> dict:
    """The run file of a run: every field with its value (defaults too; unset ones left out,
    since TOML has no null)."""
    values = {key: options.get(option.name) for key, option in fields(command).items()}
    return {key: value for key, value in values.items() if value is not None}
