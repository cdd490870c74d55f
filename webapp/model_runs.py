"""The database side of model runs: read a set's stimuli, store a run's trials.

A model is a ``Subject(kind="model", external_id=<model id>)`` of the study; each run is
one ``Session`` whose ``seed`` is the run's seed and whose ``device_info`` holds the run's
provenance (backend, weights hash, versions, task settings, timing) and its identity
(``run_key``: model, revision and every setting that can change an answer).  A rerun of the
same identity adds the items its session lacks, never a second copy; a session that still
lacks items is ``incomplete`` and lists its failures.  Each store is one transaction.
"""
from __future__ import annotations

import json
import secrets
import uuid
from pathlib import Path

from flask import current_app
from sqlalchemy import select

from analysis.vlm.tasks import StimulusRecord
from analysis.probes.run import SweepClip
from webapp.stimuli import catalog
from webapp.extensions import db
from webapp.models import Session, SourceClip, Stimulus, Subject, Trial
from webapp.models._types import utcnow
from webapp.researcher.studies import require_study

MODEL_KIND = "model"


class ModelRunError(ValueError):
    """A run request that cannot be served (unknown set or study, no stimuli)."""


def resolve_set(stimulus_set: str | None, slug: str | None) -> str:
    """The stimulus set of ``study``, or ``stimulus_set`` itself (checked to exist)."""
    if slug:
        study = require_study(slug)
        if stimulus_set and stimulus_set != study.stimulus_set:
            raise ModelRunError(f"study {slug!r} uses set {study.stimulus_set!r}, "
                                f"not {stimulus_set!r}")
        return study.stimulus_set
    if not stimulus_set:
        raise ModelRunError("give --study or --set")
    if stimulus_set not in catalog.stimulus_sets():
        raise ModelRunError(f"unknown stimulus set {stimulus_set!r}")
    return stimulus_set


def stimulus_records(stimulus_set: str) -> tuple[list[StimulusRecord], dict[str, StimulusRecord]]:
    """All stimuli of a set as plain records, and those with a benchmark item id by id."""
    root = Path(current_app.config["STIMULUS_ROOT"])
    rows = db.session.execute(
        select(Stimulus, SourceClip).join(SourceClip, Stimulus.source_clip_id == SourceClip.id)
        .where(SourceClip.stimulus_set == stimulus_set).order_by(Stimulus.id)).all()
    if not rows:
        raise ModelRunError(f"stimulus set {stimulus_set!r} holds no stimuli")
    records = [_record(stimulus, clip, root) for stimulus, clip in rows]
    by_item = {r.item_id: r for r in records if r.item_id}
    return records, by_item


def _record(stimulus: Stimulus, clip: SourceClip, root: Path) -> StimulusRecord:
    annotations = {"brief": clip.annotation_brief, "comprehensive": clip.annotation_comprehensive}
    return StimulusRecord(
        stimulus_id=stimulus.id, source_clip_id=clip.id, kind=stimulus.kind,
        direction=stimulus.direction, path=str(root / stimulus.path), sha256=stimulus.sha256,
        fps=clip.fps, frame_count=clip.frame_count, categories=tuple(clip.categories or ()),
        item_id=stimulus.item_id,
        frame_indices=tuple(stimulus.frame_indices) if stimulus.frame_indices else None,
        annotations={k: v for k, v in annotations.items() if v},
        span=(stimulus.meta or {}).get("span"))


def sweep_clips(stimulus_set: str) -> list[SweepClip]:
    """The set's TRA sweep clips (split ``tra-sweep``), each with its forward stimulus."""
    from experiments.synthetic import TRA_SPLIT, sweep_labels

    root = Path(current_app.config["STIMULUS_ROOT"])
    rows = db.session.execute(
        select(SourceClip, Stimulus).join(Stimulus, Stimulus.source_clip_id == SourceClip.id)
        .where(SourceClip.stimulus_set == stimulus_set, SourceClip.split == TRA_SPLIT,
               Stimulus.kind == "clip", Stimulus.direction == "forward")
        .order_by(SourceClip.id)).all()
    if not rows:
        raise ModelRunError(f"stimulus set {stimulus_set!r} holds no TRA sweep clips "
                            f"(split {TRA_SPLIT!r}); 'manage.py stimuli generate' makes them")
    return [SweepClip(clip.clip_key, str(root / stimulus.path), stimulus.sha256,
                      **sweep_labels(clip.params or {})) for clip, stimulus in rows]


def model_subject(study_id: int, model_id: str) -> Subject:
    subject = db.session.scalar(select(Subject).where(
        Subject.study_id == study_id, Subject.kind == MODEL_KIND,
        Subject.external_id == model_id))
    if subject is None:
        subject = Subject(study_id=study_id, kind=MODEL_KIND, external_id=model_id,
                          recruitment={"source": "run-models"})
        db.session.add(subject)
        db.session.flush()
    return subject


def store_run(slug: str, model_id: str, rows: list[dict], seed: int, provenance: dict,
              item_keys: list[str], run_key: str) -> tuple[Session, int]:
    """Store a run's rows in the model's session for ``run_key``; returns (session, added).

    ``rows[i]["trial_index"]`` indexes ``item_keys``.  Items already stored in that session
    are skipped; the session's schedule is every item key ever asked of it, so it is
    ``completed`` once each has a trial and ``incomplete`` (with ``failures``) until then.
    """
    study = require_study(slug)
    try:
        subject = model_subject(study.id, model_id)
        session = _run_session(subject, run_key, seed)
        schedule = list(session.schedule or [])
        position = {key: index for index, key in enumerate(schedule)}
        for key in item_keys:
            if key not in position:
                position[key] = len(schedule)
                schedule.append(key)
        stored = set(db.session.scalars(select(Trial.trial_index)
                                        .where(Trial.session_id == session.id)))
        added = []
        for row in rows:
            index = position[item_keys[row["trial_index"]]]
            if index not in stored:
                stored.add(index)
                added.append(_trial(session.id, {**row, "trial_index": index}))
        db.session.add_all(added)
        failures = [error for error in provenance.get("counts", {}).get("errors", [])
                    if position.get(error.get("item")) not in stored]
        now = utcnow()
        session.schedule = schedule
        session.device_info = {**provenance, "run_key": run_key, "failures": failures}
        session.status = "completed" if len(stored) == len(schedule) else "incomplete"
        session.last_seen_at = now
        session.completed_at = now if session.status == "completed" else None
        db.session.commit()
    except BaseException:
        db.session.rollback()
        raise
    return session, len(added)


def _run_session(subject: Subject, run_key: str, seed: int) -> Session:
    """The subject's session for ``run_key``, or a new one (flushed, so it has an id)."""
    sessions = db.session.scalars(select(Session).where(Session.subject_id == subject.id)
                                  .order_by(Session.session_number)).all()
    for session in sessions:
        if (session.device_info or {}).get("run_key") == run_key:
            return session
    now = utcnow()
    session = Session(subject_id=subject.id, token=secrets.token_urlsafe(24),
                      session_number=(sessions[-1].session_number + 1) if sessions else 1,
                      seed=seed, status="incomplete",
                      schedule=[], condition={}, device_info={"run_key": run_key},
                      started_at=now, last_seen_at=now)
    db.session.add(session)
    db.session.flush()
    return session


def _trial(session_id: int, row: dict) -> Trial:
    def text(value):
        # Frame orders are lists; the Text columns hold them as JSON (analysis/columns.py).
        return value if value is None or isinstance(value, str) else json.dumps(value)

    return Trial(session_id=session_id, client_uuid=str(uuid.uuid4()),
                 trial_index=row["trial_index"], trial_type=row["trial_type"], block=row["block"],
                 stimulus_id=row["stimulus_id"], direction=row["direction"],
                 correct_response=text(row["correct_response"]), response=text(row["response"]),
                 correct=row["correct"], rt_ms=row["rt_ms"], onset_method=row["onset_method"],
                 dropped_frames=row["dropped_frames"], excluded=row["excluded"],
                 exclusion_reasons=row["exclusion_reasons"], extra=row["extra"])
