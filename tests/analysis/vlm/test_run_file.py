"""``run-models --config run.toml``: one run file, its errors, and the file each run exports."""
import json
from pathlib import Path

import click
import pytest
from sqlalchemy import select

from webapp.cli import run_file
from webapp.cli.models import run_models
from webapp.extensions import db
from webapp.models import ModelRun, Session
from webapp.researcher import studies
from webapp.researcher.exports import build_export


@pytest.fixture
def study(app, stimulus_set):
    with app.app_context():
        studies.create_study("tiny-study", "arrow-of-time", stimulus_set)
    return "tiny-study"


def _folder(output: str) -> Path:
    return Path(output.strip().split("run folder ")[1].split()[0])


def test_every_option_is_a_field_named_like_its_flag():
    names = run_file.fields(run_models)
    flags = {max(p.opts, key=len) for p in run_models.params if p.name != "config"}
    assert {"--" + name.replace("_", "-") for name in names} == flags
    assert names["set"].name == "stimulus_set" and names["max_new_tokens"].name == "max_new_tokens"


def test_an_option_added_to_the_command_is_a_field_with_no_more_work(tmp_path):
    # What the other run options (thinking, budgets, prices) get for free.
    command = click.Command("run", params=[*run_models.params, click.Option(
        ["--thinking-budget"], type=click.IntRange(min=1), help="max reasoning tokens")])
    path = tmp_path / "run.toml"
    path.write_text('model = "m"\nthinking_budget = 256\n')
    assert run_file.load(path, command)[0] == {"model": "m", "thinking_budget": 256}
    path.write_text('model = "m"\nthinking_budget = 0\n')
    with pytest.raises(run_file.RunFileError, match=r"run.toml:2: thinking_budget: 0 is not in "
                                                    r"the range x>=1"):
        run_file.load(path, command)


@pytest.mark.parametrize("text, message", [
    ('model = "m"\nmax_new_token = 4\n',
     "run.toml:2: max_new_token: unknown key (did you mean 'max_new_tokens'?)"),
    ('model = "m"\n\nseed = "five"\n', "run.toml:3: seed: expected an integer, got 'five'"),
    ('seed = true\n', "run.toml:1: seed: expected an integer, got bool"),
    ('backend = "hff"\n', "run.toml:1: backend: 'hff' is not one of"),
    ('fps = -2\n', "run.toml:1: fps: -2.0 is not in the range x>0"),
    ('device = "gpu"\n', "run.toml:1: device: 'gpu' is not a device; use auto, cpu"),
    ('no_progress = "yes"\n', "run.toml:1: no_progress: expected true or false, got 'yes'"),
    ('model = "m"\nmodel = "n"\n', "run.toml:2: model: defined twice (first on line 1)"),
    ('model = "m\n', "run.toml:1: (file): not valid TOML"),
    ('[libraries]\ntorch = 2\n', "run.toml:1: libraries: expected a table of library"),
    ('[model]\nname = "m"\n', "run.toml:1: model: expected a string, got dict"),
    ("x" * 70 + ' = 1\n', "run.toml:1: xxxx"),
])
def test_a_run_file_is_checked_as_the_command_checks_its_flags(tmp_path, text, message):
    path = tmp_path / "run.toml"
    path.write_text(text)
    with pytest.raises(run_file.RunFileError) as raised:
        run_file.load(path, run_models)
    assert message in str(raised.value)


def test_a_file_too_large_or_not_utf8_is_refused_before_parsing(tmp_path):
    path = tmp_path / "run.toml"
    path.write_bytes(b"# " + b"x" * run_file.MAX_RUN_FILE_BYTES)
    with pytest.raises(run_file.RunFileError, match=r"run.toml:1: \(file\): expected a run "
                                                    "file of at most 64 KiB, got more"):
        run_file.load(path, run_models)
    path.write_bytes(b'model = "m"\nseed = 1 # \xff\n')
    with pytest.raises(run_file.RunFileError, match=r"run.toml:2: \(file\): expected UTF-8"):
        run_file.load(path, run_models)
    with pytest.raises(run_file.RunFileError, match=r"cannot be read: Is a directory"):
        run_file.load(tmp_path, run_models)


def test_a_bad_run_file_is_a_usage_error_naming_every_problem(runner, tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('model = "m"\nsed = 1\nbatch_size = 0\n')
    result = runner.invoke(args=["run-models", "--config", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "run.toml:2: sed: unknown key (did you mean 'seed'?)" in result.output
    assert "run.toml:3: batch_size: 0 is not in the range x>=1" in result.output
    missing = runner.invoke(args=["run-models", "--set", "tiny"])
    assert missing.exit_code == 2 and "give --model, or model in the run file" in missing.output


def test_the_command_line_overrides_the_file_and_the_run_writes_what_it_ran(
        runner, study, tiny_model, tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(f'model = "{tiny_model("qwen2_5_vl")}"\nset = "tiny"\nseed = 1\n'
                    'max_new_tokens = 2\nlimit = 1\nno_progress = true\n')
    result = runner.invoke(args=["run-models", "--config", str(path), "--seed", "2"])
    assert result.exit_code == 0, result.output
    folder = _folder(result.output)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["config"]["params"]["seed"] == 2
    assert manifest["config"]["params"]["max_new_tokens"] == 2
    fields = manifest["run_file"]["fields"]
    # Defaults too: the file says everything the run was.
    assert fields["seed"] == 2 and fields["label_orders"] == "FB" and fields["backend"] == "hf"
    assert "python" in manifest["run_file"]["libraries"]
    written = run_file.load(folder / "run.toml", run_models)[0]
    assert written["seed"] == 2 and written["stimulus_set"] == "tiny" and written["limit"] == 1


def test_an_exported_run_file_is_the_same_run_and_hits_the_cache_for_every_item(
        app, runner, study, tiny_model, tmp_path):
    model = tiny_model("qwen2_5_vl")
    first = runner.invoke(args=["run-models", "--model", model, "--study", study,
                                "--no-progress", "--max-new-tokens", "3", "--fps", "4",
                                "--label-orders", "FB,BF", "--seed", "3"])
    assert first.exit_code == 0, first.output
    assert "(0 cached, 8 computed" in first.output
    with app.app_context():
        files = build_export(study)
        run = db.session.scalar(select(ModelRun))
        assert run.manifest["run_file"]["fields"]["label_orders"] == "FB,BF"
    (name,) = [n for n in files if n.startswith("model_run_")]
    exported = tmp_path / name
    exported.write_bytes(files[name])
    again = runner.invoke(args=["run-models", "--config", str(exported)])
    assert again.exit_code == 0, again.output
    assert "8 trials (8 cached, 0 computed" in again.output
    assert "Stored 0 new trials" in again.output
    with app.app_context():
        assert len(db.session.scalars(select(Session)).all()) == 1  # one run identity
    assert "Warning" not in again.output  # the libraries are the installed ones


def test_other_library_versions_in_a_run_file_are_a_warning(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('model = "m"\n[libraries]\ntorch = "0.0.1"\n')
    values, warnings = run_file.load(path, run_models)
    assert values == {"model": "m"}
    assert warnings and "torch 0.0.1 in the file" in warnings[0]


def test_an_exported_run_file_runs_elsewhere_without_the_price_file_or_budget(
        app, runner, study, tmp_path, monkeypatch):
    """The exported file kept prices = "/tmp/.../prices.toml" and the last budget, so it
    failed on another machine (outside review): neither changes an answer, neither is in it."""
    prices = tmp_path / "prices.toml"
    prices.write_text('currency = "USD"\n[models."entropy"]\ninput = 1.0\noutput = 2.0\n')
    first = runner.invoke(args=["run-models", "--backend", "motion", "--model", "entropy",
                                "--study", study, "--fps", "6", "--no-progress",
                                "--prices", str(prices), "--budget", "1000tok"])
    assert first.exit_code == 0, first.output
    with app.app_context():
        files = build_export(study)
    (name,) = [n for n in files if n.startswith("model_run_")]
    text = files[name].decode()
    assert "prices" not in text and "budget" not in text and 'model = "entropy"' in text
    prices.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "run.toml").write_bytes(files[name])
    monkeypatch.chdir(elsewhere)
    again = runner.invoke(args=["run-models", "--config", "run.toml"])
    assert again.exit_code == 0, again.output
    assert "4 trials (4 cached, 0 computed" in again.output
    assert "Stored 0 new trials" in again.output
