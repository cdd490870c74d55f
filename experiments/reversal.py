"""Frame-exact time reversal and the check that a written copy is frame-exact.

A reversed clip is built from the decoded source frames in memory (as ``ffmpeg -vf reverse``
does) and piped to the encoder, so no frame-rate logic can drop or repeat a frame; the result
is then decoded and compared frame by frame with the source.
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import cast

import numpy as np

from experiments.media import MediaError, VideoInfo, _open, _rate, decode_frames, encode_frames

# Mean absolute difference allowed between frames that should be equal (grey levels, 0-255);
# codec noise at CRF 16 is about one level.
MAD_TOLERANCE = 4.0
# A frame is misplaced when a neighbouring index fits it at least this much better (MSE ratio)
# and by more than codec noise (MSE, grey levels squared): nearly still frames, where the
# neighbours are alike, must not fail on noise alone.
NEIGHBOUR_RATIO = 2.0
NEIGHBOUR_MSE_MARGIN = 1.0


def check_alignment(reference: np.ndarray, candidate: np.ndarray, step: int = 2) -> dict:
    """Check that ``candidate[k]`` shows ``reference[k]`` for every k, up to codec noise.

    Raises ``MediaError`` when the counts differ, when a frame differs by more than
    ``MAD_TOLERANCE`` grey levels on average, or when frame k matches reference k-1 or k+1
    ``NEIGHBOUR_RATIO`` times better (in mean squared error, and by more than
    ``NEIGHBOUR_MSE_MARGIN``) than reference k -- the mark of a dropped or repeated frame.
    Static stretches, where neighbours are alike, pass.  Only every ``step``-th row and
    column is compared (pass ``step=1`` for arrays that are already subsampled).

    Returns
    -------
    dict
        ``frames``, ``mad_mean``, ``mad_max``, ``mse_mean`` (against the right index) and
        ``mse_wrong_index_mean`` (mean over frames of the better neighbouring index).
    """
    if reference.shape != candidate.shape:
        raise MediaError(f"frame arrays differ: {candidate.shape} vs reference {reference.shape}")
    count = len(reference)
    # Every other row and column: a quarter of the work, and still thousands of pixels per
    # frame, so mean differences are estimated to well under a grey level.
    ref, cand = (_grey_levels(a[:, ::step, ::step]).reshape(count, -1)
                 for a in (reference, candidate))
    diff = cand - ref
    mad = np.abs(diff).sum(axis=1) / diff.shape[1]
    mse = _mse(diff)
    nb_mse = np.full(count, np.inf)
    for shift in (-1, 1):  # candidate k against reference k+shift
        lo, hi = max(0, -shift), count - max(0, shift)
        nb_mse[lo:hi] = np.minimum(nb_mse[lo:hi], _mse(cand[lo:hi] - ref[lo + shift:hi + shift]))
    bad_noise = np.flatnonzero(mad > MAD_TOLERANCE)
    misplaced = np.flatnonzero((nb_mse * NEIGHBOUR_RATIO < mse)
                               & (mse - nb_mse > NEIGHBOUR_MSE_MARGIN))
    if bad_noise.size or misplaced.size:
        raise MediaError(
            f"frames do not line up: differing frames {bad_noise[:10].tolist()} "
            f"(mean abs diff up to {mad.max():.2f}), frames matching a neighbour better "
            f"{misplaced[:10].tolist()}")
    finite = np.isfinite(nb_mse)
    return {"frames": count, "mad_mean": float(mad.mean()), "mad_max": float(mad.max()),
            "mse_mean": float(mse.mean()),
            "mse_wrong_index_mean": float(nb_mse[finite].mean()) if finite.any() else None}


def luma_from_rgb(frames: np.ndarray) -> np.ndarray:
    """BT.601 limited-range Y, as the encoder computes it, to compare with decoded Y planes."""
    weights = np.array([65.481, 128.553, 24.966], np.float32) / 255.0
    return 16.0 + frames.astype(np.float32) @ weights


def _grey_levels(frames: np.ndarray) -> np.ndarray:
    """int16 copy (float input, e.g. computed luma, is rounded first)."""
    return (np.rint(frames) if frames.dtype.kind == "f" else frames).astype(np.int16)


def _mse(diff: np.ndarray) -> np.ndarray:
    """Per-row mean squared value of a (T, P) int16 difference (einsum: no squared copy)."""
    as_float = diff.astype(np.float32)
    return np.einsum("ij,ij->i", as_float, as_float) / diff.shape[1]


def _source_layout(src: Path) -> tuple[str, Fraction]:
    """yuv420p sources are reversed in yuv420p: no colour conversion, no extra noise."""
    with _open(src) as container:
        stream = container.streams.video[0]
        context = stream.codec_context
        planar = context.pix_fmt == "yuv420p" and context.width % 2 == 0 and context.height % 2 == 0
        return ("yuv420p" if planar else "rgb24"), _rate(stream, 0)


def reverse_clip_checked(src, dst) -> tuple[VideoInfo, dict]:
    """Reverse ``src`` into ``dst``; returns its info and the :func:`check_alignment` stats."""
    src, dst = Path(src), Path(dst)
    fmt, rate = _source_layout(src)
    frames = decode_frames(src, fmt=fmt)
    if fmt == "rgb24":
        frames = frames[:, : frames.shape[1] & ~1, : frames.shape[2] & ~1]
        height, width = frames.shape[1:3]
    else:  # PyAV's planar yuv420p array is (H * 3/2, W)
        height, width = frames.shape[1] * 2 // 3, frames.shape[2]
    reversed_frames = frames[::-1]
    # Only the stored luma plane is checked: decoding it needs no conversion, chroma
    # subsampling noise stays out, and a misplaced frame shows in luma as surely as in colour.
    info, decoded_or_none = encode_frames(reversed_frames, dst, rate, width, height, pix_fmt=fmt,
                                          decode_as="luma")
    decoded = cast(np.ndarray, decoded_or_none)  # never None when decode_as is given
    expected = reversed_frames[:, :height] if fmt == "yuv420p" else luma_from_rgb(reversed_frames)
    try:
        stats = check_alignment(expected, decoded)
    except MediaError:
        dst.unlink(missing_ok=True)
        raise
    return info, stats
