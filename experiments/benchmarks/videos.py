"""Finding a researcher's AoT-PsyPhyBENCH videos and turning them into clip specs.

A researcher downloads the Moments-in-Time clips and names them by the metadata ``id``
(``00001.mp4``), optionally with the benchmark's reversed copies (``00001_rev.mp4``).
Every clip is prepared by :func:`experiments.stimuli.prepare_clips`, which encodes the
forward and backward stimuli from the same decoded frames (so encoding can never cue the
direction).  A supplied ``_rev`` file is therefore not shown; it is decoded and checked to be
the frame-exact flip of its forward clip, so that a mislabelled or re-cut file is caught
instead of silently disagreeing with the published item.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from experiments import media
from experiments.benchmarks import aot_psyphybench as bench
from experiments.stimuli import ClipSpec


class ReversalMismatch(ValueError):
    """Supplied ``ID_rev.mp4`` files that are not frame-exact flips of ``ID.mp4``."""


@dataclass(frozen=True)
class MissingVideo:
    clip_id: str
    reason: str


@dataclass
class ImportPlan:
    """What an import will do: one spec per clip found, and every clip it cannot import."""

    specs: list[ClipSpec]
    missing: list[MissingVideo]
    verified_reversals: list[str]  # clip ids whose supplied _rev file passed the check
    ignored_files: list[str] = field(default_factory=list)  # .mp4 files not in the metadata

    @property
    def missing_ids(self) -> list[str]:
        return [m.clip_id for m in self.missing]


# A supplied file is another encoder's copy of an already lossy clip, so it is held to a
# looser noise bound than our own encodes (experiments.reversal.MAD_TOLERANCE); what decides
# is that every frame matches the right source frame far better than any other.
FLIP_MAD_TOLERANCE = 12.0  # mean absolute grey-level difference per frame, 0-255
MATCH_RATIO = 2.0  # the right frame must be within this factor (in MSE) of the best match
_STATIC_MSE = 1.0  # below this, frames are equal for matching (static stretches tie)


def _grey(frames: np.ndarray) -> np.ndarray:
    """(T, P) float32 grey levels on every 4th row and column: cheap and still thousands of
    pixels per frame for real clips."""
    small = frames[:, ::4, ::4].astype(np.float32)
    return (small @ np.array([0.299, 0.587, 0.114], np.float32)).reshape(len(frames), -1)


def flip_check(forward: np.ndarray, candidate: np.ndarray) -> dict:
    """Check that ``candidate[k]`` shows ``forward[N-1-k]`` for every k.

    Raises ``MediaError`` when the frame counts or sizes differ, when a frame differs from
    its reversed counterpart by more than :data:`FLIP_MAD_TOLERANCE` grey levels, or when
    another source frame fits it more than :data:`MATCH_RATIO` times better (a shifted,
    unreversed or re-cut copy).  Returns ``frames``, ``mad_mean``, ``mad_max``, ``mse_mean``.
    """
    if forward.shape != candidate.shape:
        raise media.MediaError(f"frame arrays differ: {candidate.shape} vs {forward.shape[:1]} "
                               f"frames of the forward clip {forward.shape}")
    ref, cand = _grey(forward[::-1]), _grey(candidate)
    mse = ((cand ** 2).sum(1)[:, None] + (ref ** 2).sum(1)[None, :]
           - 2 * cand @ ref.T) / ref.shape[1]  # mse[k, j]: candidate k vs reversed source j
    right = np.diag(mse)
    mad = np.abs(cand - ref).mean(axis=1)
    misplaced = np.flatnonzero(right > MATCH_RATIO * mse.min(axis=1) + _STATIC_MSE)
    noisy = np.flatnonzero(mad > FLIP_MAD_TOLERANCE)
    if misplaced.size or noisy.size:
        raise media.MediaError(
            f"frames {misplaced[:10].tolist()} match other source frames better, frames "
            f"{noisy[:10].tolist()} differ by more than {FLIP_MAD_TOLERANCE:g} grey levels "
            f"(up to {mad.max():.1f})")
    return {"frames": len(ref), "mad_mean": float(mad.mean()), "mad_max": float(mad.max()),
            "mse_mean": float(right.mean())}


def verify_reversal(forward: Path, reversed_path: Path, item_id: str) -> dict:
    """Decode both files and :func:`flip_check` them.

    Raises
    ------
    ReversalMismatch
        Naming ``item_id`` and saying how the files differ (frame counts, sizes, or which
        frames disagree).
    """
    try:
        _, fwd = media.scan(forward, "rgb24")
        _, rev = media.scan(reversed_path, "rgb24")
        if fwd is None or rev is None:  # unreachable: with a format, scan returns the frames
            raise media.MediaError("scan returned no decoded frames")
        return flip_check(fwd, rev)
    except media.MediaError as error:
        raise ReversalMismatch(
            f"{item_id}: {reversed_path.name} is not a frame-exact reversal of "
            f"{forward.name} ({error})") from error


def _spec(clip: bench.BenchmarkClip, path: Path, reversal: dict | None) -> ClipSpec:
    params = {
        "benchmark": bench.NAME,
        "item_id_forward": bench.item_id_for(clip.clip_id, bench.FORWARD),
        "item_id_backward": bench.item_id_for(clip.clip_id, bench.BACKWARD),
        "published_categories": list(clip.published_categories),
        "mit_folder": clip.folder, "mit_filename": clip.filename,
        "source_filename_hanyu2023": clip.source_filename,
        "supplied_reversal": reversal,
    }
    return ClipSpec(clip_key=clip.clip_id, path=path, categories=list(clip.categories),
                    split=bench.SPLIT_TEST, params=params)


def _missing_reason(clip: bench.BenchmarkClip, has_reversed: bool) -> str:
    if not clip.video_found:
        return "no source video in the release (filename 'no_video_found')"
    if has_reversed:
        return f"only {clip.reversed_name} found, no {clip.video_name}"
    return f"{clip.video_name} not found"


def plan_import(videos_dir: str | Path, metadata: bench.Metadata | None = None) -> ImportPlan:
    """Match ``videos_dir`` against the metadata and check every supplied ``_rev`` file.

    Raises
    ------
    ValueError
        When ``videos_dir`` is not a folder.
    ReversalMismatch
        Listing every clip whose ``_rev`` file fails the check; nothing should be imported
        then (fix or remove those files: our own reversal replaces a removed one).
    """
    folder = Path(videos_dir)
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a folder of videos")
    metadata = metadata or bench.read_metadata()
    specs, missing, verified, failures = [], [], [], []
    for clip in metadata.clips:
        forward, backward = folder / clip.video_name, folder / clip.reversed_name
        if not forward.is_file():
            missing.append(MissingVideo(clip.clip_id, _missing_reason(clip, backward.is_file())))
            continue
        reversal = None
        if backward.is_file():
            try:
                stats = verify_reversal(forward, backward, f"{clip.clip_id}_rev")
            except ReversalMismatch as error:
                failures.append(str(error))
                continue
            reversal = {"file": backward.name, "sha256": media.sha256_file(backward),
                        "alignment_check": stats}
            verified.append(clip.clip_id)
        specs.append(_spec(clip, forward, reversal))
    if failures:
        raise ReversalMismatch(f"{len(failures)} supplied reversed file(s) rejected; fix or "
                               "remove them (our own reversal replaces a removed one):\n"
                               + "\n".join(failures))
    return ImportPlan(specs, missing, verified, _ignored(folder, metadata))


def _ignored(folder: Path, metadata: bench.Metadata) -> list[str]:
    known = {c.video_name for c in metadata.clips} | {c.reversed_name for c in metadata.clips}
    return sorted(p.name for p in folder.glob("*.mp4") if p.name not in known)
