"""``manage.py stimuli import-benchmark aot-psyphybench``: tiny videos named by the real ids."""
import collections
import csv

import pytest
from sqlalchemy import func, select

from experiments.benchmarks import aot_psyphybench as bench
from tests.experiments.benchmark_videos import write_benchmark_videos
from webapp.extensions import db
from webapp.models import SourceClip, Stimulus
from webapp.stimuli.benchmarks import STIMULUS_SET, import_benchmark

SUBSET = ["00001", "00005", "00058", "00140"]  # 00140 is a "no_video_found" row


def _invoke(runner, videos, *extra):
    return runner.invoke(args=["stimuli", "import-benchmark", "aot-psyphybench",
                               "--videos", str(videos), *extra])


def _stored_items(app) -> dict[str, tuple]:
    with app.app_context():
        rows = db.session.scalars(select(Stimulus).where(Stimulus.item_id.is_not(None))).all()
        return {s.item_id: (s.direction, s.source_clip.clip_key, s.source_clip.split,
                            tuple(s.source_clip.categories)) for s in rows}


def test_subset_import_keeps_item_ids_and_reports_missing_videos(app, runner, tmp_path):
    # 00140 is given a video although the release has none: it is imported like any other.
    videos = write_benchmark_videos(tmp_path / "videos", SUBSET, reversed_ids=["00005"])
    result = _invoke(runner, videos)
    assert result.exit_code == 0, result.output
    assert "Imported 4 clips (8 items) into 'aot-psyphybench'; 1 supplied reversed files" \
        in result.output
    assert "Missing 208 videos:" in result.output
    assert "  00011: no source video in the release (filename 'no_video_found')" in result.output
    assert "  00006: 00006.mp4 not found" in result.output
    items = _stored_items(app)
    assert sorted(items) == sorted([*SUBSET, *(f"{c}_rev" for c in SUBSET)])
    assert items["00001"] == ("forward", "00001", "test", ("Fall", "Diffusion"))
    assert items["00001_rev"] == ("backward", "00001", "test", ("Fall", "Diffusion"))
    with app.app_context():
        clip = db.session.scalar(select(SourceClip).where(SourceClip.clip_key == "00005"))
        assert clip.stimulus_set == STIMULUS_SET
        assert clip.params["supplied_reversal"]["file"] == "00005_rev.mp4"
        assert clip.params["published_categories"] == ["Fall"]


def test_a_wrong_reversed_file_is_rejected_and_nothing_is_stored(app, runner, tmp_path):
    videos = write_benchmark_videos(tmp_path / "videos", ["00001", "00005"],
                                    wrong_reversed_ids=["00005"])
    result = _invoke(runner, videos)
    assert result.exit_code == 1
    assert "00005_rev: 00005_rev.mp4 is not a frame-exact reversal of 00005.mp4" in result.output
    assert "Traceback" not in result.output
    with app.app_context():
        assert db.session.scalar(select(func.count(SourceClip.id))) == 0


def test_rerun_imports_only_new_videos_and_custom_metadata_is_read(app, runner, tmp_path):
    videos = write_benchmark_videos(tmp_path / "videos", ["00001"])
    assert _invoke(runner, videos).exit_code == 0
    write_benchmark_videos(videos, ["00005"])
    metadata = tmp_path / "two.csv"
    with bench.METADATA_CSV.open(newline="") as src, metadata.open("w", newline="") as dst:
        rows = list(csv.reader(src))
        wanted = [r for r in rows if r[0] in ("00001.mp4", "00005.mp4")]
        csv.writer(dst).writerows([rows[0], *wanted])
    result = _invoke(runner, videos, "--metadata", str(metadata))
    assert result.exit_code == 0, result.output
    assert "Imported 1 clips (2 items)" in result.output
    assert "Already stored, skipped: 1 clips." in result.output
    assert "Missing" not in result.output
    assert sorted(_stored_items(app)) == ["00001", "00001_rev", "00005", "00005_rev"]


def test_bad_invocations_are_clear_errors(runner, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _invoke(runner, empty)
    assert result.exit_code == 1 and "none of the 212 benchmark videos found" in result.output
    result = runner.invoke(args=["stimuli", "import-benchmark", "tomato", "--videos", str(empty)])
    assert result.exit_code == 2 and "'tomato' is not 'aot-psyphybench'" in result.output


@pytest.mark.slow
def test_full_list_imports_212_clips_and_424_balanced_items(app, tmp_path):
    clips = bench.read_metadata().clips
    videos = write_benchmark_videos(tmp_path / "videos", [c.clip_id for c in clips])
    with app.app_context():
        # No frame sets: the benchmark is an arrow-of-time task, and this keeps the test fast.
        result = import_benchmark("aot-psyphybench", videos, tmp_path / "stimuli",
                                  frame_set_sizes=())
        assert len(result.imported) == 212 and result.n_items == 424
        assert result.plan.missing == []
    items = _stored_items(app)
    assert set(items) == {item.item_id for item in bench.read_items()}
    assert collections.Counter(v[0] for v in items.values()) == {"forward": 212, "backward": 212}
    per_clip = {v[1]: v[3] for v in items.values()}
    counts = collections.Counter(c for cats in per_clip.values() for c in cats)
    assert counts == {"Fall": 70, "Proceed": 64, "Put": 51, "Diffusion": 44, "Division": 23}
