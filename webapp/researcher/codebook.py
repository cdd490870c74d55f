"""The codebook shipped with every export, as codebook.csv and codebook.md: the entries of
:mod:`webapp.researcher.codebook_columns`, one per column of every exported table, file by
file."""
from typing import Any

import pandas as pd

from analysis.csv_cells import escape_cells
from webapp.researcher.codebook_columns import (
    NEXT_SESSION_CODEBOOK,
    PARTICIPANT_CODEBOOK,
    PROLIFIC_CODEBOOK,
    trial_codebook,
)


def codebook() -> list[tuple[str, str, str, str]]:
    """(file, column, type, description) of every exported table."""
    return [("trials.csv / trials.json", *entry) for entry in trial_codebook()] + \
        [("participants.csv", *entry) for entry in PARTICIPANT_CODEBOOK] + \
        [("prolific_decisions.csv", *entry) for entry in PROLIFIC_CODEBOOK] + \
        NEXT_SESSION_CODEBOOK


_DERIVED = {"TRIAL_CODEBOOK": trial_codebook, "CODEBOOK": codebook}


def __getattr__(name: str) -> Any:
    # TRIAL_CODEBOOK and CODEBOOK name trial types: built from the registry when read.
    if name in _DERIVED:
        return _DERIVED[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


QUOTED_TEXT = ("In every CSV file, a text cell that begins with =, +, -, @, a tab, a carriage "
               "return or a single quote (') has one single quote put in front, unless it is a "
               "plain number such as -0.5: spreadsheets then show it as text instead of running "
               "it as a formula. Strip exactly one leading single quote to get the original text "
               "back (`manage.py analyze --trials` does); trials.json holds the text unchanged.")


def codebook_csv() -> bytes:
    table = pd.DataFrame(codebook(), columns=["file", "column", "type", "description"])
    return escape_cells(table).to_csv(index=False, lineterminator="\n").encode()


def codebook_markdown() -> bytes:
    lines = ["# Codebook", "",
             "metadata.json holds the design snapshot, the exclusion-rule version, the sha256 "
             "of every stimulus and of every other file, the software version and the export "
             "time. The export is a Psych-DS dataset: dataset_description.json (schema.org "
             "JSON-LD) describes its data file, data/study-<study>_data.csv, which is "
             "trials.csv again. An export downloaded for Excel starts trials.csv, "
             "participants.csv and codebook.csv with a UTF-8 byte order mark.", "",
             QUOTED_TEXT, ""]
    entries = codebook()
    for file in dict.fromkeys(entry[0] for entry in entries):
        lines += [f"## {file}", "", "| column | type | description |", "|---|---|---|"]
        lines += [f"| `{column}` | {kind} | {text} |"
                  for f, column, kind, text in entries if f == file]
        lines.append("")
    return "\n".join(lines).encode()
