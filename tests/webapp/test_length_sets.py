"""manage.py stimuli lengths: a clip-length set cut from a stored set, as a new set."""
from pathlib import Path

import pytest
from sqlalchemy import select

from experiments import length_sweep, media
from tests.factories import tiny_specs
from webapp.extensions import db
from webapp.models import SourceClip
from webapp.stimuli import catalog


@pytest.fixture
def source_set(app, tmp_path):
    with app.app_context():
        catalog.import_clips(tiny_specs(tmp_path, per_category=1)[:4], "tiny",
                             Path(app.config["STIMULUS_ROOT"]), frame_set_sizes=())


def _clips(app, name):
    with app.app_context():
        return db.session.scalars(select(SourceClip).where(SourceClip.stimulus_set == name)
                                  .order_by(SourceClip.clip_key)).all()


def test_every_main_clip_is_cut_at_every_level_beside_full_practice_clips(app, runner,
                                                                          source_set):
    result = runner.invoke(args=["stimuli", "lengths", "--from", "tiny", "--set", "tiny-len",
                                 "--levels", "2,6,18", "--practice", "1"])
    assert result.exit_code == 0, result.output
    assert "Stored 10 clips into 'tiny-len'" in result.output
    root = Path(app.config["STIMULUS_ROOT"])
    with app.app_context():
        clips = db.session.scalars(select(SourceClip).where(
            SourceClip.stimulus_set == "tiny-len")).all()
        practice = [c for c in clips if c.split == "practice"]
        cuts = [c for c in clips if c.split == length_sweep.SPLIT]
        keys = sorted(c.clip_key for c in _clips(app, "tiny"))
        assert [c.clip_key for c in practice] == keys[-1:]  # the last main clip by key
        assert {c.params["length_of"] for c in cuts} == set(keys[:-1])
        assert sorted(c.frame_count for c in cuts) == sorted([2, 6, 18] * 3)
        for clip in cuts:
            assert clip.frame_count == clip.params["n_frames"]
            files = {s.direction: root / s.path for s in clip.stimuli}
            assert set(files) == {"forward", "backward"}
            assert media.probe(files["forward"]).frame_count == clip.frame_count
            assert files["forward"].stat().st_size == files["backward"].stat().st_size


def test_a_taken_name_or_bad_levels_are_refused_with_why(app, runner, source_set):
    taken = runner.invoke(args=["stimuli", "lengths", "--from", "tiny", "--set", "tiny",
                                "--levels", "2,6,18"])
    assert taken.exit_code != 0 and "'tiny' is already stored" in taken.output
    bad = runner.invoke(args=["stimuli", "lengths", "--from", "tiny", "--set", "new",
                              "--levels", "2,6"])
    assert bad.exit_code != 0 and "at least 3 distinct" in bad.output
    long = runner.invoke(args=["stimuli", "lengths", "--from", "tiny", "--set", "new",
                               "--levels", "2,6,40", "--practice", "1"])
    assert long.exit_code != 0 and "the longest level is 40" in long.output
    missing = runner.invoke(args=["stimuli", "lengths", "--from", "tinny", "--set", "new"])
    assert missing.exit_code != 0
    assert "no such stimulus set 'tinny' (did you mean 'tiny'?); stored: tiny" in missing.output
    assert _clips(app, "new") == []  # nothing stored by a refused command


def test_only_the_length_design_runs_a_length_sets_cuts(app, runner, source_set):
    """A fixed design on a length set ran every cut as a clip of its own (536 trials)."""
    from webapp.researcher import studies

    result = runner.invoke(args=["stimuli", "lengths", "--from", "tiny", "--set", "tiny-len",
                                 "--levels", "2,6,18", "--practice", "1"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        for design in ("arrow-of-time", "tra-sweep"):
            with pytest.raises(studies.StudyError, match=r"stimulus set 'tiny-len' holds "
                               r"clip-length cuts .* only the clip-length design runs "
                               r"\(aot-length-adaptive\)"):
                studies.create_study(f"fixed-{design}", design, "tiny-len")
        usable = studies.usable_sets()
        assert "tiny-len" in usable["aot-length-adaptive"]
        assert "tiny-len" not in usable["arrow-of-time"] and "tiny" in usable["arrow-of-time"]
        assert studies.create_study("by-length", "aot-length-adaptive", "tiny-len").id


def test_unsorted_levels_are_cut_and_reported_sorted(app, runner, source_set):
    result = runner.invoke(args=["stimuli", "lengths", "--from", "tiny", "--set", "tiny-len",
                                 "--levels", "18,2,6", "--practice", "1"])
    assert result.exit_code == 0, result.output
    assert "at 2,6,18 frames" in result.output


def test_a_busy_database_is_one_line_and_leaves_no_folder(tmp_path):
    """The cuts are made before anything is stored; a database another writer holds past the
    busy timeout refused them with a raw traceback and left the set's folder behind."""
    import sqlite3

    from tests.factories import make_app

    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'busy.db'}", SQLITE_BUSY_TIMEOUT_MS=50)
    root = Path(app.config["STIMULUS_ROOT"])
    with app.app_context():
        catalog.import_clips(tiny_specs(tmp_path, per_category=1)[:3], "tiny", root,
                             frame_set_sizes=())
    locker = sqlite3.connect(tmp_path / "busy.db", isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    try:
        result = app.test_cli_runner().invoke(args=[
            "stimuli", "lengths", "--from", "tiny", "--set", "tiny-len", "--levels", "2,6,18",
            "--practice", "1"])
    finally:
        locker.rollback()
        locker.close()
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines() == [
        "Error: the database refused the new set (database is locked): nothing was stored; "
        "run the command again"]
    assert not (root / "tiny-len").exists()
    assert _clips(app, "tiny-len") == []
    with app.app_context():
        db.engine.dispose()
