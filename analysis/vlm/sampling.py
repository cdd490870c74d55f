"""Input sampling: which frames of which file a model sees, decoded by us with PyAV.

Frames are sampled at equal temporal intervals, either at a target rate (AoT-PsyPhyBENCH
sec. 4.6: 2 fps for Qwen models, 4 fps for Cosmos and APIs) or as a fixed number of frames.
A backward stimulus is sampled at the mirrored indices of its stored reversed file, so it
holds exactly the source frames of the forward sample in reverse order: direction is then
the only difference between the two trials.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

# How the video's frame rate is declared to the model: "sampled" declares the rate of the
# frames actually passed (their real spacing in time); "native" declares the file's rate,
# which makes Qwen2.5-VL's temporal position ids collapse for short clips.
METADATA_FPS_MODES = ("sampled", "native")


@dataclass
class Visual:
    """One visual input: a video (T,H,W,3) or an image (1,H,W,3), uint8, with provenance."""

    kind: str  # "video" | "image"
    frames: np.ndarray
    frame_indices: list[int]
    native_fps: float
    total_frames: int
    metadata_fps: float
    source_sha256: str = ""
    meta: dict = field(default_factory=dict)
    # Indices declared to the model in the video metadata.  Equal to frame_indices except
    # for shuffled frames, which are declared at the sorted slots so that timestamps
    # (Qwen3-VL prints them) cannot reveal the true order.
    declared_indices: list[int] | None = None

    @property
    def metadata_indices(self) -> list[int]:
        return list(self.declared_indices if self.declared_indices is not None
                    else self.frame_indices)

    @property
    def pixels_sha256(self) -> str:
        """Hash of the decoded pixels, so a re-encoded file with the same hash never aliases."""
        digest = hashlib.sha256()
        digest.update(str(self.frames.shape).encode())
        digest.update(np.ascontiguousarray(self.frames).tobytes())
        return digest.hexdigest()

    def key(self) -> dict:
        """The cache-relevant description of this input."""
        return {"kind": self.kind, "source_sha256": self.source_sha256,
                "pixels_sha256": self.pixels_sha256, "frame_indices": list(self.frame_indices),
                "declared_indices": self.metadata_indices,
                "metadata_fps": round(float(self.metadata_fps), 6),
                "shape": list(self.frames.shape)}


def sample_indices(frame_count: int, native_fps: float, *, fps: float | None = None,
                   n_frames: int | None = None, mirrored: bool = False) -> list[int]:
    """Frame indices sampled at ``fps`` frames per second or as ``n_frames`` frames.

    Parameters
    ----------
    frame_count, native_fps : int, float
        Length and rate of the file.
    fps : float, optional
        Target rate: as many frames ``1/fps`` seconds apart as fit, the grid centred in the
        clip so that it is (up to rounding) symmetric under time reversal.
    n_frames : int, optional
        Fixed number of frames, spread uniformly (``experiments.media.sample_frame_indices``).
    mirrored : bool
        Return ``frame_count - 1 - i`` of the forward indices, ascending: the same source
        frames, read from a reversed file.

    Returns
    -------
    list of int
        Ascending indices into the file.

    Examples
    --------
    >>> sample_indices(90, 30.0, fps=2)
    [7, 22, 37, 52, 67, 82]
    >>> sample_indices(90, 30.0, fps=2, mirrored=True)  # a symmetric grid mirrors onto itself
    [7, 22, 37, 52, 67, 82]
    """
    if (fps is None) == (n_frames is None):
        raise ValueError("give exactly one of fps and n_frames")
    if frame_count < 1 or native_fps <= 0:
        raise ValueError(f"bad video: {frame_count} frames at {native_fps} fps")
    if fps is not None:
        if fps <= 0:
            raise ValueError(f"fps must be positive, got {fps}")
        step = native_fps / fps
        count = int(np.floor((frame_count - 1) / step + 1e-9)) + 1
        offset = ((frame_count - 1) - (count - 1) * step) / 2
        indices = np.floor(offset + np.arange(count) * step + 0.5).astype(int)
        indices = np.unique(np.clip(indices, 0, frame_count - 1))
    elif n_frames is not None:  # the only other case left by the check above
        if n_frames < 1:
            raise ValueError(f"n_frames must be >= 1, got {n_frames}")
        indices = np.asarray(_uniform(frame_count, n_frames))
    if mirrored:
        indices = np.sort(frame_count - 1 - indices)
    return [int(i) for i in indices]


def _uniform(frame_count: int, n: int) -> list[int]:
    from experiments.media import sample_frame_indices  # the one definition of "uniform"

    return [int(i) for i in sample_frame_indices(frame_count, n)]


def load_video(path: str, *, fps: float | None = None, n_frames: int | None = None,
               mirrored: bool = False, metadata_fps: str = "sampled",
               sha256: str = "") -> Visual:
    """Decode the sampled frames of ``path`` into a video :class:`Visual`."""
    from experiments import media

    if metadata_fps not in METADATA_FPS_MODES:
        raise ValueError(f"metadata_fps must be one of {METADATA_FPS_MODES}")
    # One decoding pass gives the exact frame count and the frames.
    info, all_frames = media.scan(path, "rgb24")
    if all_frames is None:  # unreachable: with a format, scan returns the frames
        raise media.MediaError(f"{path}: scan returned no decoded frames")
    indices = sample_indices(info.frame_count, info.fps, fps=fps, n_frames=n_frames,
                             mirrored=mirrored)
    frames = all_frames[indices]
    declared = (info.fps if metadata_fps == "native"
                else _effective_fps(indices, info.frame_count, info.fps))
    # A reversed file's frames are declared at the forward positions: the metadata (and
    # Qwen3-VL's printed timestamps) must be identical for both directions, or it is a cue.
    forward = sample_indices(info.frame_count, info.fps, fps=fps, n_frames=n_frames)
    return Visual("video", frames, indices, float(info.fps), int(info.frame_count),
                  float(declared), sha256, {"metadata_fps_mode": metadata_fps},
                  declared_indices=forward if mirrored else None)


def _effective_fps(indices: list[int], frame_count: int, native_fps: float) -> float:
    """The mean rate of the sampled frames, as transformers' ``VideoMetadata.sampled_fps``."""
    return float(len(indices) / frame_count * native_fps)


def subset(video: Visual, positions: list[int], kind: str = "video") -> Visual:
    """A visual of some frames of ``video`` (by position in it), in the given order."""
    frames = video.frames[positions]
    indices = [video.frame_indices[p] for p in positions]
    return Visual(kind, frames, indices, video.native_fps, video.total_frames,
                  video.metadata_fps, video.source_sha256,
                  {**video.meta, "positions": list(positions)}, declared_indices=sorted(indices))


def images(video: Visual, positions: list[int]) -> list[Visual]:
    """One image visual per position, in the given (presentation) order."""
    return [subset(video, [p], kind="image") for p in positions]
