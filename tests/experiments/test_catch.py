import string

import numpy as np
import pytest

from experiments import study_file
from experiments.catch import BACKGROUND, KEYS, WIDTH, catch_specs, render_catch_frames
from experiments.media import decode_frames, probe
from experiments.texts import SHIPPED_LANGUAGES, defaults


def test_frames_name_the_key_and_differ_by_key():
    f, j = render_catch_frames("f", 64, 48, 10, 1.0), render_catch_frames("j", 64, 48, 10, 1.0)
    assert f.shape == (10, 48, 64, 3) and f.dtype == np.uint8
    assert not np.array_equal(f[5], j[5])  # the key differs
    assert not np.array_equal(f[3], f[8])  # a moving bar: a real video, not a still
    assert np.array_equal(f[0, :30], j[0, :30])  # lead-in before the key is the same grey
    with pytest.raises(ValueError, match="catch key"):
        render_catch_frames("F")


def _ink(frame: np.ndarray) -> np.ndarray:
    """Where a frame clearly departs from the grey background (anti-aliased edges included)."""
    return np.abs(frame.astype(int) - BACKGROUND).max(axis=-1) > 24


def _box(mask: np.ndarray) -> tuple[int, int, int, int]:
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]), int(rows[-1])


def _key_ink(frames: np.ndarray) -> np.ndarray:
    """The last frame's ink outside the progress bar's rows (the lead-in shows only the bar)."""
    ink = _ink(frames[-1])
    ink[_ink(frames[0]).any(axis=1)] = False
    return ink


@pytest.mark.parametrize("key", KEYS)
def test_the_video_shows_a_keycap_and_no_words(key):
    # A keycap is a solid, about square shape in the middle of the frame.  Words are not:
    # the old "Press J" inked a box of 144 x 34 pixels, and its thin strokes only a small
    # part of it.
    ink = _key_ink(render_catch_frames(key, fps=10, duration_s=1.0))
    left, top, right, bottom = _box(ink)
    width, height = right - left + 1, bottom - top + 1
    assert width <= 1.6 * height and height <= 1.6 * width
    assert width <= WIDTH // 2
    assert abs((left + right) / 2 - (WIDTH - 1) / 2) <= 1
    assert ink[top:bottom + 1, left:right + 1].mean() > 0.8  # filled like a key, not strokes


def test_each_key_has_its_own_video_and_renders_the_same_every_time(tmp_path):
    f, j = (render_catch_frames(key, fps=10, duration_s=1.0) for key in ("f", "j"))
    assert np.array_equal(f, render_catch_frames("f", fps=10, duration_s=1.0))
    assert np.array_equal(j, render_catch_frames("j", fps=10, duration_s=1.0))
    # One keycap in one place for both keys; only the letter on its face differs.
    key_box = _box(_key_ink(f))
    assert _box(_key_ink(j)) == key_box
    left, top, right, bottom = _box((f[-1] != j[-1]).any(axis=-1))
    assert key_box[0] < left and right < key_box[2] and key_box[1] < top and bottom < key_box[3]

    first, again = catch_specs(tmp_path / "a", fps=10, duration_s=1.0, keys=("f", "j")), \
        catch_specs(tmp_path / "b", fps=10, duration_s=1.0, keys=("f", "j"))
    files = [[spec.path.read_bytes() for spec in specs] for specs in (first, again)]
    assert files[0] == files[1] and files[0][0] != files[0][1]
    # Stored sets say which drawing they hold (plain "experiments.catch" drew "Press J",
    # "/2" keycaps of f and j only).
    assert {spec.params["generator"] for spec in first} == {"experiments.catch/3"}


def test_there_is_a_catch_video_for_every_key_a_study_may_choose():
    # Issue 15: studies choose their response keys in their study file; any that it accepts
    # must have a catch video, or attention checks are lost for that study.
    setting = study_file.SCHEMA["responses"]["keys"]
    accepted = [key for key in [*string.printable, "space", "F11", "é"]
                if study_file.check_value(setting, [key, "f" if key != "f" else "j"]) is None]
    assert sorted(KEYS) == sorted(accepted) == sorted(string.ascii_lowercase + string.digits)
    drawn = {key: render_catch_frames(key, fps=2, duration_s=1.0)[-1] for key in KEYS}
    assert len({frame.tobytes() for frame in drawn.values()}) == len(KEYS)  # each its own


def test_catch_specs_write_browser_videos(tmp_path):
    specs = {s.params["instructed_key"]: s for s in catch_specs(tmp_path, fps=10, duration_s=1.0)}
    assert list(specs) == list(KEYS)
    # A newer generation is stored beside an older one (the "press-f" of /2): keys of its own.
    assert [s.clip_key for s in specs.values()] == [f"press-{key}-v3" for key in KEYS]
    for spec in specs.values():
        info = probe(spec.path)
        assert (info.codec, info.pix_fmt, info.frame_count, info.faststart) == ("h264", "yuv420p", 10, True)
        assert spec.split == "catch" and spec.categories == []
    decoded = decode_frames(specs["j"].path, [5])[0].astype(int)
    drawn = render_catch_frames("j", fps=10, duration_s=1.0)[5].astype(int)
    assert np.abs(decoded - drawn).mean() < 3  # the file shows what was drawn


# What each language's instruction says the clip does: it shows a key.  The video has no
# words, so an instruction that has a video "tell" (or "sagen") the key would not match it.
SHOWS = {"en": "shows", "de": "zeigt"}


def test_every_language_says_a_clip_shows_the_key_to_press():
    texts = {language: defaults(language).get("instructions_attention", "")
             for language in SHIPPED_LANGUAGES}
    assert all(texts.values()), texts
    assert len(set(texts.values())) == len(texts)  # each language its own, none left English
    assert set(SHOWS) == set(SHIPPED_LANGUAGES)  # a new language names its word here
    for language, text in texts.items():
        assert SHOWS[language] in text, (language, text)


def test_each_presentation_is_a_variant_of_its_own():
    # Issue 25: the catch video was the same file for every participant, so its hash named
    # it.  Each presentation renders a variant from its own generator (webapp.stimuli.
    # presentations): no frame repeats between two, the same seed gives the same frames, and
    # the key still shows as the same keycap, only a little shifted.
    first, second = (render_catch_frames("f", 64, 48, 10, n_frames=20,
                                         rng=np.random.default_rng(seed)) for seed in (1, 2))
    assert first.shape == second.shape == (20, 48, 64, 3)
    assert not any(np.array_equal(a, b) for a in first for b in second)
    assert not np.array_equal(first[3], first[4])  # the background moves between frames
    again = render_catch_frames("f", 64, 48, 10, n_frames=20, rng=np.random.default_rng(1))
    assert np.array_equal(first, again)
    plain = _box(_key_ink(render_catch_frames("f", 64, 48, 10, n_frames=20)))
    for frames in (first, second):
        left, top, right, bottom = _box(_key_ink(frames))
        assert (right - left, bottom - top) == (plain[2] - plain[0], plain[3] - plain[1])
        assert abs(left - plain[0]) <= 64 // 25 and abs(top - plain[1]) <= 64 // 25
