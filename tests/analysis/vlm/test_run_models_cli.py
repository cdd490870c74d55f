"""``manage.py run-models`` end to end: stimuli from the database, trials back into it."""
import json
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select

from webapp.extensions import db
from webapp.models import ModelRun, Session, Subject, Trial
from webapp.researcher import studies


@pytest.fixture
def study(app, stimulus_set):
    with app.app_context():
        studies.create_study("tiny-study", "arrow-of-time", stimulus_set)
    return "tiny-study"


def _provenance(session) -> ModelRun:
    return db.session.scalar(select(ModelRun).where(ModelRun.session_id == session.id))


def _run(runner, model, *args):
    return runner.invoke(args=["run-models", "--model", model, "--no-progress",
                               "--max-new-tokens", "4", "--fps", "4", *args])


def test_run_models_stores_model_trials_and_resumes_from_cache(app, runner, study, tiny_model):
    model = tiny_model("qwen2_5_vl")
    result = _run(runner, model, "--study", study, "--label-orders", "FB,BF", "--seed", "5")
    assert result.exit_code == 0, result.output
    assert "8 trials (0 cached, 8 computed, 0 errors" in result.output
    with app.app_context():
        subject = db.session.scalar(select(Subject).where(Subject.kind == "model"))
        assert subject.external_id == model
        session = db.session.scalar(select(Session).where(Session.subject_id == subject.id))
        assert session.seed == 5 and session.status == "completed"
        run = _provenance(session)
        assert run.weights_sha256 and run.backend["weights_sha256"] == run.weights_sha256
        assert run.counts["computed"] == 8 and len(run.item_keys) == 8
        assert session.device_info == {} and session.schedule == []  # people's fields
        trials = db.session.scalars(select(Trial).where(Trial.session_id == session.id)).all()
        assert len(trials) == 8 and {t.trial_type for t in trials} == {"aot"}
        assert {t.extra["label_order"] for t in trials} == {"FB", "BF"}
        for trial in trials:
            assert trial.correct_response == ("F" if trial.direction == "forward" else "B")
            assert 0 <= trial.extra["p_forward"] <= 1 and "raw_text" in trial.extra
            assert trial.extra["parse_status"] in ("ok", "unparseable")
            assert (trial.response is None) == (trial.extra["parse_status"] == "unparseable")
    again = _run(runner, model, "--study", study, "--label-orders", "FB,BF", "--seed", "5")
    assert "8 trials (8 cached, 0 computed" in again.output
    assert "Stored 0 new trials" in again.output
    with app.app_context():  # the same run again adds nothing
        assert len(db.session.scalars(select(Session)).all()) == 1
        assert len(db.session.scalars(select(Trial)).all()) == 8
    other = _run(runner, model, "--study", study, "--label-orders", "FB,BF", "--seed", "6")
    assert other.exit_code == 0, other.output
    with app.app_context():  # another seed is another run
        assert len(db.session.scalars(select(Session)).all()) == 2


def test_a_rerun_completes_a_partly_failed_run_and_never_duplicates_it(
        app, runner, study, tiny_model, monkeypatch):
    from analysis.vlm.runner import Runner

    model = tiny_model("qwen2_5_vl")
    call = Runner._call
    broken = {"on": True}

    def failing_for_one_item(self, kind, items):
        if broken["on"] and any(i.stimulus.direction == "backward" and i.stimulus.source_clip_id
                                == min(r.stimulus.source_clip_id for r in items) for i in items):
            raise RuntimeError("CUDA out of memory (scripted)")
        return call(self, kind, items)

    monkeypatch.setattr(Runner, "_call", failing_for_one_item)
    first = _run(runner, model, "--study", study)
    assert first.exit_code == 1 and "items failed" in first.output
    with app.app_context():
        session = db.session.scalar(select(Session))
        assert session.status == "incomplete" and session.completed_at is None
        stored = db.session.scalars(select(Trial).where(Trial.session_id == session.id)).all()
        run = _provenance(session)
        assert 0 < len(stored) < 4 and len(run.item_keys) == 4
        assert run.failures
        assert all("out of memory" in f["error"] for f in run.failures)
    broken["on"] = False
    second = _run(runner, model, "--study", study)
    assert second.exit_code == 0, second.output
    with app.app_context():
        sessions = db.session.scalars(select(Session)).all()
        assert len(sessions) == 1 and sessions[0].status == "completed"
        assert _provenance(sessions[0]).failures == []
        trials = db.session.scalars(select(Trial)).all()
        assert len(trials) == 4 and len({t.stimulus_id for t in trials}) == 4
        assert sorted(t.trial_index for t in trials) == [0, 1, 2, 3]
    third = _run(runner, model, "--study", study)
    assert third.exit_code == 0 and "Stored 0 new trials" in third.output
    with app.app_context():
        assert len(db.session.scalars(select(Trial)).all()) == 4


def test_run_models_writes_manifest_and_frame_order_rows(app, runner, study, tiny_model):
    result = runner.invoke(args=[
        "run-models", "--model", tiny_model("qwen2_5_vl"), "--no-progress", "--set", "tiny",
        "--task", "frame_order", "--n-frames", "4", "--max-new-tokens", "4"])
    assert result.exit_code == 0, result.output
    folder = Path(result.output.strip().split("run folder ")[1].split()[0])
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "finished" and manifest["counts"]["total"] == 2
    assert manifest["config"]["spec"]["task"] == "frame_order"
    rows = [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]
    assert [r["trial_type"] for r in rows] == ["frame_order", "frame_order"]
    for row in rows:
        assert sorted(row["correct_response"]) == [1, 2, 3, 4]
        assert row["extra"]["condition"] == "4 frames, brief annotation"


@pytest.mark.parametrize("args, message", [
    (["--study", "tiny-study", "--setting", "three-shot"], "'three-shot' is not one of 'zero-shot'"),
    (["--set", "nope"], "unknown stimulus set"),
    (["--study", "tiny-study", "--label-orders", "FX"], "label orders"),
    (["--study", "tiny-study", "--label-orders", "FB,FB"],
     "label order FB is given twice in --label-orders FB,FB"),
    ([], "give --study or --set"),
    (["--set", "tiny", "--backend", "openai"], "--base-url"),
    (["--study", "tiny-study", "--thinking-budget", "5"], "--thinking-budget needs --thinking on"),
    (["--study", "tiny-study", "--budget", "lots"], "expected tokens or money"),
    (["--study", "tiny-study", "--thinking", "on", "--scoring", "logits"],
     "before any reasoning"),
    # A batch is sent whole: a budget it ignored spent 3,432 of 1,000 tokens (outside review).
    (["--study", "tiny-study", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
      "--batch-api", "--budget", "1000tok"], "--budget cannot stop a --batch-api run"),
])
def test_bad_requests_are_usage_errors(runner, study, tiny_model, args, message):
    result = _run(runner, tiny_model("qwen2_5_vl"), *args)
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output


def test_few_shot_without_demonstration_clips_is_a_clear_error(runner, study, tiny_model):
    result = _run(runner, tiny_model("qwen2_5_vl"), "--study", "tiny-study", "--setting", "few-shot-4")
    assert result.exit_code == 1 and "needs demonstration clips" in result.output


def test_every_option_has_help_text():
    from webapp.cli.models import run_models

    missing = [p.name for p in run_models.params if not getattr(p, "help", None)]
    assert missing == []


def test_a_model_outside_the_papers_families_gets_the_documented_default_fps(
        app, runner, study, tiny_model):
    # The tiny model's folder names no family: 2 fps, as --help says, instead of an error.
    result = runner.invoke(args=["run-models", "--model", tiny_model("qwen2_5_vl"),
                                 "--no-progress", "--max-new-tokens", "2", "--set", "tiny",
                                 "--limit", "1"])
    assert result.exit_code == 0, result.output
    folder = Path(result.output.strip().split("run folder ")[1].split()[0])
    assert json.loads((folder / "manifest.json").read_text())["config"]["spec"]["fps"] == 2.0


def test_stored_model_trials_carry_the_weights_revision(app, runner, study, tiny_model):
    from analysis.vlm.provenance import weights_fingerprint

    model = tiny_model("qwen2_5_vl")
    result = _run(runner, model, "--study", study, "--limit", "2", "--scoring", "logits")
    assert result.exit_code == 0, result.output
    with app.app_context():
        revisions = {t.extra["revision"] for t in db.session.scalars(select(Trial))}
    assert revisions == {weights_fingerprint(model)[:12]}


def test_a_run_in_another_precision_is_another_run(app, runner, study, tiny_model):
    model = tiny_model("qwen2_5_vl")
    first = _run(runner, model, "--study", study, "--limit", "2", "--dtype", "float32")
    assert first.exit_code == 0, first.output
    second = _run(runner, model, "--study", study, "--dtype", "bfloat16")
    assert second.exit_code == 0, second.output
    with app.app_context():
        sessions = db.session.scalars(select(Session).order_by(Session.id)).all()
        # Never one session mixing float32 and bfloat16 answers under one provenance.
        runs = [_provenance(s) for s in sessions]
        assert [r.backend["dtype"] for r in runs] == ["float32", "bfloat16"]
        assert [len(r.item_keys) for r in runs] == [2, 4]


def test_runs_that_answer_differently_are_two_observers(app, runner, study, tiny_model):
    """Runs at 4 and at 2 frames per second were pooled into one observer in every report
    table (outside review): each run's identity travels with its rows, so they are two
    observers named by what differs; a rerun in another batch size is the same one."""
    from analysis.observers import observer_ids, observer_table
    from webapp.trials import trials_frame

    model = tiny_model("qwen2_5_vl")
    for args in (("--fps", "4"), ("--fps", "2"), ("--fps", "4", "--batch-size", "1")):
        result = _run(runner, model, "--study", study, "--limit", "2", "--scoring", "logits",
                      *args)
        assert result.exit_code == 0, result.output
    assert "2 trials (2 cached, 0 computed" in result.output  # the batch size changes nothing
    with app.app_context():
        trials = trials_frame(study)
    assert len(trials) == 4
    names = observer_ids(trials)
    assert sorted(set(names)) == [f"{model} / fps 2", f"{model} / fps 4"]
    assert [names[trials["extra"].map(lambda e: e["metadata_fps"]) == fps].nunique()
            for fps in (2, 4)] == [1, 1]
    labels = observer_table(trials)["label"]
    assert sorted(labels.str.split(", ").str[-1]) == ["fps 2", "fps 4"]


def test_label_orders_are_a_set_permuted_orders_are_one_run(app, runner, study, tiny_model):
    """FB,BF and BF,FB made two sessions whose items the report pooled twice (outside
    review): the orders are a set, so the second asks nothing and stores nothing."""
    model = tiny_model("qwen2_5_vl")
    for orders in ("FB,BF", "BF,FB"):
        result = _run(runner, model, "--study", study, "--limit", "2", "--scoring", "logits",
                      "--label-orders", orders)
        assert result.exit_code == 0, result.output
    assert "2 trials (2 cached, 0 computed" in result.output
    assert "Stored 0 new trials" in result.output
    with app.app_context():
        assert len(db.session.scalars(select(Session)).all()) == 1


def test_a_scoring_that_changes_nothing_is_the_same_run(app, runner, ordering_study,
                                                        tiny_model):
    model = tiny_model("qwen2_5_vl")
    for scoring in ("both", "generate"):  # frame orders are never logit-scored
        result = runner.invoke(args=[
            "run-models", "--model", model, "--no-progress", "--study", ordering_study,
            "--limit", "2", "--max-new-tokens", "4", "--scoring", scoring])
        assert result.exit_code == 0, result.output
    assert "Stored 0 new trials" in result.output
    with app.app_context():
        assert len(db.session.scalars(select(Session)).all()) == 1


@pytest.mark.parametrize("value", ["gpu", "CPU", "cuda:x"])
def test_a_mistyped_device_is_a_usage_error(runner, study, tiny_model, value):
    result = _run(runner, tiny_model("qwen2_5_vl"), "--study", study, "--device", value)
    assert result.exit_code == 2 and "use auto, cpu, cuda or cuda:N" in result.output


@pytest.fixture
def ordering_study(app, stimulus_set):
    with app.app_context():
        studies.create_study("tiny-order", "frame-ordering", stimulus_set)
    return "tiny-order"


def _design_trials(slug: str, seed: int) -> list[dict]:
    from experiments.catalog_records import Catalog
    from experiments.designs import Design
    from experiments.schedule import design_trials
    from webapp.stimuli import catalog

    design = Design.from_snapshot(studies.require_study(slug))
    clips = catalog.clip_records(db.session.connection(), design_study_set(slug))
    return design_trials(design, Catalog(clips), seed)


def design_study_set(slug: str) -> str:
    return studies.require_study(slug).stimulus_set


def test_a_frame_ordering_study_asks_models_its_scheduled_trials(
        app, runner, ordering_study, tiny_model):
    # The study's own task by default, items built from design_trials: each trial's frames
    # in its presented order, its hints and its condition's name, as a participant sees it.
    result = runner.invoke(args=["run-models", "--model", tiny_model("qwen2_5_vl"),
                                 "--no-progress", "--study", ordering_study, "--seed", "3",
                                 "--max-new-tokens", "4", "--limit", "9"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        scheduled = _design_trials(ordering_study, 3)[:9]
        session = db.session.scalar(select(Session))
        assert session.status == "completed"
        stored = db.session.scalars(select(Trial).order_by(Trial.trial_index)).all()
        assert len(stored) == 9 and {t.trial_type for t in stored} == {"frame_order"}
        for trial, row in zip(scheduled, stored):
            assert row.stimulus_id == trial["stimulus_id"] and row.direction is None
            assert row.extra["condition"] == trial["condition"]  # people's names, e.g. "4 frames"
            assert row.extra["presented_frames"] == trial["frames"]
            assert row.extra["hint_frames"] == trial["hint_labels"]
            assert json.loads(row.correct_response) == json.loads(trial["correct_response"])
        assert {t["condition"] for t in scheduled} == {r.extra["condition"] for r in stored}


def test_a_frame_order_item_shows_the_trials_frames_hints_and_annotation(clips, tmp_path):
    from PIL import Image

    from analysis.vlm.tasks import TaskSpec, trial_items
    from experiments.catalog_records import StimulusRecord

    folder = tmp_path / "set"
    folder.mkdir()
    for i in range(4):  # frame i is a flat grey of level 60 * i
        Image.fromarray(np.full((8, 8, 3), 60 * i, np.uint8)).save(folder / f"frame_{i}.png")
    record = StimulusRecord(7, "p7", "frame_set", frame_indices=(0, 5, 10, 15),
                            meta={"span": "medium"}, source_clip_id=1, path=str(folder),
                            clip_fps=12.0, clip_frame_count=24)
    trial = {"trial_type": "frame_order", "trial_index": 0, "stimulus_id": 7,
             "frames": [0, 3, 2, 1], "condition": "hint 1&3", "span": "medium",
             "annotation_level": "brief", "hint_labels": [1, 3],
             "correct_response": json.dumps([1, 4, 3, 2]),
             "params": {"n_frames": 4, "presented_order": [0, 1, 2, 3],
                        "hint_positions": [0, 2], "annotation": "A grey card.",
                        "condition": "hint 1&3"}}
    item, = trial_items([trial], [record], TaskSpec(task="frame_order", image_size=None))
    assert [int(v.frames[0, 0, 0, 0]) for v in item.request.visuals] == [0, 180, 120, 60]
    assert item.correct_response == [1, 4, 3, 2] and item.extra["condition"] == "hint 1&3"
    assert item.extra["hint_frames"] == [1, 3]
    text = json.dumps(item.request.messages)
    assert "A grey card." in text


def test_a_task_the_studys_design_cannot_ask_is_a_clear_error(runner, ordering_study,
                                                              tiny_model):
    result = _run(runner, tiny_model("qwen2_5_vl"), "--study", ordering_study, "--task", "aot")
    assert result.exit_code == 2, result.output
    assert "'frame-ordering'" in result.output and "'frame_order'" in result.output
    assert "Traceback" not in result.output


def test_options_the_studys_trials_set_are_refused(runner, ordering_study, tiny_model):
    result = _run(runner, tiny_model("qwen2_5_vl"), "--study", ordering_study,
                  "--hints", "1&3")
    assert result.exit_code == 2 and "--hints" in result.output
    assert "Traceback" not in result.output


def test_a_run_of_no_items_is_an_error_never_completed(tmp_path):
    from analysis.vlm.backends.base import GenerationParams
    from analysis.vlm.run import execute_run
    from analysis.vlm.run_config import RunConfig
    from analysis.vlm.tasks import TaskSpec

    config = RunConfig("hf", "no-such-model", TaskSpec(fps=2.0), GenerationParams())
    with pytest.raises(ValueError, match="nothing to run"):
        execute_run(config, [], {}, tmp_path / "cache.sqlite3", tmp_path / "runs",
                    progress=False)
    manifest, = (tmp_path / "runs").glob("*/manifest.json")
    assert json.loads(manifest.read_text())["status"] == "failed"


@pytest.mark.parametrize("args, code", [
    (["--n-frames", "2"], 2),  # refused before anything runs
    ([], 1),  # stored 2-frame sets: refused when their items are built
])
def test_hints_that_leave_nothing_to_order_are_a_clear_error(runner, stimulus_set, tiny_model,
                                                             args, code):
    result = runner.invoke(args=["run-models", "--model", tiny_model("qwen2_5_vl"),
                                 "--no-progress", "--set", "tiny", "--task", "frame_order",
                                 "--hints", "1&3", "--max-new-tokens", "2", *args])
    assert result.exit_code == code, result.output
    assert "--hints 1&3 gives away positions" in result.output
    assert "Traceback" not in result.output and "IndexError" not in result.output
