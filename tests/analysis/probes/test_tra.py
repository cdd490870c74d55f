"""Temporal Reversal Asymmetry on forward vs reversed clips, with tiny VideoMAE and V-JEPA 2."""
import copy

import numpy as np
import pytest

from analysis.columns import TRA_COLUMNS
from analysis.probes.tra import (
    CONTEXT_LENGTHS,
    VideoMAEProbe,
    VJEPA2Probe,
    clip_tra_rows,
    tra,
    window_starts,
)
from bench.probe import per_window_clip_losses
from tests.factories import moving_square


@pytest.fixture(scope="module")
def clip():
    return moving_square(n_frames=20, height=32, width=32, seed=3)


@pytest.fixture(scope="module", params=["videomae", "vjepa2"])
def probe(request, tiny_videomae, tiny_vjepa2):
    if request.param == "videomae":
        return VideoMAEProbe(tiny_videomae, spatial_mask_ratio=0.25)
    return VJEPA2Probe(tiny_vjepa2)


def test_tra_definition():
    # TRA paper eq. (1): positive when the reversed video is harder to predict.
    assert tra(1.0, 1.1) == pytest.approx(0.1)
    assert tra(2.0, 1.0) == -0.5
    with pytest.raises(ValueError):
        tra(0.0, 1.0)


def test_sliding_windows_of_16_frames_stride_2():
    assert window_starts(16) == [0]
    assert window_starts(48) == list(range(0, 33, 2))
    with pytest.raises(ValueError):
        window_starts(15)


def test_tra_of_forward_and_reversed_clips_are_mirror_images(probe, clip):
    rows = clip_tra_rows(probe, clip, model="tiny", clip_id="c", context_lengths=(4, 8))
    back = clip_tra_rows(probe, clip[::-1].copy(), model="tiny", clip_id="c", context_lengths=(4, 8))
    for f, b in zip(rows, back):
        assert set(f) == set(TRA_COLUMNS)
        assert f["loss_forward"] == pytest.approx(b["loss_reversed"], rel=1e-6)
        assert f["loss_reversed"] == pytest.approx(b["loss_forward"], rel=1e-6)
        assert f["loss_forward"] != f["loss_reversed"]  # the model sees the order
        assert np.sign(f["tra"]) == -np.sign(b["tra"])


def test_a_time_symmetric_clip_has_zero_tra(probe, clip):
    palindrome = np.concatenate([clip[:8], clip[:8][::-1]])  # 16 frames, equal to its reverse
    row = clip_tra_rows(probe, palindrome, model="tiny", clip_id="p", context_lengths=(6,))[0]
    assert row["tra"] == pytest.approx(0.0, abs=1e-6)


def test_bad_context_lengths_are_refused(probe, clip):
    for context in (0, 3, 16):
        with pytest.raises(ValueError):
            probe.clip_losses(clip, (8, context))


def test_videomae_mask_is_a_positional_tube_mask(tiny_videomae):
    probe = VideoMAEProbe(tiny_videomae, spatial_mask_ratio=0.5, seed=1)
    mask = probe.mask(6).reshape(8, -1).numpy()  # 8 temporal tubes x 16 spatial patches
    assert mask[3:].all()  # everything after 6 context frames is predicted
    assert (mask[:3] == mask[0]).all() and mask[0].any() and not mask[0].all()


def test_vjepa2_context_encoding_does_not_see_the_targets(tiny_vjepa2, clip):
    probe = VJEPA2Probe(tiny_vjepa2)
    window = clip[:16]
    altered = window.copy()
    altered[8:] = 255 - altered[8:]  # change only the frames to be predicted
    target, [predicted] = probe.predict(probe.pixels(window)[None], (8,))
    target_alt, [predicted_alt] = probe.predict(probe.pixels(altered)[None], (8,))
    assert np.allclose(predicted.numpy(), predicted_alt.numpy(), atol=1e-6)
    assert not np.allclose(target.numpy(), target_alt.numpy())


def test_probes_load_from_saved_checkpoints(tiny_vjepa2, tmp_path, clip):
    from analysis.probes.tra import load_probe

    tiny_vjepa2.save_pretrained(tmp_path / "vjepa2")
    probe = load_probe("vjepa2", str(tmp_path / "vjepa2"))
    [losses] = probe.clip_losses(clip, (8,))
    assert losses == pytest.approx(VJEPA2Probe(tiny_vjepa2).clip_losses(clip, (8,))[0])
    with pytest.raises(ValueError):
        load_probe("hiera", str(tmp_path))


@pytest.fixture(scope="module", params=["videomae", "videomae-raw-pixels", "vjepa2"])
def probe_class_and_model(request, tiny_videomae, tiny_vjepa2):
    if request.param == "vjepa2":
        return VJEPA2Probe, tiny_vjepa2
    if request.param == "videomae":  # norm_pix_loss=True (conftest), as VideoMAE was trained
        return VideoMAEProbe, tiny_videomae
    raw = copy.deepcopy(tiny_videomae)
    raw.config.norm_pix_loss = False
    return VideoMAEProbe, raw


@pytest.mark.parametrize("batch_size", [1, 3, 4, 10])
def test_batched_losses_equal_the_per_window_losses(probe_class_and_model, batch_size):
    # Reference: the probe as it was before batching (one forward pass per window, each
    # window preprocessed alone, VideoMAE's own out.loss; kept as bench/probe.py's baseline).
    # 24 frames: 5 windows each way, 10 in all, which batches of 3 and 4 do not divide.
    probe_class, model = probe_class_and_model
    clip = moving_square(n_frames=24, height=40, width=48, seed=5)
    options = {"spatial_mask_ratio": 0.25} if probe_class is VideoMAEProbe else {}
    expected = per_window_clip_losses(probe_class(model, **options), clip, CONTEXT_LENGTHS)
    batched = probe_class(model, batch_size=batch_size, **options).clip_losses(
        clip, CONTEXT_LENGTHS)
    assert np.allclose(batched, expected, rtol=1e-5, atol=0)


@pytest.mark.parametrize("batch_size", [0, -1])
def test_batch_size_must_be_a_positive_number_of_windows(tiny_videomae, tiny_vjepa2, batch_size):
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        VideoMAEProbe(tiny_videomae, batch_size=batch_size)
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        VJEPA2Probe(tiny_vjepa2, batch_size=batch_size)
