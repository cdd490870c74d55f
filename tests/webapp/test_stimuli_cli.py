"""``manage.py stimuli generate``: the catch set, on a new installation and on an old one."""
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import select

from experiments import media
from experiments.catch import GENERATOR, KEYS, catch_specs
from tests.factories import Factory
from webapp.extensions import db
from webapp.models import SourceClip
from webapp.stimuli import catalog


def _generate(app, runner):
    with app.app_context():
        stored = "synthetic" in catalog.stimulus_sets()
    if not stored:  # rows only: the catch set is the work
        Factory(app).stimulus_set("synthetic", per_category=2)
    with app.app_context():  # manage.py's FlaskGroup pushes one; the test runner does not
        result = runner.invoke(args=["stimuli", "generate"])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def _old_catch_set(app, sources: Path) -> dict[str, bytes]:
    """The catch set an installation generated before issue 15: F and J keycaps (generator
    /2, clip keys ``press-f`` and ``press-j``), padded to one size between themselves."""
    specs = [replace(spec, clip_key=f"press-{spec.params['instructed_key']}",
                     params={**spec.params, "generator": "experiments.catch/2"})
             for spec in catch_specs(sources, keys=("f", "j"))]
    root = Path(app.config["STIMULUS_ROOT"])
    with app.app_context():
        clips = catalog.import_clips(specs, "catch", root, frame_set_sizes=())
        return {s.path: (root / s.path).read_bytes() for clip in clips for s in clip.stimuli}


def test_an_old_catch_set_gets_every_key_without_touching_its_stored_videos(app, runner, tmp_path):
    old = _old_catch_set(app, tmp_path / "old")
    output = _generate(app, runner)
    assert f"Added {len(KEYS)} catch-trial videos" in output and "(f, j) are kept" in output
    root = Path(app.config["STIMULUS_ROOT"])
    with app.app_context():
        # Sessions and exports refer to the stored F and J by id and hash: both stay as stored.
        assert {path: (root / path).read_bytes() for path in old} == old
        stored = db.session.scalars(select(SourceClip).where(SourceClip.stimulus_set == "catch"))
        for stimulus in (s for clip in stored for s in clip.stimuli):
            assert stimulus.sha256 == media.sha256_file(root / stimulus.path)
        # Schedules draw from the new generation alone, every key of it one size and length.
        records = catalog.catch_records(db.session.connection(), "catch")
        assert sorted(r.instructed_key for r in records) == sorted(KEYS)
        assert {r.stimulus.path for r in records}.isdisjoint(str(root / path) for path in old)
        sizes = {Path(r.stimulus.path).stat().st_size for r in records}
        assert len(sizes) == 1
        assert sizes.pop() > max(len(data) for data in old.values())  # F and J could not grow
        assert {media.probe(r.stimulus.path).duration_s for r in records} == {3.0}
        clips = db.session.scalars(select(SourceClip).where(SourceClip.stimulus_set == "catch",
                                                            SourceClip.clip_key.like("%-v3")))
        assert {clip.params["generator"] for clip in clips} == {GENERATOR}
    assert "catch-trial videos" not in _generate(app, runner)  # once is enough



def test_listing_stimuli_before_init_db_says_so_in_one_line(app, runner):
    # Issue 28: `stimuli list` on a fresh database printed a SQLAlchemy traceback.
    with app.app_context():
        db.drop_all()
    result = runner.invoke(args=["stimuli", "list"])
    assert result.exit_code == 1 and result.exception is not None
    assert result.output.strip().splitlines() == [
        f"Error: the database at sqlite:///{app.config['DATABASE_URL'].split('///')[1]} has "
        "no tables yet: run `python manage.py init-db` first"]
    with app.app_context():
        db.create_all()
    assert runner.invoke(args=["stimuli", "list"]).output == "No stimuli stored.\n"


@pytest.mark.parametrize("command", [
    ["stimuli", "generate"],
    ["stimuli", "import", __file__],
    ["stimuli", "lengths", "--from", "synthetic", "--set", "cut"],
    ["stimuli", "import-benchmark", "aot-psyphybench", "--videos", "."]])
def test_a_bad_workers_variable_is_refused_before_any_clip(app, runner, monkeypatch, command):
    monkeypatch.setenv("CHRONOSCOPE_STIMULUS_WORKERS", "all")
    with app.app_context():
        result = runner.invoke(args=command)
        assert catalog.stimulus_sets() == []
    assert result.exit_code == 1, result.output
    assert result.output == ("Error: CHRONOSCOPE_STIMULUS_WORKERS must be a whole number from "
                             "1 to 64, got 'all'\n")
