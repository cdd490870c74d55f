"""``run-models`` from request to stored trials: the stimuli a model is asked about, the run,
and its trials stored beside people's.

A model is a ``Subject`` of kind "model" in the study; each run identity (``run_key``:
model, revision and every setting that can change an answer) is one ``Session`` holding its
trials, with its provenance in a :class:`~webapp.models.ModelRun`.  A rerun of the same
identity adds the items its session lacks, never a second copy; a session that still lacks
items is ``incomplete`` and its ``ModelRun`` lists the failures.  Each store is one
transaction, and trials go through the one trial writer people's trials take.
"""
from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from flask import current_app
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError, OperationalError

from analysis.probes.run import SweepClip
from analysis.vlm.backends import backend_entry
from analysis.vlm.backends.base import BackendError
from analysis.vlm.ordering_options import study_options
from analysis.vlm.run import RunResult, execute_run, run_file_text
from analysis.vlm.run_config import (
    RunConfig,
    check_model_source,
    effective_scoring,
    protocol_records,
    run_config,
)
from analysis.vlm.runner import model_revision
from analysis.vlm.tasks import design_task
from experiments.benchmarks import check_benchmark
from experiments.catalog_records import Catalog
from experiments.designs import Design
from experiments.schedule import design_trials
from experiments.trial_types import TRIAL_TYPES
from webapp.extensions import db
from webapp.models import ModelRun, Session, Subject, Trial
from webapp.models._types import utcnow
from webapp.participant.store import insert_trials
from webapp.researcher.studies import require_study
from webapp.stimuli import catalog

MODEL_KIND = "model"


class ModelRunError(ValueError):
    """A run request that cannot be served (unknown set or study, contradicting options)."""


class RunFailed(Exception):
    """A run that started and failed, said in one line (what failed, why, what to do)."""


@dataclass
class RunOutcome:
    result: RunResult
    missing: list[str]  # protocol items that are not imported
    session: Session | None = None  # where the trials are stored (runs on a study)
    model_run: ModelRun | None = None
    added: int = 0


def run_models(options: Mapping, progress: bool = True, run_file: dict | None = None
               ) -> RunOutcome:
    """Run what ``run-models`` was asked (options keyed like its flags) and store the trials
    of a run on a study.  ``run_file``: the run's fields as a run file names them, kept with
    the run (its model replaced by the model's one spelling).

    Raises
    ------
    ModelRunError
        Before anything runs, for a request that cannot be served.
    RunFailed
        For a model, device, server or database failure.
    """
    try:
        if options["benchmark"]:
            options = {**options, "benchmark": check_benchmark(options["benchmark"])}
        stimulus_set = resolve_set(options["stimulus_set"], options["study"],
                                   options["benchmark"])
        design = None
        if options["study"]:
            design = Design.from_snapshot(require_study(options["study"]))
            options = study_options(options, design_task(
                design.name, design.task, TRIAL_TYPES[design.task].MODEL_TASK,
                options.get("task")), design.name)
        config = run_config(options)
        check_model_source(config)
        records = catalog.stimulus_records(db.session.connection(), stimulus_set)
        if not records:
            raise ModelRunError(f"stimulus set {stimulus_set!r} holds no stimuli")
        demos = {r.item_id: r for r in records if r.item_id}
        trials = None
        if design is not None:
            trials = design_trials(design, Catalog(catalog.clip_records(
                db.session.connection(), stimulus_set)), config.spec.seed)
            records = [r for r in records if r.id in {t["stimulus_id"] for t in trials}]
        records, missing = protocol_records(config, records)
    except ValueError as error:
        raise ModelRunError(str(error)) from error
    if trials is not None:  # a protocol keeps only its own items
        kept = {r.id for r in records}
        trials = [t for t in trials if t["stimulus_id"] in kept]
    if run_file is not None:
        run_file = {**run_file, "model": config.model}
    result = _execute(config, records, demos, progress, trials, run_file)
    outcome = RunOutcome(result, missing)
    if options["study"]:
        outcome.session, outcome.model_run, outcome.added = store_run(
            options["study"], config, result)
    return outcome


def resolve_set(stimulus_set: str | None, slug: str | None, benchmark: str | None = None) -> str:
    """The stimulus set of ``study``, else ``stimulus_set`` (checked to exist), else the
    benchmark's own set."""
    if slug:
        study = require_study(slug)
        if stimulus_set and stimulus_set != study.stimulus_set:
            raise ModelRunError(f"study {slug!r} uses set {study.stimulus_set!r}, "
                                f"not {stimulus_set!r}")
        return study.stimulus_set
    if not stimulus_set and benchmark:
        return benchmark  # an imported benchmark's set is named after it
    if not stimulus_set:
        raise ModelRunError("give --study or --set")
    if stimulus_set not in catalog.stimulus_sets():
        raise ModelRunError(f"unknown stimulus set {stimulus_set!r}")
    return stimulus_set



def _execute(config: RunConfig, records, demos, progress: bool,
             trials: list[dict] | None, run_file: dict | None) -> RunResult:
    """``execute_run``, its failures said in one line each."""
    instance = Path(current_app.instance_path)
    try:
        return execute_run(config, records, demos, instance / "model_cache.sqlite3",
                           instance / "model_runs", progress=progress, trials=trials,
                           run_file=run_file)
    except (ValueError, BackendError) as error:
        raise RunFailed(str(error)) from error
    except OSError as error:  # a model that cannot be found or loaded, a stimulus file
        raise RunFailed(_os_failure(config.model, error)) from error
    except ImportError as error:
        raise RunFailed(f"--backend {config.backend} needs {error.name or error}, which is "
                        f"not installed: pip install -e '.[{backend_entry(config.backend).extra}]'"
                        ) from error


def _os_failure(model: str, error: OSError) -> str:
    text = " ".join(str(error).split())
    if "couldn't connect" in text or "offline" in text.lower():
        offline = " and the hub is offline (HF_HUB_OFFLINE)" if os.environ.get(
            "HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on") else ""
        return (f"cannot load model {model!r}: it is not a local folder, not in the local hub "
                f"cache{offline}; check the id, download it first (huggingface-cli download "
                f"{model}) or give its folder")
    if "not a valid model identifier" in text or "Repository Not Found" in text:
        return (f"cannot load model {model!r}: no such local folder and no such model on the "
                "hub; check the id (and HF_TOKEN for a gated or private model)")
    return f"{type(error).__name__}: {text[:300]}"


def sweep_clips(stimulus_set: str) -> list[SweepClip]:
    """The set's TRA sweep clips (split ``tra-sweep``), each with its forward stimulus."""
    from experiments.synthetic import TRA_SPLIT, sweep_labels

    clips = sorted((clip for clip in catalog.clip_records(db.session.connection(), stimulus_set)
                    if clip.split == TRA_SPLIT and clip.clip("forward") is not None),
                   key=lambda clip: clip.id)
    if not clips:
        raise ModelRunError(f"stimulus set {stimulus_set!r} holds no TRA sweep clips "
                            f"(split {TRA_SPLIT!r}); 'manage.py stimuli generate' makes them")
    return [SweepClip(clip.clip_key, forward.path, forward.sha256, **sweep_labels(dict(clip.params)))
            for clip in clips if (forward := clip.clip("forward")) is not None]


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


def store_run(slug: str, config: RunConfig, result: RunResult
              ) -> tuple[Session, ModelRun, int]:
    """Store a run's rows in the model's session for its run key; returns (session, model
    run, trials added).

    ``result.rows[i]["trial_index"]`` indexes ``result.item_keys``.  Items already stored in
    that session are skipped; the run's ``item_keys`` are every item ever asked of it, so
    the session is ``completed`` once each has a trial and ``incomplete`` until then.  Its
    provenance, ledger and run file are those of the last run that computed an answer.
    """
    study = require_study(slug)
    try:
        session, run = _run_session(model_subject(study.id, config.model), config, result)
        keys = list(run.item_keys or [])
        position = {key: index for index, key in enumerate(keys)}
        for key in result.item_keys:
            if key not in position:
                position[key] = len(keys)
                keys.append(key)
        stored = set(db.session.scalars(select(Trial.trial_index)
                                        .where(Trial.session_id == session.id)))
        added = []
        for row in result.rows:
            index = position[result.item_keys[row["trial_index"]]]
            if index not in stored:
                stored.add(index)
                added.append({**row, "session_id": session.id, "trial_index": index})
        insert_trials(db.session.connection(), added)
        failures = [error for error in result.manifest["counts"]["errors"]
                    if position.get(error.get("item")) not in stored]
        # A rerun that computed nothing (every item from the cache) keeps the provenance,
        # ledger and run file of the run that computed them.
        if result.manifest["counts"]["computed"] or run.run_id is None:
            _record_provenance(run, config, result, failures)
        run.failures, run.item_keys = failures, keys
        now = utcnow()
        session.status = "completed" if len(stored) == len(keys) else "incomplete"
        session.last_seen_at = now
        session.completed_at = now if session.status == "completed" else None
        db.session.commit()
    except (OperationalError, IntegrityError) as error:  # another run writing the same rows
        db.session.rollback()
        raise RunFailed(f"the answers are cached but could not be stored ({error.orig}); "
                        "rerun the same command: it reads them from the cache and stores "
                        "them") from None
    except BaseException:
        db.session.rollback()
        raise
    return session, run, len(added)


def _run_session(subject: Subject, config: RunConfig, result: RunResult
                 ) -> tuple[Session, ModelRun]:
    """The subject's session and model run for the run key, or new ones (flushed)."""
    found = db.session.execute(
        select(Session, ModelRun).join(ModelRun, ModelRun.session_id == Session.id)
        .where(Session.subject_id == subject.id, ModelRun.run_key == result.run_key)).first()
    if found is not None:
        return found.Session, found.ModelRun
    last = db.session.scalar(select(Session.session_number).where(
        Session.subject_id == subject.id).order_by(Session.session_number.desc()).limit(1))
    now = utcnow()
    session = Session(subject_id=subject.id, token=secrets.token_urlsafe(24),
                      session_number=(last or 0) + 1, seed=config.spec.seed,
                      status="incomplete", started_at=now, last_seen_at=now)
    run = ModelRun(session=session, run_key=result.run_key, model=config.model,
                   item_keys=[], created_at=now)
    db.session.add_all([session, run])
    db.session.flush()
    return session, run


def model_run_files(study_id: int) -> dict[str, bytes]:
    """``model_run_<session id>.toml``: the run file of each model session, beside its trials
    (``run-models --config`` of it runs the same run again)."""
    manifests = db.session.execute(
        select(Session.id, ModelRun.manifest).join(ModelRun, ModelRun.session_id == Session.id)
        .join(Subject, Subject.id == Session.subject_id).where(Subject.study_id == study_id)
        .order_by(Session.id)).all()
    return {f"model_run_{session_id}.toml": run_file_text(manifest).encode()
            for session_id, manifest in manifests if (manifest or {}).get("run_file")}


def _record_provenance(run: ModelRun, config: RunConfig, result: RunResult,
                       failures: list[dict]) -> None:
    """The latest run's provenance on the stored run."""
    manifest, description = result.manifest, result.manifest["backend"]
    run.revision = model_revision(description)
    run.backend = description
    run.weights_sha256 = description.get("weights_sha256")
    run.params = config.params.to_dict()
    run.sampling = config.spec.sampling()
    run.task = asdict(config.spec)
    run.scoring = effective_scoring(config)
    run.timing = {**manifest["timing"], "started_at": manifest["started_at"],
                  "finished_at": manifest.get("finished_at")}
    run.counts = manifest["counts"]
    run.ledger = manifest.get("ledger") or {}  # none in a manifest written before the ledger
    run.run_id = manifest["run_id"]
    run.git_commit = manifest.get("git_commit")
    # The whole manifest as the run wrote it (status, host, cache, every config field),
    # beside the typed columns above.
    run.manifest = {**manifest, "run_key": result.run_key, "failures": failures}
    run.updated_at = utcnow()
