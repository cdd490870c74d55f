"""The export as a BIDS dataset of behavioural data (https://bids-specification.readthedocs.io,
"Behavioral experiments (with no neural recordings)").

``dataset_description.json`` and ``participants.tsv`` (with its ``participants.json``) at the
root, and one ``sub-<label>[/ses-<n>]/beh/sub-<label>[_ses-<n>]_task-<task>_beh.tsv``
per session with a ``.json`` sidecar describing every column, from the codebook (one source).
BIDS labels are letters and digits only, so each participant gets a label made of the
letters and digits of their id (made unique where two ids share them); the mapping back to
the recruitment ids is ``sourcedata/participant_labels.tsv``, which BIDS tools ignore and
which stays behind when the dataset is shared. A missing value is ``n/a``; lists and objects
are JSON text; tabs and line breaks inside a value (which the participant API refuses) become
spaces, as a BIDS TSV has no quoting.
"""
import json
import re

import pandas as pd

from webapp.researcher.codebook_columns import trial_codebook
from webapp.researcher.export_tables import (
    INTEGER_COLUMNS,
    TRIAL_JSON_COLUMNS,
    iso_cell,
    json_cell,
)

BIDS_VERSION = "1.10.0"
MISSING = "n/a"
# The trial file's columns that identify the participant: the folder and file name say who.
IDENTITY = ("subject_id", "subject_kind", "session_number")
UNITS = {"rt_ms": "ms", "dropped_frames": "frames"}


def label(text: str) -> str:
    """``text``'s letters and digits (ASCII), or ``x`` when it has none."""
    return re.sub(r"[^A-Za-z0-9]", "", text) or "x"


def labels(subjects: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """A unique BIDS label for each ``(subject_kind, subject_id)``, in their sorted order: a
    label already taken gets ``dup`` and a number added."""
    out: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for subject in sorted(set(subjects)):
        base = candidate = label(subject[1])
        n = 1
        while candidate.lower() in taken:  # case-insensitive file systems
            n += 1
            candidate = f"{base}dup{n}"
        taken.add(candidate.lower())
        out[subject] = candidate
    return out


def dataset(record: dict, task: str, sessions: int, trials: pd.DataFrame,
            software: dict) -> dict[str, bytes]:
    """The BIDS files of a study export (``trials``: :func:`export_tables.trials_table`).

    ``sessions``: the design's number of sessions; with more than one, files sit in
    ``ses-<n>`` folders.
    """
    task_label = label(task)
    subjects = list(zip(trials["subject_kind"], trials["subject_id"]))
    names = labels(subjects)
    described = {column: (kind, text) for column, kind, text in trial_codebook()}
    columns = [c for c in trials.columns if c not in IDENTITY]
    files = {"dataset_description.json": _json({
        "Name": record["title"] or record["slug"], "BIDSVersion": BIDS_VERSION,
        "DatasetType": "raw",
        "GeneratedBy": [{"Name": "Chronoscope", "Version": software.get("version") or "unknown",
                         "Description": f"study {record['slug']}, design {record['design']}"}]}),
        "README.md": (f"# {record['title'] or record['slug']}\n\nTrials of the Chronoscope "
                      f"study '{record['slug']}' (design {record['design']}, stimulus set "
                      f"{record['stimulus_set']}) in BIDS's behavioural layout, one file per "
                      "session. Each *_beh.json describes the columns.\n").encode()}
    table = trials.assign(bids_label=[names[s] for s in subjects])
    # A subject has one session per number (a unique constraint of the session table).
    for (name, number), rows in table.groupby(["bids_label", "session_number"], sort=True):
        stem = _stem(name, int(number), task_label, sessions > 1)
        files[f"{stem}_beh.tsv"] = tsv(rows[columns])
        files[f"{stem}_beh.json"] = _json({"TaskName": task, **{
            column: _column_doc(column, *described[column]) for column in columns}})
    people = pd.DataFrame([("sub-" + name, kind) for (kind, _), name in names.items()],
                          columns=["participant_id", "subject_kind"])
    files["participants.tsv"] = tsv(people.sort_values("participant_id"))
    files["participants.json"] = _json({
        "participant_id": {"Description": "sub-<label>: the letters and digits of the "
                                          "recruitment id (sourcedata/participant_labels.tsv "
                                          "maps them back)."},
        "subject_kind": {"Description": "Who answered.",
                         "Levels": {"human": "a person", "model": "a vision-language model"}}})
    mapping = pd.DataFrame([("sub-" + name, kind, subject_id)
                            for (kind, subject_id), name in names.items()],
                           columns=["participant_id", "subject_kind", "source_id"])
    files["sourcedata/participant_labels.tsv"] = tsv(mapping.sort_values("participant_id"))
    return files


def _stem(name: str, number: int, task: str, sessions: bool) -> str:
    folder = f"sub-{name}/" + (f"ses-{number}/" if sessions else "") + "beh/"
    entities = [f"sub-{name}", *([f"ses-{number}"] if sessions else []), f"task-{task}"]
    return folder + "_".join(entities)


def _column_doc(column: str, kind: str, text: str) -> dict:
    doc = {"Description": f"{text} ({kind})"}
    if column in UNITS:
        doc["Units"] = UNITS[column]
    return doc


def tsv(table: pd.DataFrame) -> bytes:
    """``table`` as a BIDS TSV: a header, ``n/a`` for missing, no quoting."""
    out = table.copy()
    for column in out.columns:
        out[column] = out[column].map(lambda v, c=column: _cell(v, c))
    lines = ["\t".join(out.columns), *("\t".join(row) for row in out.itertuples(index=False))]
    return ("\n".join(lines) + "\n").encode()


def _cell(value, column: str) -> str:
    if column in TRIAL_JSON_COLUMNS:
        text = json_cell(value)
    elif value is None or (not isinstance(value, (list, dict)) and pd.isna(value)):
        return MISSING
    elif hasattr(value, "isoformat"):
        text = iso_cell(value)
    elif column in INTEGER_COLUMNS:
        text = str(int(value))  # an integer column with a gap is read as floats
    else:
        text = str(value)
    text = re.sub(r"[\t\r\n]", " ", text)
    return text if text != "" else MISSING


def _json(data: dict) -> bytes:
    return json.dumps(data, indent=2, ensure_ascii=False).encode()
