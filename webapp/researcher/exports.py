"""Study exports: trials (CSV + JSON), participants CSV, codebook and metadata, as files or a zip.

Everything in one export is read inside one read-only snapshot transaction, so a study that is
running while it is exported yields files that agree with each other, and each trial row is
either wholly present or absent (trials are single rows, written in one transaction).
"""
import csv
import hashlib
import io
import json
import math
import subprocess
import zipfile
from collections.abc import Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import metadata as importlib_metadata
from pathlib import Path

import pandas as pd
from sqlalchemy import select

from analysis.csv_cells import escape_cells
from experiments.designs import Design
from experiments.plausibility import PlausibilityRules
from webapp.extensions import db
from webapp.models import SourceClip, Stimulus
from webapp.models.manual_exclusion import rules_version
from webapp.models.study import Study, StudyVersion
from webapp.participant.calendar import iso_utc, opens_after
from webapp.researcher.codebook import codebook_csv, codebook_markdown
from webapp.researcher.codes import with_codes
from webapp.researcher.prolific import prolific_csv
from webapp.researcher.roster import JSON_ROSTER_COLUMNS, roster_frame, study_trials
from webapp.researcher.studies import require_study
from webapp.trials import EXPORT_COLUMNS

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TRIAL_JSON_COLUMNS = ("categories", "exclusion_reasons", "extra")
INTEGER_COLUMNS = ("session_id", "trial_index", "dropped_frames")
FILE_NAMES = ("trials.csv", "trials.json", "participants.csv", "prolific_decisions.csv",
              "next_session_allowlist.csv", "next_session_start_times.csv",
              "codebook.csv", "codebook.md", "metadata.json")
# Who may take a later session of a multi-session design, and from when (UTC).
START_TIME_COLUMNS = ["participant_id", "session_number", "earliest_start_utc"]


@contextmanager
def snapshot():
    """A read-only transaction in which every SELECT sees the same committed state.

    PostgreSQL: REPEATABLE READ. SQLite in WAL mode: a real BEGIN, whose read snapshot is
    fixed by the first SELECT and held until the end. SQLAlchemy 2.1 emits that BEGIN
    itself; older pysqlite set-ups run each SELECT in its own implicit transaction, so it
    is emitted here when the driver is not yet in one.
    """
    db.session.rollback()
    dialect = db.engine.dialect.name
    if dialect == "postgresql":
        db.session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
    elif dialect == "sqlite":
        connection = db.session.connection()
        if not connection.connection.dbapi_connection.in_transaction:
            connection.exec_driver_sql("BEGIN")
    try:
        yield
    finally:
        db.session.rollback()


def build_export(slug: str, now: datetime | None = None) -> dict[str, bytes]:
    """Every export file of study ``slug`` as ``{file name: bytes}``, from one snapshot.

    Raises
    ------
    webapp.researcher.studies.StudyError
        If there is no such study.
    """
    now = now or datetime.now(timezone.utc)
    with snapshot():
        study = require_study(slug)
        trials = study_trials(slug)
        participants = roster_frame(slug, now=now)
        catch_set = (study.design_snapshot or {}).get("catch_set")
        stimuli = _stimulus_hashes([study.stimulus_set, *([catch_set] if catch_set else [])])
        record = _study_record(study)
        design = study.design_snapshot
        later_sessions = next_session_csvs(participants, Design.from_snapshot(study), version_designs(study))
    files = {
        "trials.csv": trials_csv(trials),
        "trials.json": trials_json(trials),
        "participants.csv": participants_csv(with_codes(participants, study)),
        "prolific_decisions.csv": prolific_csv(participants),
        "codebook.csv": codebook_csv(),
        "codebook.md": codebook_markdown(),
        **later_sessions,
    }
    meta = {
        "study": record, "design": design,
        "exclusion_rules_version": record["exclusion_rules_version"],
        "plausibility_rules": PlausibilityRules().to_dict(),
        "stimuli": stimuli, "software": software_version(),
        "exported_at": now.isoformat(),
        "counts": {"trials": len(trials), "sessions": len(participants),
                   "subjects": int(participants["subject_id"].nunique())},
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
    }
    files["metadata.json"] = json.dumps(meta, indent=2, default=str).encode()
    return files


def _study_record(study) -> dict:
    return {"slug": study.slug, "title": study.title, "design": study.design,
            "stimulus_set": study.stimulus_set, "status": study.status,
            "exclusion_rules_version": rules_version(study),
            "created_at": study.created_at.isoformat()}


def _stimulus_hashes(stimulus_sets: list[str]) -> list[dict]:
    """Every stimulus a participant of the study can be shown: its set and its catch videos."""
    rows = db.session.execute(
        select(Stimulus.public_id, SourceClip.stimulus_set, SourceClip.clip_key, Stimulus.kind,
               Stimulus.direction, Stimulus.frame_indices, Stimulus.item_id, Stimulus.path,
               Stimulus.sha256)
        .join(Stimulus.source_clip).where(SourceClip.stimulus_set.in_(stimulus_sets))
        .order_by(SourceClip.stimulus_set, SourceClip.clip_key, Stimulus.kind,
                  Stimulus.direction, Stimulus.id)
    ).mappings().all()
    return [{"stimulus_id": r["public_id"], "stimulus_set": r["stimulus_set"],
             "source_clip_id": r["clip_key"], "kind": r["kind"],
             "direction": r["direction"], "frame_indices": r["frame_indices"],
             "item_id": r["item_id"], "path": r["path"], "sha256": r["sha256"]} for r in rows]


def trials_csv(trials: pd.DataFrame) -> bytes:
    """The canonical columns; lists and dicts as JSON strings, missing values as empty cells,
    text that a spreadsheet would run as a formula quoted (:mod:`analysis.csv_cells`)."""
    out = trials[EXPORT_COLUMNS].copy()
    for col in TRIAL_JSON_COLUMNS:
        out[col] = out[col].map(_json_cell)
    out["received_at"] = out["received_at"].map(_iso_cell)
    for col in INTEGER_COLUMNS:
        out[col] = pd.array(out[col], dtype="Int64")
    # repr-exact floats so rt_ms reads back unrounded.
    return escape_cells(out).to_csv(index=False, float_format=None, lineterminator="\n").encode()


def trials_json(trials: pd.DataFrame) -> bytes:
    out = trials[EXPORT_COLUMNS].copy()
    out["received_at"] = out["received_at"].map(lambda value: _iso_cell(value) or None)
    records = [{col: _plain(row[col]) for col in EXPORT_COLUMNS}
               for row in out.to_dict("records")]
    return json.dumps(records, indent=1, allow_nan=False).encode()


def participants_csv(participants: pd.DataFrame) -> bytes:
    out = participants.copy()
    for col in JSON_ROSTER_COLUMNS:
        out[col] = out[col].map(_json_cell)
    for col in ("started_at", "last_seen_at", "completed_at", "manual_at"):
        out[col] = out[col].map(_iso_cell)
    # A column of versions with an empty one would be floats ("1.0").
    out["study_version"] = out["study_version"].map(
        lambda v: "" if v is None or pd.isna(v) else str(int(v)))
    return escape_cells(out).to_csv(index=False, lineterminator="\n").encode()


def _iso_cell(value) -> str:
    # pandas turns a column of datetimes with a None into NaT, which is a datetime too and
    # would be written "NaT".
    return "" if value is None or pd.isna(value) else value.isoformat()


def prolific_export(slug: str) -> tuple[str, bytes]:
    """``(download name, CSV bytes)`` of study ``slug``'s approve/reject list."""
    with snapshot():
        require_study(slug)
        participants = roster_frame(slug)
    return f"{slug}-prolific-decisions.csv", prolific_csv(participants)


def next_session_allowlist(participants: pd.DataFrame, design: Design,
                           ran: Mapping[int, Design] | None = None) -> pd.DataFrame:
    """Who may take a next session of a multi-session design, which one, and the earliest
    moment they may start it.

    Eligible: a person (not a model, not simulated) whose latest session was completed (status
    "completed": not failed attention, practice or anything else) and is not the design's
    last, and who is excluded in no session after the researchers' manual rules. Someone who
    has started their next session is no longer on it: that session is their latest. The
    earliest start is when the entry link lets them in, ``session_gap_hours`` of the version
    that session ran (``ran``: designs by study version; ``design`` for a version not in it)
    after that completion (:func:`webapp.participant.calendar.opens_after`). Columns
    :data:`START_TIME_COLUMNS`, earliest first, ``earliest_start_utc``
    ISO 8601 UTC; empty for a one-session design.
    """
    people = participants[(participants["subject_kind"] == "human")
                          & ~participants["simulated"].astype(bool)]
    rows = []
    for subject, sessions in people.groupby("subject_id", sort=False):
        latest = sessions.sort_values("session_number").iloc[-1]
        if latest["status"] != "completed" or latest["session_number"] >= design.sessions \
                or sessions["excluded"].astype(bool).any():
            continue
        version = latest["study_version"]
        version_design = design if pd.isna(version) or not ran \
            else ran.get(int(version), design)
        opens_at = opens_after(version_design,
                               pd.Timestamp(latest["completed_at"]).to_pydatetime())
        rows.append((subject, int(latest["session_number"]) + 1, iso_utc(opens_at)))
    table = pd.DataFrame(rows, columns=START_TIME_COLUMNS)
    return table.sort_values(["earliest_start_utc", "participant_id"], ignore_index=True)


def next_session_csvs(participants: pd.DataFrame, design: Design,
                      ran: Mapping[int, Design] | None = None) -> dict[str, bytes]:
    """``next_session_allowlist.csv``, Prolific's custom allowlist (one participant id per
    line, no header), and ``next_session_start_times.csv`` (:func:`next_session_allowlist`)."""
    table = next_session_allowlist(participants, design, ran)
    ids = io.StringIO()
    # Written as stored, never quoted against spreadsheets: Prolific must get the exact ids.
    csv.writer(ids, lineterminator="\n").writerows([i] for i in table["participant_id"])
    return {"next_session_allowlist.csv": ids.getvalue().encode(),
            "next_session_start_times.csv": escape_cells(table).to_csv(
                index=False, lineterminator="\n").encode()}


def next_session_export(slug: str, name: str) -> bytes:
    """One of :func:`next_session_csvs`'s files of study ``slug`` (KeyError for another name).

    Raises
    ------
    webapp.researcher.studies.StudyError
        If there is no such study.
    """
    with snapshot():
        study = require_study(slug)
        participants = roster_frame(slug)
        design = Design.from_snapshot(study)
        ran = version_designs(study)
    return next_session_csvs(participants, design, ran)[name]


def version_designs(study) -> dict[int, Design]:
    """The design of each frozen version of ``study``, by version number."""
    rows = db.session.execute(select(StudyVersion.version, Study.design,
                                     StudyVersion.design_snapshot)
                              .join(Study, Study.id == StudyVersion.study_id)
                              .where(StudyVersion.study_id == study.id)).all()
    return {row.version: Design.from_snapshot(row) for row in rows}


def _json_cell(value) -> str:
    return json.dumps(_plain(value), sort_keys=True, allow_nan=False)


def _plain(value):
    """Numpy scalars, NaN and pandas NA as JSON-ready Python values."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def software_version() -> dict:
    """Package version and, when run from a git checkout, the commit and whether it was dirty."""
    try:
        version = importlib_metadata.version("chronoscope")
    except importlib_metadata.PackageNotFoundError:
        version = None
    return {"package": "chronoscope", "version": version, **_git_state()}


def _git_state() -> dict:
    def git(*args):
        return subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True,
                              timeout=5, check=True).stdout.strip()
    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None, "git_dirty": None}
    return {"git_commit": commit, "git_dirty": dirty}


def write_export(slug: str, out_dir: Path, overwrite: bool = False) -> list[Path]:
    """Write the export files into ``out_dir`` (created if needed).

    Raises
    ------
    ValueError
        If ``out_dir`` is a file, or already holds export files and ``overwrite`` is false.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"{out_dir} is not a directory")
    clashes = [name for name in FILE_NAMES if (out_dir / name).exists()]
    if clashes and not overwrite:
        raise ValueError(f"{out_dir} already holds {', '.join(clashes)}; use --overwrite")
    files = build_export(slug)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in files.items():
        (out_dir / name).write_bytes(data)
        paths.append(out_dir / name)
    return paths


def export_zip(slug: str) -> tuple[str, bytes]:
    """``(download name, zip bytes)``; the files sit in a folder named after the study."""
    files = build_export(slug)
    stamp = json.loads(files["metadata.json"])["exported_at"][:19].replace(":", "").replace("-", "")
    folder = f"{slug}-export-{stamp}"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(f"{folder}/{name}", data)
    return f"{folder}.zip", buffer.getvalue()
