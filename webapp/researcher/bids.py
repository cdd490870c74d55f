"""The export as a BIDS dataset of behavioural data (https://bids-specification.readthedocs.io,
"Behavioral experiments (with no neural recordings)").

``dataset_description.json`` and ``participants.tsv`` (with its ``participants.json``) at the
root, and one ``sub-<label>[/ses-<n>]/beh/sub-<label>[_ses-<n>]_task-<task>_beh.tsv``
per session with a ``.json`` sidecar describing every column, from the codebook (one source).
BIDS labels are letters and digits only; a participant's label depends on their own id alone
(:func:`subject_label`), so it stays the same from one export to the next whoever else joins.
The mapping back to the recruitment ids is ``sourcedata/participant_labels.tsv``, which BIDS
tools ignore and which stays behind when the dataset is shared. A missing value is ``n/a``;
lists and objects are JSON text; tabs and line breaks inside a value (which the participant
API refuses) become spaces, as a BIDS TSV has no quoting; a text cell a spreadsheet would read
as a formula gets a ``'`` in front, as in every CSV (:func:`analysis.csv_cells.escape_cells`).
"""
import hashlib
import json
import re

import pandas as pd

from analysis.csv_cells import escape_cells
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


# A person's id of lower-case letters and digits up to PLAIN_MAX characters is its own label
# (Prolific's and SONA's ids are); any other subject's label is HASHED_LENGTH characters: the
# first PREFIX_MAX letters and digits of its id, then a hash of its kind and whole id.  The two
# forms differ in length, and hashed labels in at least 16 hex digits of hash, so no two
# subjects share a label, even on a case-insensitive file system, whoever else is exported.
PLAIN_MAX = 32
PREFIX_MAX = 24
HASHED_LENGTH = 40
_PLAIN = re.compile(rf"[a-z0-9]{{1,{PLAIN_MAX}}}")


def subject_label(kind: str, subject_id: str) -> str:
    """The BIDS label of one subject, from its own kind and id only.

    Examples
    --------
    >>> subject_label("human", "5f3e2c1a9b8d7e6f5a4b3c2d")
    '5f3e2c1a9b8d7e6f5a4b3c2d'
    >>> len(subject_label("human", "P-1")), subject_label("human", "P-1")[:2]
    (40, 'P1')
    """
    if kind == "human" and _PLAIN.fullmatch(subject_id):
        return subject_id
    prefix = re.sub(r"[^A-Za-z0-9]", "", subject_id)[:PREFIX_MAX]
    digest = hashlib.sha256(f"{kind}\n{subject_id}".encode()).hexdigest()
    return prefix + digest[:HASHED_LENGTH - len(prefix)]


def labels(subjects: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The BIDS label of each ``(subject_kind, subject_id)`` (:func:`subject_label`)."""
    return {subject: subject_label(*subject) for subject in set(subjects)}


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
                      "session. Each *_beh.json describes the columns. A missing value is n/a; a text "
                      "cell that begins with =, +, -, @ or ' (and is not a number) has a ' put "
                      "in front, so that a spreadsheet never reads it as a formula: remove "
                      "one leading ' to get the stored text.\n").encode()}
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
        "participant_id": {"Description": "sub-<label>: a person's recruitment id where it is "
                                          f"lower-case letters and digits (up to {PLAIN_MAX}); "
                                          "else its first letters and digits and a hash of "
                                          f"the id, {HASHED_LENGTH} characters in all "
                                          "(sourcedata/participant_labels.tsv maps them back)."},
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
    """``table`` as a BIDS TSV: a header, ``n/a`` for missing, no quoting, formula-safe text."""
    out = table.copy()
    for column in out.columns:
        out[column] = out[column].map(lambda v, c=column: _cell(v, c))
    out = escape_cells(out)
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
