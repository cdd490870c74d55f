"""A file's size never tells an answer: both directions of a clip, and every frame of a frame
set, are padded to one size, and decoders see exactly the same pictures."""
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from experiments import media
from experiments.equal_size import equalize
from experiments.stimuli import ClipSpec, prepare_clip
from tests.factories import moving_square_frames


def test_prepared_clips_and_frame_sets_have_one_size_per_group(tiny_clip, tmp_path):
    root = tmp_path / "root"
    prepared = prepare_clip(ClipSpec("tiny", Path(tiny_clip), ["Fall"], {}), root, "set/tiny",
                            frame_set_sizes=(4, 8))
    forward, backward, *frame_sets = prepared.stimuli
    sizes = {(root / s.path).stat().st_size for s in (forward, backward)}
    assert len(sizes) == 1 and forward.meta["size_bytes"] == backward.meta["size_bytes"]
    for stimulus in frame_sets:
        files = sorted((root / stimulus.path).iterdir())
        assert len({f.stat().st_size for f in files}) == 1, stimulus.path


def test_padded_pngs_decode_to_the_same_pixels(tmp_path):
    # Frames whose PNG sizes grow with time, like ink spreading: sorting by size would order them.
    rng = np.random.default_rng(0)
    frames = [np.where(rng.random((24, 24, 3)) < k / 6, rng.integers(0, 255, (24, 24, 3)), 128)
              .astype(np.uint8) for k in range(6)]
    paths = media.write_pngs(np.stack(frames), tmp_path)
    before = [p.stat().st_size for p in paths]
    assert before == sorted(before) and len(set(before)) == 6
    size = equalize(paths)
    assert {p.stat().st_size for p in paths} == {size}
    for frame, path in zip(frames, paths):
        with Image.open(path) as image:
            image.load()  # checks every chunk's CRC
            assert np.array_equal(np.asarray(image), frame)


def test_padded_mp4s_decode_to_the_same_frames(tmp_path):
    frames = moving_square_frames()
    a, b = tmp_path / "a.mp4", tmp_path / "b.mp4"
    media.encode_browser_mp4(frames, a, fps=30)
    media.encode_browser_mp4(frames[::-1], b, fps=30)
    decoded = [media.decode_frames(p) for p in (a, b)]
    size = equalize([a, b])
    assert a.stat().st_size == b.stat().st_size == size
    for path, before in zip((a, b), decoded):
        assert np.array_equal(media.decode_frames(path), before)
        assert media.probe(path).faststart and media.mp4_top_level_atoms(path)[-1] == "free"


def test_mixed_or_unknown_files_are_refused(tmp_path):
    (tmp_path / "a.mp4").write_bytes(b"x" * 10)
    (tmp_path / "b.png").write_bytes(b"y" * 10)
    with pytest.raises(ValueError, match="one kind"):
        equalize([tmp_path / "a.mp4", tmp_path / "b.png"])
    with pytest.raises(ValueError, match="IEND"):
        equalize([tmp_path / "b.png"])
