"""Clip-length cuts: the n frames around the middle, the reversed trial the same frames
backwards, no direction told by comparing one clip's cuts, and the adaptive schedule's one
sweep over n."""
from collections import Counter
from types import MappingProxyType

import numpy as np
import pytest

from experiments import adaptive_schedule, length_sweep, media
from experiments.catalog_records import ClipRecord, StimulusRecord
from experiments.designs import DESIGNS
from experiments.stimuli import ClipSpec, prepare_clip
from tests.factories import FPS, N_FRAMES, _frames


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "src.mp4"
    media.encode_browser_mp4(_frames(7), path, fps=FPS)
    return ClipSpec("fall-0", path, ["Fall"], annotation_brief="A square falls.")


def test_a_cut_shows_the_middle_n_frames_and_its_reversal_the_same_frames_backwards(
        source, tmp_path):
    whole = media.decode_frames(source.path).astype(int)
    specs = length_sweep.length_specs(source, (2, 6, N_FRAMES), tmp_path / "cuts",
                                      np.random.default_rng(0))
    # 18 frames: each cut exactly centred, the same frames before and after it
    assert [s.params for s in specs] == [{"length_of": "fall-0", "n_frames": n,
                                          "first_frame": (N_FRAMES - n) // 2}
                                         for n in (2, 6, N_FRAMES)]
    assert {s.split for s in specs} == {length_sweep.SPLIT}
    assert specs[0].annotation_brief == "A square falls."
    served = []
    for spec, n in zip(specs, (2, 6, N_FRAMES)):
        prepared = prepare_clip(spec, tmp_path / "out", spec.clip_key, frame_set_sizes=())
        forward, backward = (media.decode_frames(tmp_path / "out" / spec.clip_key / f"{d}.mp4")
                             .astype(int) for d in ("forward", "backward"))
        assert len(forward) == len(backward) == prepared.info.frame_count == n
        # forward: the source's middle n frames (within the codec's error, far from any other)
        errors = np.abs(forward[:, None] - whole[None]).mean(axis=(2, 3, 4))
        first = (N_FRAMES - n) // 2
        assert (errors.argmin(axis=1) == np.arange(first, first + n)).all()
        assert errors.min(axis=1).max() < 3
        # reversed: those same n frames, last first (not the whole clip's last n frames)
        assert np.abs(backward[::-1] - forward).mean() < 3
        sizes = {s.meta["size_bytes"] for s in prepared.stimuli}
        assert len(sizes) == 1  # forward and reversed cut padded to one size
        # which source frame each served frame is, forward file and reversed file
        served += [errors.argmin(axis=1), np.abs(backward[:, None] - whole[None])
                   .mean(axis=(2, 3, 4)).argmin(axis=1)]
    # The reviewer's method: cuts that all began at frame 0 shared it as an end (first when
    # forward, last when reversed), which told every cut's direction.  No two cuts of
    # different lengths share an end frame now.
    ends = [(i // 2, int(video[k])) for i, video in enumerate(served) for k in (0, -1)]
    assert not [(a, b) for a in ends for b in ends if a[0] != b[0] and a[1] == b[1]]


@pytest.mark.parametrize("n_source", [17, 18])
def test_a_clips_cuts_are_as_likely_as_their_mirror_image(n_source):
    """What comparing the frames of a clip's cuts can tell is where they lie in the clip, up to
    the clip's direction; their arrangement and its mirror (the clip reversed) must then be
    equally likely, or the arrangement would tell the direction."""
    levels = (2, 3, 4, 9, 16)
    rng = np.random.default_rng(1)
    seen = Counter(tuple(sorted(length_sweep.first_frames(n_source, levels, rng).items()))
                   for _ in range(4000))
    for arrangement, count in seen.items():
        mirror = tuple((n, n_source - first - n) for n, first in arrangement)
        assert abs(count - seen[mirror]) < 0.25 * count + 50, (arrangement, seen)
        # centred: the frames before and after a cut differ by at most one
        assert all(abs(first - (n_source - first - n)) <= 1 for n, first in arrangement)


def test_a_source_shorter_than_the_longest_level_is_refused_by_name(source, tmp_path):
    with pytest.raises(ValueError, match=r"clip 'fall-0' has 18 frames; the longest level is 40"):
        length_sweep.length_specs(source, (2, 6, 40), tmp_path, np.random.default_rng(0))


@pytest.mark.parametrize("text, message", [
    ("2,4", "at least 3"), ("2,2,4", "distinct"), ("1,4,8", "at least 2"),
    ("2,four,8", "whole numbers")])
def test_bad_levels_say_what_is_expected(text, message):
    with pytest.raises(ValueError, match=message):
        length_sweep.parse_levels(text)
    assert length_sweep.parse_levels("8, 2,4") == (2, 4, 8)


def _cut(i, source, n):
    stimuli = tuple(StimulusRecord(id=10 * i + k, public_id=f"p{i}{k}", kind="clip",
                                   direction=d) for k, d in enumerate(("forward", "backward")))
    return ClipRecord(id=i, clip_key=length_sweep.clip_key(source, n), categories=("Fall",),
                      stimuli=stimuli, split=length_sweep.SPLIT,
                      params=MappingProxyType({"length_of": source, "n_frames": n}))


def test_the_cuts_of_every_clip_make_one_sweep_over_the_number_of_frames():
    clips = [_cut(i, source, n) for i, (source, n) in enumerate(
        (s, n) for s in ("a", "b") for n in (2, 6, 18))]
    sweeps = adaptive_schedule.sweeps(clips)
    assert list(sweeps) == [length_sweep.SWEEP]
    assert {level: sorted(c.clip_key for c in group) for level, group in sweeps["length"].items()} \
        == {float(n): [f"a-mid{n:04d}", f"b-mid{n:04d}"] for n in (2, 6, 18)}
    design = DESIGNS["aot-length-adaptive"].with_changes(adaptive_trials=6)
    slots = adaptive_schedule.slots(design, clips, np.random.default_rng(0))
    assert len(slots) == 6 and all(adaptive_schedule.pending(t) for t in slots)
    assert sorted(t["direction"] for t in slots) == ["backward"] * 3 + ["forward"] * 3
    # each slot may show every level, the cut in its own direction
    assert all([e[0] for e in t[adaptive_schedule.KEY]["pool"]] == [2.0, 6.0, 18.0]
               for t in slots)
    # more frames never hide the earlier ones: QUEST+ and the fit take the curve as rising
    assert {t[adaptive_schedule.KEY]["curve_direction"] for t in slots} == {1}
