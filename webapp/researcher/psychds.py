"""The export as a Psych-DS dataset (https://psychds-docs.readthedocs.io).

Psych-DS asks for ``dataset_description.json`` at the root, schema.org JSON-LD of ``@type``
Dataset with a ``name``, a ``description`` and a ``variableMeasured`` entry for every column
of every data file, and data files under ``data/`` named with keywords
(``study-<value>_data.csv``, a value of letters and digits only). The trial table is the
dataset's one data file; the other export files sit beside it as documentation.
"""
import re

from webapp.researcher.codebook_columns import trial_codebook

SCHEMA_VERSION = "Psych-DS 0.4.0"


def data_file_name(slug: str) -> str:
    """``data/study-<slug without its other characters>_data.csv``."""
    value = re.sub(r"[^A-Za-z0-9]", "", slug) or "study"
    return f"data/study-{value}_data.csv"


def dataset_description(record: dict, columns: list[str], exported_at: str) -> dict:
    """The JSON-LD ``dataset_description.json`` of a study export whose data file has
    ``columns`` (each described by the codebook's trial table)."""
    described = {column: (kind, text) for column, kind, text in trial_codebook()}
    missing = [column for column in columns if column not in described]
    if missing:
        raise ValueError(f"the codebook describes no column {', '.join(missing)}")
    title = record["title"] or record["slug"]
    return {
        "@context": "https://schema.org/",
        "@type": "Dataset",
        "name": title,
        "schemaVersion": SCHEMA_VERSION,
        "description": (f"Trials of the Chronoscope study '{record['slug']}' (design "
                        f"{record['design']}, stimulus set {record['stimulus_set']}): one row "
                        "per trial of people and models asked which way time flows in a "
                        "clip. codebook.md describes every file of the export; metadata.json "
                        "holds the design, the exclusion rules and the stimulus hashes."),
        "dateCreated": exported_at,
        "keywords": ["arrow of time", "psychophysics", "video", "Chronoscope"],
        "variableMeasured": [{"@type": "PropertyValue", "name": column,
                              "description": f"{described[column][1]} ({described[column][0]})"}
                             for column in columns],
    }
