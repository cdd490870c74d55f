"""The export's tables as files: trials (CSV and JSON) and participants (CSV).

Besides the stored columns, a file gives what a lab reads off a spreadsheet: every UTC time
again in the study's time zone (``*_local``, ISO 8601 with its offset), the key a participant
pressed and the session's key mapping. ``excel=True`` starts each CSV with a UTF-8 byte order
mark, without which Excel (Japanese Windows among others) reads UTF-8 as the local code page.
"""
import json
import math
from datetime import datetime
from zoneinfo import ZoneInfo

import pandas as pd

from analysis.csv_cells import escape_cells
from webapp.participant.calendar import utc
from webapp.researcher.roster import JSON_ROSTER_COLUMNS
from webapp.trials import EXPORT_COLUMNS

TRIAL_JSON_COLUMNS = ("categories", "exclusion_reasons", "extra")
INTEGER_COLUMNS = ("session_id", "trial_index", "dropped_frames")
PARTICIPANT_TIMES = ("started_at", "last_seen_at", "completed_at", "manual_at")
# The key pressed (video trials; empty for a timeout or a trial answered otherwise), and the
# keys that answer F and B in the session (forward and backward on arrow-of-time trials).
KEY_COLUMNS = ("response_key", "forward_key", "backward_key")
TRIAL_FILE_COLUMNS = [*EXPORT_COLUMNS, "received_at_local", *KEY_COLUMNS]
BOM = "\ufeff".encode()


def local_name(column: str) -> str:
    return f"{column}_local"


def trials_table(trials: pd.DataFrame, participants: pd.DataFrame, zone: str) -> pd.DataFrame:
    """The trial table as the files write it (:data:`TRIAL_FILE_COLUMNS`)."""
    out = trials[EXPORT_COLUMNS].copy()
    out["received_at_local"] = out["received_at"].map(lambda v: _local_cell(v, zone))
    mappings = {sid: (condition or {}).get("key_mapping") or {}
                for sid, condition in zip(participants["session_id"], participants["condition"])}
    out["response_key"] = out["extra"].map(lambda extra: (extra or {}).get("key") or "")
    for column, label in (("forward_key", "F"), ("backward_key", "B")):
        out[column] = out["session_id"].map(
            lambda sid, label=label: next((k for k, v in mappings.get(sid, {}).items()
                                           if v == label), ""))
    return out[TRIAL_FILE_COLUMNS]


def trials_csv(table: pd.DataFrame, excel: bool = False) -> bytes:
    """Lists and dicts as JSON strings, missing values as empty cells, text that a
    spreadsheet would run as a formula quoted (:mod:`analysis.csv_cells`)."""
    out = table.copy()
    for col in TRIAL_JSON_COLUMNS:
        out[col] = out[col].map(json_cell)
    out["received_at"] = out["received_at"].map(iso_cell)
    for col in INTEGER_COLUMNS:
        out[col] = pd.array(out[col], dtype="Int64")
    # repr-exact floats so rt_ms reads back unrounded.
    return csv_bytes(out, excel)


def trials_json(table: pd.DataFrame) -> bytes:
    out = table.copy()
    out["received_at"] = out["received_at"].map(lambda value: iso_cell(value) or None)
    records = [{col: plain(row[col]) for col in out.columns} for row in out.to_dict("records")]
    return json.dumps(records, indent=1, allow_nan=False).encode()


def participants_csv(participants: pd.DataFrame, zone: str, excel: bool = False) -> bytes:
    out = participants.copy()
    for col in JSON_ROSTER_COLUMNS:
        out[col] = out[col].map(json_cell)
    for col in PARTICIPANT_TIMES:
        out.insert(out.columns.get_loc(col) + 1, local_name(col),
                   out[col].map(lambda v: _local_cell(v, zone)))
        out[col] = out[col].map(iso_cell)
    # A column of versions with an empty one would be floats ("1.0").
    out["study_version"] = out["study_version"].map(
        lambda v: "" if v is None or pd.isna(v) else str(int(v)))
    return csv_bytes(out, excel)


def csv_bytes(table: pd.DataFrame, excel: bool = False) -> bytes:
    """``table`` as CSV (its header even when it has no row), with a BOM for Excel."""
    data = escape_cells(table).to_csv(index=False, lineterminator="\n").encode()
    return BOM + data if excel else data


def iso_cell(value) -> str:
    # pandas turns a column of datetimes with a None into NaT, which is a datetime too and
    # would be written "NaT".
    return "" if value is None or pd.isna(value) else value.isoformat()


def _local_cell(value, zone: str) -> str:
    if value is None or pd.isna(value):
        return ""
    return local_iso(pd.Timestamp(value).to_pydatetime(), zone)


def local_iso(moment: datetime, zone: str) -> str:
    """ISO 8601 in ``zone`` with its offset (a naive ``moment`` is UTC)."""
    return utc(moment).astimezone(ZoneInfo(zone)).isoformat()


def local_time(moment: datetime, zone: str) -> str:
    """``moment`` in ``zone`` to the minute with the zone's abbreviation, as pages show it."""
    return utc(moment).astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %Z")


def json_cell(value) -> str:
    return json.dumps(plain(value), sort_keys=True, allow_nan=False)


def plain(value):
    """Numpy scalars, NaN and pandas NA as JSON-ready Python values."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
