"""experiments.stimuli: preparing clips into hashed forward/backward clips and frame sets."""
import hashlib
import os
import re
from pathlib import Path

import numpy as np
import pytest

from experiments import media
from experiments.stimuli import (
    MAX_WORKERS,
    WORKERS_VARIABLE,
    ClipSpec,
    StimulusError,
    build_workers,
    prepare_clip,
    prepare_clips,
)
from tests.factories import TINY_FRAMES
from webapp.cli.stimuli import MAX_WORKERS as CLI_MAX_WORKERS


def _spec(path, key="tiny", **params):
    return ClipSpec(clip_key=key, path=Path(path), categories=["Fall"], params=params)


def test_prepare_clip_writes_hashed_browser_stimuli(tiny_clip, tmp_path):
    root = tmp_path / "root"
    prepared = prepare_clip(_spec(tiny_clip, item_id_backward="00001_rev"), root, "set/tiny",
                            frame_set_sizes=(2, 4, 8))
    assert prepared.info.frame_count == TINY_FRAMES and prepared.info.fps == 30.0
    kinds = [(s.kind, s.direction, s.path) for s in prepared.stimuli]
    assert kinds == [("clip", "forward", "set/tiny/forward.mp4"),
                     ("clip", "backward", "set/tiny/backward.mp4"),
                     ("frame_set", None, "set/tiny/frames_2"),
                     ("frame_set", None, "set/tiny/frames_4"),
                     ("frame_set", None, "set/tiny/frames_8")]
    for stimulus in prepared.stimuli[:2]:
        path = root / stimulus.path
        info = media.probe(path)
        assert (info.codec, info.pix_fmt, info.faststart, info.has_audio) == ("h264", "yuv420p", True, False)
        assert info.frame_count == TINY_FRAMES == stimulus.meta["frame_count"]
        assert stimulus.sha256 == media.sha256_file(path)
    assert prepared.stimuli[1].meta["item_id"] == "00001_rev"
    assert "item_id" not in prepared.stimuli[0].meta
    # Both directions come from the same frames with the same settings: only order differs.
    assert prepared.stimuli[0].meta["encoder"] == prepared.stimuli[1].meta["encoder"]


def test_backward_is_the_forward_clip_reversed(tiny_clip, tmp_path):
    prepare_clip(_spec(tiny_clip), tmp_path, "tiny", frame_set_sizes=())
    forward = media.decode_frames(tmp_path / "tiny/forward.mp4").astype(int)
    backward = media.decode_frames(tmp_path / "tiny/backward.mp4").astype(int)
    n = len(forward)
    right = [np.abs(backward[k] - forward[n - 1 - k]).mean() for k in range(n)]
    shifted = [np.abs(backward[k] - forward[n - 2 - k]).mean() for k in range(n - 1)]
    assert max(right) < 3.0 and min(shifted) > max(right) + 1.0


def test_frame_sets_hold_sampled_frames_in_order(tiny_clip, tmp_path):
    prepared = prepare_clip(_spec(tiny_clip), tmp_path, "tiny",
                            frame_set_sizes=(4, (2, "short"), (2, "long")))
    four, short, long_ = prepared.stimuli[2:]
    assert four.frame_indices == media.sample_frame_indices(TINY_FRAMES, 4)
    assert four.meta["files"] == ["frame_00.png", "frame_01.png", "frame_02.png", "frame_03.png"]
    files = [tmp_path / four.path / name for name in four.meta["files"]]
    assert four.sha256 == hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()
    assert (short.path, short.meta["span"]) == ("tiny/frames_2_short", "short")
    assert short.frame_indices == media.span_frame_indices(TINY_FRAMES, 2, "short")
    assert long_.frame_indices == media.sample_frame_indices(TINY_FRAMES, 2)


def test_clip_too_short_for_its_frame_sets_fails_cleanly(tiny_clip, tmp_path):
    with pytest.raises(StimulusError, match="cannot sample 16"):
        prepare_clip(_spec(tiny_clip), tmp_path, "tiny", frame_set_sizes=(16,))
    assert not (tmp_path / "tiny").exists()


def test_unreadable_source_leaves_nothing_behind(tmp_path):
    fake = tmp_path / "fake.mp4"
    fake.write_bytes(b"\x00" * 100)
    with pytest.raises(StimulusError, match="clip 'tiny'.*not a readable video"):
        prepare_clip(_spec(fake), tmp_path / "root", "tiny")
    assert not (tmp_path / "root" / "tiny").exists()


def test_prepared_stimuli_are_never_overwritten(tiny_clip, tmp_path):
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "forward.mp4").write_bytes(b"old")
    with pytest.raises(StimulusError, match="never overwritten"):
        prepare_clip(_spec(tiny_clip), tmp_path, "tiny")
    assert (tmp_path / "tiny" / "forward.mp4").read_bytes() == b"old"


@pytest.mark.parametrize("rel_dir", ["../escape", "/abs/path", "a/../../b", "", "."])
def test_rel_dir_must_stay_inside_the_root(tiny_clip, tmp_path, rel_dir):
    with pytest.raises(ValueError, match="rel_dir"):
        prepare_clip(_spec(tiny_clip), tmp_path, rel_dir)


def test_prepare_clips_in_parallel_keeps_input_order(tiny_clip, tmp_path):
    specs = [_spec(tiny_clip, key=f"c{k}") for k in range(3)]
    prepared = prepare_clips(specs, tmp_path, ["s/c0", "s/c1", "s/c2"], frame_set_sizes=(2,),
                             workers=2)
    assert [p.spec.clip_key for p in prepared] == ["c0", "c1", "c2"]
    assert [p.stimuli[0].path for p in prepared] == [f"s/c{k}/forward.mp4" for k in range(3)]
    # Deterministic encoding: the same source gives byte-identical stimuli.
    assert len({p.stimuli[0].sha256 for p in prepared}) == 1


def test_build_workers_asked_then_the_variable_then_the_cpus(monkeypatch):
    monkeypatch.setenv(WORKERS_VARIABLE, "3")
    assert (build_workers(10, 2), build_workers(10), build_workers(2)) == (2, 3, 2)
    monkeypatch.setenv(WORKERS_VARIABLE, " 08 ")
    assert build_workers(100) == 8
    monkeypatch.setenv(WORKERS_VARIABLE, " ")
    assert build_workers(1000) == min(MAX_WORKERS, len(os.sched_getaffinity(0)))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(128)))
    assert build_workers(1000) == MAX_WORKERS  # a big machine is capped, not refused
    monkeypatch.delattr(os, "sched_getaffinity")  # macOS, Windows
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert build_workers(1000) == 3
    assert build_workers(0) == 1
    monkeypatch.setenv(WORKERS_VARIABLE, "lots")
    assert build_workers(5, 4) == 4  # asked for: the variable is not read
    assert MAX_WORKERS == CLI_MAX_WORKERS  # `stimuli generate --workers`'s range


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5", "3 4", "65", "²", "1000"])
def test_build_workers_refuses_a_bad_variable(monkeypatch, value):
    monkeypatch.setenv(WORKERS_VARIABLE, value)
    with pytest.raises(ValueError, match=re.escape(f"{WORKERS_VARIABLE} must be a whole number "
                                                   f"from 1 to {MAX_WORKERS}, got {value!r}")):
        build_workers(4)


@pytest.mark.parametrize("asked", [0, -1, MAX_WORKERS + 1])
def test_build_workers_refuses_a_bad_request(asked):
    with pytest.raises(ValueError, match=f"workers must be from 1 to {MAX_WORKERS}, got {asked}"):
        build_workers(4, asked)


def test_prepare_clips_failure_removes_every_clip(tiny_clip, tmp_path):
    fake = tmp_path / "fake.mp4"
    fake.write_text("nope")
    specs = [_spec(tiny_clip, key="good"), _spec(fake, key="bad")]
    with pytest.raises(StimulusError, match="clip 'bad'"):
        prepare_clips(specs, tmp_path / "root", ["s/good", "s/bad"], workers=1)
    assert not (tmp_path / "root" / "s" / "good").exists()
    assert not (tmp_path / "root" / "s" / "bad").exists()


def test_prepare_clips_checks_its_arguments(tiny_clip, tmp_path):
    with pytest.raises(ValueError, match="rel_dirs"):
        prepare_clips([_spec(tiny_clip)], tmp_path, [])
    with pytest.raises(ValueError, match="distinct"):
        prepare_clips([_spec(tiny_clip)] * 2, tmp_path, ["a", "a"])
