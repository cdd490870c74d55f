"""``manage.py probe tra`` end to end: the sweep clips of a stored set through a tiny random
VideoMAE saved as a checkpoint, cached, and read back by ``manage.py report --tra``."""
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis import loading, simulate
from analysis.vlm.cache import ResultCache
from experiments.media import encode_browser_mp4
from experiments.stimuli import ClipSpec
from tests.factories import moving_square
from webapp.researcher import studies
from webapp.stimuli import catalog


@pytest.fixture
def sweep_study(app, tmp_path):
    specs = [ClipSpec("plain", _clip(tmp_path, "plain", 1), ["Fall"], "A square slides.")]
    for damping in (0.0, 2.0):
        specs.append(ClipSpec(f"tra-pendulum-d{damping}", _clip(tmp_path, damping, 2),
                              ["Reciprocal"], "A pendulum swings.", split="tra-sweep",
                              params={"scenario": "pendulum", "damping": damping}))
    with app.app_context():
        catalog.import_clips(specs, "sweeps", Path(app.config["STIMULUS_ROOT"]))
        studies.create_study("sweep-study", "arrow-of-time", "sweeps")
    return "sweep-study"


def _clip(folder, name, seed):
    path = folder / f"{name}.mp4"
    encode_browser_mp4(moving_square(n_frames=20, seed=seed), path, fps=12)
    return path


def _probe(runner, model, *args):
    return runner.invoke(args=["probe", "tra", "--kind", "videomae", "--model", model,
                               "--context", "4,8", "--no-progress", *args])


def test_probe_writes_the_tra_table_and_a_rerun_is_all_cached(app, runner, sweep_study,
                                                                videomae_folder, tmp_path):
    first = _probe(runner, videomae_folder, "--study", sweep_study)
    assert first.exit_code == 0, first.output
    # The two sweep clips are the same file: losses are shared, labels never are.
    assert "4 TRA values (2 cached, 2 computed) for 2 clips" in first.output
    csv_path = Path(re.search(r"wrote (\S+)", first.output).group(1))
    table = pd.read_csv(csv_path)
    assert list(table.columns) == list(C.TRA_COLUMNS)
    assert sorted(table.clip_id.unique()) == ["tra-pendulum-d0.0", "tra-pendulum-d2.0"]
    assert set(table.context_frames) == {4, 8} and (table.parameter == "damping").all()
    by_clip = table.groupby("clip_id").process.first()
    assert by_clip["tra-pendulum-d0.0"] == "low_dissipation"
    assert by_clip["tra-pendulum-d2.0"] == "dissipative"
    assert ((table.loss_reversed - table.loss_forward) / table.loss_forward).round(9).equals(
        table.tra.round(9))

    again = _probe(runner, videomae_folder, "--study", sweep_study)
    assert "4 TRA values (4 cached, 0 computed)" in again.output
    assert pd.read_csv(Path(re.search(r"wrote (\S+)", again.output).group(1))).equals(table)
    with ResultCache(Path(app.instance_path) / "model_cache.sqlite3") as cache:
        assert len(cache) == 2

    # What it prints is what a researcher runs next: a report takes the table (here the
    # CSV route, as this study has no trials of people yet).
    printed = re.search(r"Add them to a report: python manage.py report sweep-study "
                        r"--out REPORT_DIR --tra (\S+)", first.output)
    assert printed and Path(printed.group(1)) == csv_path
    trials = tmp_path / "trials.csv"
    loading.write_trials_csv(simulate.simulate_study(simulate.StudySpec(
        n_participants=4, trials_per_participant=20, n_clips=10), np.random.default_rng(0)),
        trials)
    report = runner.invoke(args=["analyze", "--trials", str(trials), "--out",
                                 str(tmp_path / "report"), "--n-boot", "10", "--tra",
                                 printed.group(1)])
    assert report.exit_code == 0, report.output
    tables = {p.stem for p in (tmp_path / "report" / "tables").glob("*.csv")}
    assert any(name.startswith("tra") for name in tables), tables


@pytest.mark.parametrize("args, message", [
    (["--set", "nope"], "unknown stimulus set"),
    (["--context", "4,x"], "comma-separated whole numbers"),
    (["--context", "5"], "multiple of 2"),
    (["--batch-size", "0"], "Invalid value for '--batch-size'"),
])
def test_bad_requests_are_one_line_errors(runner, sweep_study, videomae_folder, args, message):
    result = _probe(runner, videomae_folder, *(args if "--set" in args else
                                               ["--study", sweep_study, *args]))
    assert result.exit_code != 0 and message in result.output
    assert "Traceback" not in result.output


def test_a_set_without_sweeps_and_a_missing_model_are_clear_errors(app, runner, sweep_study,
                                                                  tmp_path):
    with app.app_context():
        catalog.import_clips([ClipSpec("only", _clip(tmp_path, "only", 3), ["Fall"])], "plain",
                             Path(app.config["STIMULUS_ROOT"]))
    no_sweeps = _probe(runner, str(tmp_path), "--set", "plain")
    assert no_sweeps.exit_code == 2 and "holds no TRA sweep clips" in no_sweeps.output
    missing = _probe(runner, str(tmp_path / "no-model"), "--study", sweep_study)
    assert missing.exit_code == 1 and "the videomae probe" in missing.output
    assert "Traceback" not in missing.output


def test_a_checkpoint_of_another_kind_is_refused_before_any_clip(runner, sweep_study,
                                                                 videomae_folder):
    result = _probe(runner, videomae_folder, "--study", sweep_study).output  # warm: right kind
    wrong = runner.invoke(args=["probe", "tra", "--kind", "vjepa2", "--model", videomae_folder,
                                "--study", sweep_study, "--no-progress"])
    assert wrong.exit_code == 1 and "is a 'videomae' checkpoint, not 'vjepa2'" in wrong.output
    assert "choose --kind videomae" in wrong.output and "TRA values" in result


def test_the_batch_size_is_recorded_and_changes_no_cached_loss(runner, sweep_study,
                                                               videomae_folder):
    batched = _probe(runner, videomae_folder, "--study", sweep_study, "--batch-size", "3")
    assert batched.exit_code == 0, batched.output
    csv_path = Path(re.search(r"wrote (\S+)", batched.output).group(1))
    manifest = json.loads((csv_path.parent / "manifest.json").read_text())
    assert manifest["config"]["batch_size"] == 3
    # Batching changes no loss (test_tra.py), so a run at another batch size reuses them.
    again = _probe(runner, videomae_folder, "--study", sweep_study, "--batch-size", "1")
    assert "4 TRA values (4 cached, 0 computed)" in again.output
    assert pd.read_csv(Path(re.search(r"wrote (\S+)", again.output).group(1))).equals(
        pd.read_csv(csv_path))
