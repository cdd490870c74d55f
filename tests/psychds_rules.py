"""The Psych-DS rules an export must meet, vendored from the specification's schema.

Source: github.com/psych-ds/psych-DS, commit 84c80a0c658239b8975e04dda92f5ae0aa8a8d21
(2025-05-28), ``schema_model/versions/jsons/latest/schema.json`` (CC BY 4.0, the Psych-DS
project), which the validator (psych-ds/psychds-validator) reads. The rules taken, with the
schema's error codes:

* ``rules.files.common.core.dataset_description`` (MISSING_DATASET_DESCRIPTION) and
  ``.data`` (MISSING_DATA_DIRECTORY): ``/dataset_description.json`` and ``/data``;
* ``rules.files.tabular_data.data.Datafile`` (MISSING_DATAFILE,
  FILENAME_KEYWORD_FORMATTING_ERROR): at least one file under ``data/`` matching
  :data:`DATAFILE_REGEX`; keywords outside ``meta.context...keywords`` only warn;
* ``rules.errors`` JsonInvalid, MissingDatasetType/IncorrectDatasetType (``@type`` Dataset),
  ``rules.compiled_metadata.CompiledMetadata`` ``fields`` (JsonKeyRequired), ``namespace``
  http://schema.org/ with ``jsonld``, and ``containsAllColumns``
  (CsvColumnMissingFromMetadata, VariableMissingFromCsvColumns);
* CSVHeaderMissing, CSVHeaderRepeated, CSVHeaderLengthMismatch, FileEmpty,
  RowidValuesNotUnique; ObjectTypeMissing (an object as a property's value has ``@type``).
"""
import csv
import io
import json
import re
from pathlib import PurePosixPath

DATAFILE_REGEX = re.compile(r"([a-z]+-[a-zA-Z0-9]+)(_[a-z]+-[a-zA-Z0-9]+)*_data\.csv")
REQUIRED_FIELDS = ("name", "description", "variableMeasured")
OFFICIAL_KEYWORDS = ("study", "site", "subject", "session", "task", "condition", "trial",
                     "stimulus", "description")
SCHEMA_ORG = ("http://schema.org/", "https://schema.org/", "http://schema.org",
              "https://schema.org")


def problems(files: dict[str, bytes]) -> list[str]:
    """The errors (code: detail) of a dataset given as ``{path from its root: bytes}``."""
    found = []
    if "dataset_description.json" not in files:
        return ["MISSING_DATASET_DESCRIPTION"]
    try:
        description = json.loads(files["dataset_description.json"])
    except (ValueError, UnicodeDecodeError) as error:
        return [f"JsonInvalid: {error}"]
    if description.get("@context") not in SCHEMA_ORG:
        found.append(f"InvalidJsonldFormatting: @context {description.get('@context')!r}")
    if "@type" not in description:
        found.append("MissingDatasetType")
    elif description["@type"] != "Dataset":
        found.append(f"IncorrectDatasetType: {description['@type']!r}")
    found += [f"JsonKeyRequired: {key}" for key in REQUIRED_FIELDS if not description.get(key)]
    found += _untyped_objects(description)
    datafiles = [path for path in files if path.startswith("data/")
                 and path.endswith(".csv")]
    if not datafiles:
        return found + ["MISSING_DATA_DIRECTORY or MISSING_DATAFILE"]
    variables = {v.get("name") if isinstance(v, dict) else v
                 for v in description.get("variableMeasured") or []}
    columns: set[str] = set()
    for path in datafiles:
        if not DATAFILE_REGEX.fullmatch(PurePosixPath(path).name):
            found.append(f"FILENAME_KEYWORD_FORMATTING_ERROR: {path}")
        header = _csv_problems(path, files[path], found)
        columns |= set(header)
        found += [f"CsvColumnMissingFromMetadata: {path}: {column}"
                  for column in header if column not in variables]
    found += [f"VariableMissingFromCsvColumns: {name}" for name in sorted(variables - columns)]
    return found


def unofficial_keywords(path: str) -> list[str]:
    """The keywords of a data file's name that Psych-DS does not list (a warning)."""
    pairs = PurePosixPath(path).name.removesuffix("_data.csv").split("_")
    return [pair.split("-")[0] for pair in pairs if pair.split("-")[0] not in OFFICIAL_KEYWORDS]


def _csv_problems(path: str, data: bytes, found: list[str]) -> list[str]:
    if not data:
        found.append(f"FileEmpty: {path}")
        return []
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    header = rows[0] if rows else []
    if not header or any(not column for column in header):
        found.append(f"CSVHeaderMissing: {path}")
    if len(set(header)) != len(header):
        found.append(f"CSVHeaderRepeated: {path}")
    found += [f"CSVHeaderLengthMismatch: {path} row {number}"
              for number, row in enumerate(rows[1:], start=2) if len(row) != len(header)]
    if "row_id" in header:
        ids = [row[header.index("row_id")] for row in rows[1:]]
        if len(set(ids)) != len(ids):
            found.append(f"RowidValuesNotUnique: {path}")
    return header


def _untyped_objects(value, where: str = "") -> list[str]:
    if isinstance(value, list):
        return [p for item in value for p in _untyped_objects(item, where)]
    if not isinstance(value, dict):
        return []
    found = [] if not where or "@type" in value else [f"ObjectTypeMissing: {where}"]
    return found + [p for key, item in value.items() if not key.startswith("@")
                    for p in _untyped_objects(item, f"{where}/{key}")]
