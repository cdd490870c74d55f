"""Storing a model run (webapp.model_runs.store_run): one session and one ModelRun per run
identity, trials through the one trial writer, provenance in its own table."""
from pathlib import Path

from sqlalchemy import func, select

from analysis.vlm.backends.base import GenerationParams
from analysis.vlm.run import RunResult
from analysis.vlm.run_config import RunConfig
from analysis.vlm.tasks import TaskSpec
from webapp import model_runs
from webapp.extensions import db
from webapp.models import ModelRun, Session, Trial
from webapp.researcher.roster import roster_frame

MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"
BACKEND = {"backend": "hf", "model": MODEL, "weights_sha256": "ab" * 32, "dtype": "float32"}


def _result(item_keys, errors=(), run_key="k" * 64) -> RunResult:
    """A run asked ``item_keys``; those named by ``errors`` failed (no row)."""
    failed = {error["item"] for error in errors}
    rows = [{"trial_index": i, "trial_type": "aot", "block": None, "stimulus_id": None,
             "direction": "forward", "correct_response": "F", "response": "F", "correct": True,
             "rt_ms": None, "onset_method": None, "dropped_frames": None, "excluded": False,
             "exclusion_reasons": [], "extra": {"label_order": "FB"}}
            for i, key in enumerate(item_keys) if key not in failed]
    manifest = {"run_id": "20261125T000000-abcdef", "started_at": "2026-11-25T00:00:00+00:00",
                "finished_at": "2026-11-25T00:01:00+00:00", "git_commit": "c0ffee",
                "timing": {"load_backend_s": 1.0}, "backend": BACKEND,
                "counts": {"total": len(item_keys), "cached": 0, "computed": len(rows),
                           "errors": list(errors)}}
    return RunResult(rows, list(item_keys), manifest, Path("runs"), run_key)


def _config() -> RunConfig:
    return RunConfig("hf", MODEL, TaskSpec(fps=2.0, seed=5), GenerationParams(seed=5))


KEYS = ["aot:1:FB", "aot:2:FB"]
FAILED = {"item": "aot:2:FB", "error": "CUDA out of memory", "transient": True}


def test_a_rerun_of_the_same_run_identity_adds_no_duplicate_trials(app, factory):
    study = factory.study()
    with app.app_context():
        session, run, added = model_runs.store_run(study.slug, _config(), _result(KEYS, [FAILED]))
        assert added == 1 and session.status == "incomplete" and run.failures == [FAILED]
        session, run, added = model_runs.store_run(study.slug, _config(), _result(KEYS))
        assert added == 1 and session.status == "completed" and run.failures == []
        _, _, added = model_runs.store_run(study.slug, _config(), _result(KEYS))
        assert added == 0
        assert db.session.scalar(select(func.count()).select_from(Trial)) == 2
        assert db.session.scalar(select(func.count()).select_from(Session)) == 1
        assert db.session.scalar(select(func.count()).select_from(ModelRun)) == 1
        assert sorted(db.session.scalars(select(Trial.trial_index))) == [0, 1]
        other, _, added = model_runs.store_run(study.slug, _config(),
                                               _result(KEYS, run_key="o" * 64))
        assert added == 2 and other.id != session.id  # another identity is another run


def test_provenance_is_stored_in_model_run_and_read_from_there(app, factory):
    study = factory.study()
    with app.app_context():
        session, run, _ = model_runs.store_run(study.slug, _config(), _result(KEYS, [FAILED]))
        assert session.device_info == {} and session.schedule == []  # people's fields
        assert (run.revision, run.weights_sha256) == ("ab" * 6, "ab" * 32)
        assert run.params["seed"] == 5 and run.sampling["fps"] == 2.0
        assert run.task["task"] == "aot" and run.counts["computed"] == 1
        assert run.item_keys == KEYS and run.run_id == "20261125T000000-abcdef"
        roster = roster_frame(study.slug)
    row = roster.iloc[0]
    assert row["subject_kind"] == "model" and row["n_trials_scheduled"] == 2
    assert row["n_trials_stored"] == 1 and row["device_info"]["run_key"] == "k" * 64
    assert row["device_info"]["backend"]["dtype"] == "float32"
    assert row["device_info"]["failures"] == [FAILED]


def test_sweep_clips_are_read_through_the_stimulus_catalog(app, monkeypatch):
    # One reader of a set's stimuli (webapp.stimuli.catalog), also for TRA sweep clips.
    from experiments.catalog_records import ClipRecord, StimulusRecord
    from experiments.synthetic import TRA_SPLIT
    from webapp.stimuli import catalog

    def clip(clip_id, split):
        forward = StimulusRecord(clip_id * 10, f"p{clip_id}", "clip", direction="forward",
                                 path=f"/stimuli/{clip_id}.mp4", sha256=str(clip_id) * 64)
        return ClipRecord(clip_id, f"clip{clip_id}", ("Fall",), (forward,), split=split,
                          params={"scenario": "pendulum", "damping": 2.0})

    read = []
    monkeypatch.setattr(catalog, "clip_records", lambda connection, name: read.append(name)
                        or (clip(2, TRA_SPLIT), clip(1, "main"), clip(3, TRA_SPLIT)))
    with app.app_context():
        clips = model_runs.sweep_clips("synthetic")
    assert read == ["synthetic"]
    assert [(c.clip_key, c.path, c.sha256[0]) for c in clips] == [
        ("clip2", "/stimuli/2.mp4", "2"), ("clip3", "/stimuli/3.mp4", "3")]
