"""Study exports: trials (CSV + JSON), participants CSV, codebook and metadata, as files or a zip,
and the tables as one Excel workbook.

Everything in one export is read inside one read-only snapshot transaction, so a study that is
running while it is exported yields files that agree with each other, and each trial row is
either wholly present or absent (trials are single rows, written in one transaction).
"""
import csv
import hashlib
import io
import json
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
from webapp.model_runs import model_run_files
from webapp.models import SourceClip, Stimulus
from webapp.models.manual_exclusion import rules_version
from webapp.models.study import Study, StudyVersion
from webapp.participant.calendar import iso_utc, opens_after
from webapp.researcher import bids, psychds
from webapp.researcher.codebook import codebook_csv, codebook_markdown
from webapp.researcher.codes import with_codes
from webapp.researcher.export_tables import (
    BOM,
    local_iso,
    participants_csv,
    trials_csv,
    trials_json,
    trials_table,
)
from webapp.researcher.prolific import prolific_csv
from webapp.researcher.roster import roster_frame, study_trials
from webapp.researcher.studies import require_study, time_zone
from webapp.researcher.workbook import workbook

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Every file an export may hold (the Psych-DS data file is named after the study, under data/),
# and the one written on request: the CSV tables as one workbook (webapp.researcher.workbook).
FILE_NAMES = ("trials.csv", "trials.json", "participants.csv", "prolific_decisions.csv",
              "next_session_allowlist.csv", "next_session_start_times.csv",
              "codebook.csv", "codebook.md", "metadata.json", "dataset_description.json")
WORKBOOK = "tables.xlsx"
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


def build_export(slug: str, now: datetime | None = None, excel: bool = False,
                 xlsx: bool = False) -> dict[str, bytes]:
    """Every export file of study ``slug`` as ``{file name: bytes}``, from one snapshot.

    ``excel``: the tables a lab opens in a spreadsheet (trials, participants, codebook) start
    with a UTF-8 byte order mark; the Prolific files and the Psych-DS data file never do.
    ``xlsx``: :data:`WORKBOOK` too, the CSV tables as one workbook.
    A file with nothing to say is left out rather than written empty (the next-session
    allowlist, which has no header row, of a study nobody is due back for).

    Raises
    ------
    webapp.researcher.studies.StudyError
        If there is no such study.
    """
    now = now or datetime.now(timezone.utc)
    with snapshot():
        study = require_study(slug)
        zone = time_zone(study)
        participants = roster_frame(slug, now=now)
        trials = trials_table(study_trials(slug), participants, zone)
        catch_set = (study.design_snapshot or {}).get("catch_set")
        stimuli = _stimulus_hashes([study.stimulus_set, *([catch_set] if catch_set else [])])
        record = {**_study_record(study), "time_zone": zone}
        design = study.design_snapshot
        later_sessions = next_session_csvs(participants, Design.from_snapshot(study),
                                           version_designs(study), zone)
        run_files = model_run_files(study.id)
    bom = BOM if excel else b""
    files = {
        "trials.csv": trials_csv(trials, excel),
        "trials.json": trials_json(trials),
        "participants.csv": participants_csv(with_codes(participants, study), zone, excel),
        "prolific_decisions.csv": prolific_csv(participants),
        "codebook.csv": bom + codebook_csv(),
        "codebook.md": codebook_markdown(),
        **{name: data for name, data in later_sessions.items() if data},
        **run_files,
        psychds.data_file_name(slug): trials_csv(trials),
    }
    files["dataset_description.json"] = json.dumps(psychds.dataset_description(
        record, list(trials.columns), now.isoformat()), indent=2, ensure_ascii=False).encode()
    if xlsx:
        files[WORKBOOK] = workbook(files)
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


def build_bids(slug: str, now: datetime | None = None) -> dict[str, bytes]:
    """Study ``slug``'s trials as a BIDS behavioural dataset (:mod:`webapp.researcher.bids`),
    from one snapshot, as ``{file name: bytes}``."""
    now = now or datetime.now(timezone.utc)
    with snapshot():
        study = require_study(slug)
        zone = time_zone(study)
        participants = roster_frame(slug, now=now)
        trials = trials_table(study_trials(slug), participants, zone)
        design = Design.from_snapshot(study)
        record = _study_record(study)
    return bids.dataset(record, design.task, design.sessions, trials, software_version())


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
                      ran: Mapping[int, Design] | None = None,
                      zone: str = "UTC") -> dict[str, bytes]:
    """``next_session_allowlist.csv``, Prolific's custom allowlist (one participant id per
    line, no header), and ``next_session_start_times.csv`` (:func:`next_session_allowlist`,
    with each start again in the study's time ``zone``)."""
    table = next_session_allowlist(participants, design, ran)
    ids = io.StringIO()
    # Written as stored, never quoted against spreadsheets: Prolific must get the exact ids.
    csv.writer(ids, lineterminator="\n").writerows([i] for i in table["participant_id"])
    table["earliest_start_local"] = table["earliest_start_utc"].map(
        lambda stamp: _local_stamp(stamp, zone))
    return {"next_session_allowlist.csv": ids.getvalue().encode(),
            "next_session_start_times.csv": escape_cells(table).to_csv(
                index=False, lineterminator="\n").encode()}


def _local_stamp(stamp: str, zone: str) -> str:
    try:
        return local_iso(datetime.fromisoformat(stamp), zone)
    except ValueError:  # a completed session stored without its completion time ("NaT")
        return ""


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
        zone = time_zone(study)
    return next_session_csvs(participants, design, ran, zone)[name]


def version_designs(study) -> dict[int, Design]:
    """The design of each frozen version of ``study``, by version number."""
    rows = db.session.execute(select(StudyVersion.version, Study.design,
                                     StudyVersion.design_snapshot)
                              .join(Study, Study.id == StudyVersion.study_id)
                              .where(StudyVersion.study_id == study.id)).all()
    return {row.version: Design.from_snapshot(row) for row in rows}


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


def write_export(slug: str, out_dir: Path, overwrite: bool = False,
                 excel: bool = False, xlsx: bool = False, bids_layout: bool = False) -> list[Path]:
    """Write the export files into ``out_dir`` (created if needed); with ``overwrite``, an
    earlier export's file that this one leaves out is removed, so no stale file remains.
    ``bids_layout``: the BIDS dataset of :func:`build_bids` instead, into a folder that holds
    no file yet (with ``overwrite``, over an earlier one's files).

    Raises
    ------
    ValueError
        If ``out_dir`` is a file, or already holds export files and ``overwrite`` is false.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"{out_dir} is not a directory")
    if bids_layout:
        files = build_bids(slug)
        known = list(files)
    else:
        files = build_export(slug, excel=excel, xlsx=xlsx)
        known = [*FILE_NAMES, WORKBOOK, psychds.data_file_name(slug)]
    clashes = [name for name in known if (out_dir / name).exists()]
    if clashes and not overwrite:
        raise ValueError(f"{out_dir} already holds {', '.join(clashes[:5])}"
                         f"{' and more' if len(clashes) > 5 else ''}; use --overwrite")
    for name in clashes:
        if name not in files:
            (out_dir / name).unlink()
    paths = []
    for name, data in files.items():
        (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (out_dir / name).write_bytes(data)
        paths.append(out_dir / name)
    return paths


def _folder(slug: str, files: dict[str, bytes]) -> str:
    stamp = json.loads(files["metadata.json"])["exported_at"][:19].replace(":", "").replace("-", "")
    return f"{slug}-export-{stamp}"


def workbook_export(slug: str) -> tuple[str, bytes]:
    """``(download name, .xlsx bytes)``: the export's tables as one workbook."""
    files = build_export(slug, xlsx=True)
    return f"{_folder(slug, files)}.xlsx", files[WORKBOOK]


def export_zip(slug: str, excel: bool = False, bids_layout: bool = False) -> tuple[str, bytes]:
    """``(download name, zip bytes)``; the files sit in a folder named after the study
    (``<slug>-bids-<time>`` for the BIDS dataset of :func:`build_bids`)."""
    if bids_layout:
        files = build_bids(slug)
        folder = f"{slug}-bids-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}"
    else:
        files = build_export(slug, excel=excel)
        folder = _folder(slug, files)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(f"{folder}/{name}", data)
    return f"{folder}.zip", buffer.getvalue()
