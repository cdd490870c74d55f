"""Reading a researcher's clip manifest (CSV or JSON) into validated ``ClipSpec`` rows.

Columns: ``clip_key`` (or ``id``), ``path`` (relative to the manifest's folder, or absolute),
``categories`` (";"-separated in CSV, a list in JSON), and optionally ``annotation_brief``,
``annotation_comprehensive``, ``split``.  Any other column is kept in ``ClipSpec.params``
(e.g. ``item_id_forward`` / ``item_id_backward``: published benchmark item ids).

Every row is checked before anything is returned, and all problems are reported together
with their line numbers, so a manifest is imported whole or not at all.
"""
from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from pathlib import Path

from experiments import media
from experiments.categories import validate_categories
from experiments.stimuli import ClipSpec

REQUIRED = ("clip_key", "path", "categories")
OPTIONAL = ("annotation_brief", "annotation_comprehensive", "split")


class ManifestError(ValueError):
    """Every problem of a manifest, as ``(line number, message)`` pairs."""

    def __init__(self, path, problems: list[tuple[int, str]]):
        self.path = Path(path)
        self.problems = sorted(problems)
        count = len(self.problems)
        lines = "\n".join(f"  line {line}: {message}" for line, message in self.problems)
        super().__init__(f"{self.path.name}: {count} problem{'s' if count != 1 else ''}\n{lines}")


def _csv_rows(text: str) -> tuple[list[str], list[tuple[int, dict]]]:
    reader = csv.DictReader(text.splitlines(keepends=True))
    header = [name.strip() for name in (reader.fieldnames or [])]
    reader.fieldnames = header
    rows, line = [], 1
    for record in reader:
        rows.append((line + 1, record))  # a record starts on the line after the last one
        line = reader.line_num
    return header, rows


def _json_items(text: str) -> list[tuple[int, object]]:
    """Top-level list items (or those of ``{"clips": [...]}``) with their starting lines."""
    data = json.loads(text)
    start = 0
    if isinstance(data, dict):
        match = re.search(r'"clips"\s*:\s*\[', text)
        if match is None or not isinstance(data.get("clips"), list):
            raise ValueError('expected a list of clips or {"clips": [...]}')
        start = match.end() - 1
    elif not isinstance(data, list):
        raise ValueError('expected a list of clips or {"clips": [...]}')
    items: list[tuple[int, object]] = []
    decoder, index = json.JSONDecoder(), text.index("[", start) + 1
    while True:
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
        if index >= len(text) or text[index] == "]":
            return items
        value, end = decoder.raw_decode(text, index)
        items.append((text.count("\n", 0, index) + 1, value))
        index = end


def _load(path: Path) -> tuple[list[str] | None, Sequence[tuple[int, object]]]:
    """Header (CSV only) and ``(line, row)`` pairs; raises ManifestError on a broken file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ManifestError(path, [(0, f"cannot read manifest: {error}")]) from error
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _csv_rows(text)
    if suffix != ".json":
        raise ManifestError(path, [(0, f"unknown manifest type {suffix!r}; use .csv or .json")])
    try:
        return None, _json_items(text)
    except json.JSONDecodeError as error:
        raise ManifestError(path, [(error.lineno, f"invalid JSON: {error.msg}")]) from error
    except ValueError as error:
        raise ManifestError(path, [(1, str(error))]) from error


def _missing_columns(header: list[str] | None, row: dict) -> list[str]:
    names = set(header if header is not None else row)
    if "id" in names:
        names.add("clip_key")
    return [column for column in REQUIRED if column not in names]


def _text(value) -> str | None:
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def _categories(value) -> list[str]:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(";") if part.strip()]
    if not isinstance(value, list):
        raise ValueError(f"categories must be a list or a ';'-separated string, got {value!r}")
    return validate_categories(value)


def _video_path(base: Path, value) -> Path:
    text = _text(value)
    if text is None:
        raise ValueError("empty path")
    path = Path(text).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise ValueError(f"file not found: {path}")
    try:
        media.probe(path)
    except media.MediaError as error:
        raise ValueError(f"unreadable video: {error}") from error
    return path


def _spec(base: Path, row: dict) -> tuple[ClipSpec | None, list[str]]:
    problems: list[str] = []
    key = _text(row.get("clip_key", row.get("id")))
    if key is None:
        problems.append("empty clip_key")
    path: Path | None = None
    categories: list[str] | None = None
    try:
        path = _video_path(base, row.get("path"))
    except ValueError as error:
        problems.append(str(error))
    try:
        categories = _categories(row.get("categories"))
    except ValueError as error:
        problems.append(str(error))
    if key is None or path is None or categories is None:
        return None, problems
    known = {"clip_key", "id", *REQUIRED, *OPTIONAL}
    params = {k: v for k, v in row.items() if k not in known and k is not None and v not in ("", None)}
    params["source_path"] = str(row.get("path")).strip()
    return ClipSpec(clip_key=key, path=path, categories=categories,
                    annotation_brief=_text(row.get("annotation_brief")),
                    annotation_comprehensive=_text(row.get("annotation_comprehensive")),
                    split=_text(row.get("split")), params=params), []


def read_manifest(path: Path) -> list[ClipSpec]:
    """Read and validate a manifest; raises one ``ManifestError`` listing every problem."""
    path = Path(path)
    header, rows = _load(path)
    problems: list[tuple[int, str]] = []
    if header is not None and _missing_columns(header, {}):
        raise ManifestError(path, [(1, f"missing column {c!r}") for c in _missing_columns(header, {})])
    if not rows:
        raise ManifestError(path, [(1, "the manifest lists no clips")])
    specs: list[ClipSpec] = []
    first_line: dict[str | None, int] = {}
    for line, row in rows:
        if not isinstance(row, dict):
            problems.append((line, f"expected an object, got {type(row).__name__}"))
            continue
        missing = _missing_columns(header, row)
        if missing:
            problems.extend((line, f"missing column {column!r}") for column in missing)
            continue
        spec, row_problems = _spec(path.parent, row)
        problems.extend((line, message) for message in row_problems)
        key = spec.clip_key if spec else _text(row.get("clip_key", row.get("id")))
        if key is not None and key in first_line:
            problems.append((line, f"duplicate clip_key {key!r} (first on line {first_line[key]})"))
        first_line.setdefault(key, line)
        if spec is not None:
            specs.append(spec)
    if problems:
        raise ManifestError(path, problems)
    return specs
