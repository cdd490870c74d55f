import numpy as np
import pytest

from experiments.catch import catch_specs, render_catch_frames
from experiments.media import decode_frames, probe


def test_frames_name_the_key_and_differ_by_key():
    f, j = render_catch_frames("f", 64, 48, 10, 1.0), render_catch_frames("j", 64, 48, 10, 1.0)
    assert f.shape == (10, 48, 64, 3) and f.dtype == np.uint8
    assert not np.array_equal(f[5], j[5])  # the text differs
    assert not np.array_equal(f[3], f[8])  # a moving bar: a real video, not a still
    assert np.array_equal(f[0, :30], j[0, :30])  # lead-in before the text is the same grey
    with pytest.raises(ValueError, match="catch key"):
        render_catch_frames("x")


def test_catch_specs_write_browser_videos(tmp_path):
    specs = catch_specs(tmp_path, fps=10, duration_s=1.0)
    assert [s.clip_key for s in specs] == ["press-f", "press-j"]
    assert [s.params["instructed_key"] for s in specs] == ["f", "j"]
    for spec in specs:
        info = probe(spec.path)
        assert (info.codec, info.pix_fmt, info.frame_count, info.faststart) == ("h264", "yuv420p", 10, True)
        assert spec.split == "catch" and spec.categories == []
    decoded = decode_frames(specs[1].path, [5])[0].astype(int)
    drawn = render_catch_frames("j", fps=10, duration_s=1.0)[5].astype(int)
    assert np.abs(decoded - drawn).mean() < 3  # the file shows what was drawn
