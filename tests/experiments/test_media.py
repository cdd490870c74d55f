"""experiments.media and experiments.reversal: probing, browser-playable encoding, reversal."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from experiments import media
from experiments.reversal import check_alignment, reverse_clip_checked
from tests.factories import TINY_FRAMES, moving_square_frames


def _mad(a, b):
    return float(np.abs(a.astype(int) - b.astype(int)).mean())


def test_encoded_clip_is_browser_playable(tiny_clip):
    info = media.probe(tiny_clip)
    assert (info.codec, info.pix_fmt) == ("h264", "yuv420p")
    assert info.faststart and not info.has_audio
    assert (info.width, info.height, info.frame_count) == (32, 32, TINY_FRAMES)
    assert info.fps == 30.0 and info.duration_s == pytest.approx(TINY_FRAMES / 30)
    # +faststart: the index (moov) precedes the media data (mdat) at the top level.
    atoms = media.mp4_top_level_atoms(tiny_clip)
    assert atoms.index("moov") < atoms.index("mdat")


def test_encoding_keeps_every_frame_in_order(tiny_clip, tiny_frames):
    decoded = media.decode_frames(tiny_clip)
    assert decoded.shape == tiny_frames.shape
    for k in range(TINY_FRAMES):
        assert _mad(decoded[k], tiny_frames[k]) < 4


def test_odd_sizes_are_cropped_to_even(tmp_path):
    frames = moving_square_frames(count=5, size=31, width=33)
    info = media.encode_browser_mp4(frames, tmp_path / "odd.mp4", fps=25)
    assert (info.width, info.height, info.frame_count, info.fps) == (32, 30, 5, 25.0)


@pytest.mark.parametrize("frames, fps, message", [
    (np.zeros((3, 8, 8), np.uint8), 30, "uint8"),
    (np.zeros((3, 8, 8, 3), np.float32), 30, "uint8"),
    (np.zeros((0, 8, 8, 3), np.uint8), 30, "non-empty"),
    (np.zeros((3, 8, 8, 3), np.uint8), None, "fps is required"),
    (np.zeros((3, 8, 8, 3), np.uint8), 0, "fps must be positive"),
])
def test_encoding_rejects_bad_input(tmp_path, frames, fps, message):
    with pytest.raises(ValueError, match=message):
        media.encode_browser_mp4(frames, tmp_path / "bad.mp4", fps=fps)
    assert not (tmp_path / "bad.mp4").exists()


def test_reverse_is_frame_exact(tiny_clip, tmp_path):
    info, _ = reverse_clip_checked(tiny_clip, tmp_path / "rev.mp4")
    assert info.frame_count == TINY_FRAMES and info.faststart and not info.has_audio
    source, reverse = media.decode_frames(tiny_clip), media.decode_frames(tmp_path / "rev.mp4")
    n = len(source)
    for k in range(n):
        right = _mad(reverse[k], source[n - 1 - k])
        assert right < 3.0  # chroma subsampling on 32x32 sharp edges, in RGB
        # Matching against a neighbouring index is clearly worse: nothing dropped or repeated.
        for wrong in (n - 2 - k, n - k):
            if 0 <= wrong < n:
                assert _mad(reverse[k], source[wrong]) > right + 1.0


def test_vfr_source_with_audio_keeps_its_frames(vfr_clip_with_audio, tmp_path, tiny_frames):
    source = media.probe(vfr_clip_with_audio)
    assert source.has_audio and source.frame_count == TINY_FRAMES
    encoded = media.encode_browser_mp4(vfr_clip_with_audio, tmp_path / "fwd.mp4")
    assert encoded.frame_count == TINY_FRAMES and not encoded.has_audio and encoded.faststart
    info, stats = reverse_clip_checked(vfr_clip_with_audio, tmp_path / "rev.mp4")
    assert info.frame_count == TINY_FRAMES and not info.has_audio
    assert stats["mad_max"] < 2.0 and stats["mse_wrong_index_mean"] > 10 * stats["mse_mean"]
    reverse = media.decode_frames(tmp_path / "rev.mp4")
    for k in range(TINY_FRAMES):
        assert _mad(reverse[k], tiny_frames[TINY_FRAMES - 1 - k]) < 4


@pytest.mark.parametrize("damage", ["drop", "repeat", "swap"])
def test_alignment_check_catches_misplaced_frames(tiny_frames, damage):
    check_alignment(tiny_frames, tiny_frames.copy())
    bad = tiny_frames.copy()
    if damage == "drop":  # frame 5 lost, the last one repeated to keep the count
        bad = np.concatenate([tiny_frames[:5], tiny_frames[6:], tiny_frames[-1:]])
    elif damage == "repeat":
        bad[6] = tiny_frames[5]
    else:
        bad[[3, 4]] = tiny_frames[[4, 3]]
    with pytest.raises(media.MediaError, match="do not line up"):
        check_alignment(tiny_frames, bad)


def test_alignment_check_accepts_static_stretches(tiny_frames):
    frames = np.concatenate([tiny_frames, np.repeat(tiny_frames[-1:], 5, axis=0)])
    stats = check_alignment(frames, frames.copy())
    assert stats["frames"] == len(frames) and stats["mad_max"] == 0


def test_decode_selected_frames_in_requested_order(tiny_clip):
    everything = media.decode_frames(tiny_clip)
    picked = media.decode_frames(tiny_clip, [7, 2, 7])
    assert np.array_equal(picked, everything[[7, 2, 7]])
    with pytest.raises(ValueError, match="out of range"):
        media.decode_frames(tiny_clip, [0, TINY_FRAMES])
    with pytest.raises(ValueError, match=">= 0"):
        media.decode_frames(tiny_clip, [-1])


def test_unreadable_inputs_raise_media_errors(tmp_path):
    with pytest.raises(media.MediaError, match="no such file"):
        media.probe(tmp_path / "missing.mp4")
    fake = tmp_path / "fake.mp4"
    fake.write_text("not a video")
    with pytest.raises(media.MediaError, match="not a readable video"):
        media.probe(fake)


def test_sha256_file(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"abc")
    assert media.sha256_file(path) == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")  # FIPS 180-2 "abc"


def test_sample_frame_indices_examples():
    assert media.sample_frame_indices(90, 4) == [11, 33, 56, 78]
    assert media.sample_frame_indices(90, 2) == [22, 67]
    assert media.sample_frame_indices(5, 5) == [0, 1, 2, 3, 4]
    assert media.sample_frame_indices(90, 1) == [45]
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ValueError):
            media.sample_frame_indices(90, bad)
    with pytest.raises(ValueError, match="cannot sample"):
        media.sample_frame_indices(3, 4)


@given(st.integers(1, 2000), st.data())
def test_sample_frame_indices_are_uniform(frame_count, data):
    n = data.draw(st.integers(1, min(frame_count, 64)))
    indices = media.sample_frame_indices(frame_count, n)
    assert len(indices) == n and all(b > a for a, b in zip(indices, indices[1:]))
    for i, index in enumerate(indices):  # frame k spans [k, k+1): it holds the segment centre
        assert index <= (i + 0.5) * frame_count / n < index + 1


def test_span_windows():
    assert media.span_frame_indices(90, 4, "long") == media.sample_frame_indices(90, 4)
    short = media.span_frame_indices(90, 4, "short")
    assert all(30 <= i < 60 for i in short)
    medium = media.span_frame_indices(90, 4, "medium")
    assert all(15 <= i < 75 for i in medium) and medium[-1] - medium[0] > short[-1] - short[0]
    with pytest.raises(ValueError, match="unknown span"):
        media.span_frame_indices(90, 4, "huge")


def test_write_frame_set(tiny_clip, tmp_path):
    indices = media.write_frame_set(tiny_clip, tmp_path / "set", 4)
    assert indices == media.sample_frame_indices(TINY_FRAMES, 4)
    names = sorted(p.name for p in (tmp_path / "set").iterdir())
    assert names == ["frame_00.png", "frame_01.png", "frame_02.png", "frame_03.png"]
    decoded = media.decode_frames(tiny_clip, indices)
    for name, frame in zip(names, decoded):  # temporal order, exact decoded pixels
        assert np.array_equal(np.asarray(Image.open(tmp_path / "set" / name)), frame)


def test_reverse_of_an_rgb_source(tiny_frames, tmp_path):
    from experiments.synthetic import write_lossless

    source = tmp_path / "rgb.mkv"
    write_lossless(tiny_frames, source)
    assert media.probe(source).pix_fmt == "gbrp"  # not yuv420p: the RGB path is taken
    assert np.array_equal(media.decode_frames(source), tiny_frames)  # stored losslessly
    info, stats = reverse_clip_checked(source, tmp_path / "rev.mp4")
    assert (info.codec, info.pix_fmt, info.frame_count) == ("h264", "yuv420p", TINY_FRAMES)
    reverse = media.decode_frames(tmp_path / "rev.mp4")
    assert max(_mad(reverse[k], tiny_frames[-1 - k]) for k in range(TINY_FRAMES)) < 3.0
