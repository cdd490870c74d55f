"""Video probing, decoding and browser-playable encoding.

PyAV decodes and probes (there is no ffprobe); the ffmpeg binary bundled with imageio-ffmpeg
encodes.  Frames are always handed to ffmpeg as raw pixels on a pipe, so the number of frames
written is exactly the number sent: ffmpeg's frame-rate logic never sees a variable-rate
input and cannot duplicate or drop frames.  Every file written is decoded again and its
frame count checked.

Encoding settings are fixed module constants because the forward and backward copies of a
clip must differ only in direction: an encoder difference would be a cue to the answer.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import IO, cast

import av
import numpy as np

# Re-exported: frame sets are part of this module's public surface.
from experiments.frames import (  # noqa: F401
    SPAN_WINDOWS,
    frame_file_names,
    sample_frame_indices,
    sha256_files,
    span_frame_indices,
    write_pngs,
)

CRF = 16  # low enough that codec noise stays ~1 grey level, so reversal checks are sharp
PRESET = "medium"  # "fast" saves ~10% CPU of set preparation but lifts reversal to ~1.4x ffmpeg
# x264 writes its thread count into the stream; a fixed count keeps hashes machine-independent.
X264_THREADS = 2
GOP_SECONDS = 1.0  # a keyframe every second keeps seeking cheap in browsers
# Untagged SD video is shown with BT.601 by browsers and decoded with it by PyAV; say so.
COLOR_TAGS = ("-colorspace", "smpte170m", "-color_primaries", "smpte170m",
              "-color_trc", "smpte170m", "-color_range", "tv")


class MediaError(ValueError):
    """A video that cannot be read, or a written file that fails its checks."""


@dataclass(frozen=True)
class VideoInfo:
    width: int
    height: int
    fps: float
    frame_count: int
    duration_s: float
    codec: str
    pix_fmt: str
    has_audio: bool
    faststart: bool

    def as_dict(self) -> dict:
        return asdict(self)


def ffmpeg_exe() -> str:
    import imageio_ffmpeg  # imported late: only encoding needs it

    return imageio_ffmpeg.get_ffmpeg_exe()


def sha256_file(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _open(path) -> av.container.InputContainer:
    path = Path(path)
    if not path.is_file():
        raise MediaError(f"{path}: no such file")
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError) as error:
        raise MediaError(f"{path}: not a readable video ({error})") from error
    if not container.streams.video:
        container.close()
        raise MediaError(f"{path}: contains no video stream")
    return container


def _frames(container, fmt: str | None) -> Iterator:
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    try:
        for frame in container.decode(stream):
            yield frame if fmt is None else frame.to_ndarray(format=fmt)
    except av.FFmpegError as error:
        raise MediaError(f"{container.name}: decoding failed ({error})") from error


def _rate(stream, frame_count: int) -> Fraction:
    rate = stream.average_rate or stream.guessed_rate
    if rate:
        return Fraction(rate)
    if stream.duration and stream.time_base:
        return Fraction(frame_count) / (stream.duration * stream.time_base)
    raise MediaError(f"{stream.container.name}: frame rate unknown")


def mp4_top_level_atoms(path) -> list[str]:
    """Types of the top-level ISO-BMFF boxes in file order ([] for other containers)."""
    atoms: list[str] = []
    size_total = os.path.getsize(path)
    with open(path, "rb") as handle:
        offset = 0
        while offset + 8 <= size_total:
            handle.seek(offset)
            header = handle.read(16)
            size, kind = int.from_bytes(header[:4], "big"), header[4:8]
            if size == 1:
                size = int.from_bytes(header[8:16], "big")
            elif size == 0:
                size = size_total - offset
            if size < 8 or not kind.isascii() or not kind.decode().isprintable():
                break
            atoms.append(kind.decode())
            offset += size
    return atoms if atoms[:1] == ["ftyp"] else []


def _luma(frame) -> np.ndarray:
    """The Y plane of a planar YUV frame as stored (no range or colour conversion)."""
    plane = frame.planes[0]
    rows = np.frombuffer(plane, np.uint8).reshape(plane.height, plane.line_size)
    return rows[:, : plane.width].copy()


def probe(path) -> VideoInfo:
    """Describe a video; frames are counted by decoding them, never read from metadata."""
    return scan(path)[0]


def scan(path, fmt: str | None = None) -> tuple[VideoInfo, np.ndarray | None]:
    """:func:`probe` and, with ``fmt``, all decoded frames as arrays, in one decoding pass.

    ``fmt`` is a PyAV pixel format or ``"luma"`` for the stored Y plane of YUV video.
    """
    arrays: list[np.ndarray] = []
    with _open(path) as container:
        stream = container.streams.video[0]
        frame_count, width, height = 0, 0, 0
        for frame in _frames(container, None):
            frame_count += 1
            width, height = frame.width, frame.height
            if fmt is not None:
                arrays.append(_luma(frame) if fmt == "luma" else frame.to_ndarray(format=fmt))
        if frame_count == 0:
            raise MediaError(f"{path}: no decodable video frames")
        rate = _rate(stream, frame_count)
        codec = stream.codec_context.name
        pix_fmt = stream.codec_context.pix_fmt or ""
        has_audio = bool(container.streams.audio)
    atoms = mp4_top_level_atoms(path)
    faststart = "moov" in atoms and "mdat" in atoms and atoms.index("moov") < atoms.index("mdat")
    info = VideoInfo(width=width, height=height, fps=float(rate), frame_count=frame_count,
                     duration_s=float(frame_count / rate), codec=codec, pix_fmt=pix_fmt,
                     has_audio=has_audio, faststart=faststart)
    return info, (np.stack(arrays) if fmt is not None else None)


def decode_frames(path, indices: Sequence[int] | None = None, fmt: str = "rgb24") -> np.ndarray:
    """Decode a clip to a ``(T, H, W, 3)`` uint8 RGB array, or only the frames ``indices``.

    Frames come back in the order of ``indices`` (repeats allowed).  ``fmt="yuv420p"`` gives
    PyAV's planar ``(T, H*3/2, W)`` arrays instead, which skip a colour conversion.
    """
    wanted = None if indices is None else [int(i) for i in indices]
    if wanted is not None and any(i < 0 for i in wanted):
        raise ValueError(f"frame indices must be >= 0, got {wanted}")
    keep = None if wanted is None else set(wanted)
    found: dict[int, np.ndarray] = {}
    frames: list[np.ndarray] = []
    with _open(path) as container:
        for index, array in enumerate(_frames(container, fmt)):
            if keep is None:
                frames.append(array)
            elif index in keep:
                found[index] = array
    if wanted is None:
        if not frames:
            raise MediaError(f"{path}: no decodable video frames")
        return np.stack(frames)
    missing = sorted(set(wanted) - found.keys())
    if missing:
        raise ValueError(f"{path}: frame indices {missing} out of range")
    return np.stack([found[i] for i in wanted]) if wanted else np.empty((0, 0, 0, 3), np.uint8)


def even_crop(frames: np.ndarray) -> np.ndarray:
    """Drop a last odd row/column: yuv420p needs even sizes and cropping adds no border."""
    height, width = frames.shape[1] & ~1, frames.shape[2] & ~1
    if height == 0 or width == 0:
        raise MediaError(f"frames of {frames.shape[2]}x{frames.shape[1]} are too small to encode")
    return frames[:, :height, :width]


def _x264_command(width: int, height: int, rate: Fraction, pix_fmt: str, dst: Path) -> list[str]:
    gop = max(1, round(float(rate) * GOP_SECONDS))
    return [ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-nostdin",
            "-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", f"{width}x{height}",
            "-framerate", f"{rate.numerator}/{rate.denominator}", "-i", "pipe:0",
            "-an", "-c:v", "libx264", "-preset", PRESET, "-crf", str(CRF),
            "-pix_fmt", "yuv420p", "-g", str(gop), "-threads", str(X264_THREADS),
            *COLOR_TAGS, "-movflags", "+faststart", "-fflags", "+bitexact",
            "-f", "mp4", "-y", str(dst)]


def pipe_to_ffmpeg(command: list[str], frames: Iterable[np.ndarray]) -> int:
    written = 0
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=errors)
        stdin = cast(IO[bytes], process.stdin)  # never None with stdin=PIPE
        try:
            for frame in frames:
                stdin.write(np.ascontiguousarray(frame).tobytes())
                written += 1
            stdin.close()
        except BrokenPipeError:
            pass  # ffmpeg died; its exit status and message are reported below
        finally:
            code = process.wait()
        if code != 0:
            errors.seek(0)
            message = errors.read().decode(errors="replace").strip()
            raise MediaError(f"ffmpeg failed ({code}): {message[-2000:]}")
    return written


def encode_frames(frames: Iterable[np.ndarray], dst, fps, width: int, height: int,
                  pix_fmt: str = "rgb24", decode_as: str | None = None
                  ) -> tuple[VideoInfo, np.ndarray | None]:
    """Encode raw frames of one format and size and check the written file.

    The file is decoded once to count its frames (and, with ``decode_as``, to return them
    for further checks); it only appears at ``dst`` once it passed.
    """
    dst = Path(dst)
    rate = fps if isinstance(fps, Fraction) else Fraction(fps).limit_denominator(1001)
    if rate <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    dst.parent.mkdir(parents=True, exist_ok=True)
    partial = dst.with_name(f".{dst.name}.partial")
    try:
        written = pipe_to_ffmpeg(_x264_command(width, height, rate, pix_fmt, partial), frames)
        info, decoded = scan(partial, decode_as)
        _check_playable(info, partial, written)
        os.replace(partial, dst)
    finally:
        partial.unlink(missing_ok=True)
    return info, decoded


def _check_playable(info: VideoInfo, path: Path, expected_frames: int) -> None:
    problems = []
    if info.frame_count != expected_frames:
        problems.append(f"{info.frame_count} frames decoded, {expected_frames} written")
    if (info.codec, info.pix_fmt) != ("h264", "yuv420p"):
        problems.append(f"codec {info.codec}/{info.pix_fmt}, expected h264/yuv420p")
    if not info.faststart or info.has_audio:
        problems.append(f"faststart={info.faststart}, audio={info.has_audio}")
    if problems:
        raise MediaError(f"{path}: " + "; ".join(problems))


def encode_browser_mp4(src_or_frames, dst, fps=None) -> VideoInfo:
    """Write H.264/yuv420p MP4 with +faststart and no audio, from a file or a frame array.

    A ``(T, H, W, 3)`` uint8 RGB array needs ``fps``; a file keeps its own average rate unless
    ``fps`` is given.  Odd sizes lose their last row/column.  Frames are never retimed,
    duplicated or dropped: the output holds exactly the decoded input frames.
    """
    if isinstance(src_or_frames, (str, os.PathLike)):
        return _encode_file(Path(src_or_frames), dst, fps)
    frames = np.asarray(src_or_frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or not len(frames):
        raise ValueError(f"frames must be a non-empty (T, H, W, 3) uint8 array, got "
                         f"{frames.dtype} {frames.shape}")
    if fps is None:
        raise ValueError("fps is required when encoding a frame array")
    frames = even_crop(frames)
    return encode_frames(frames, dst, fps, frames.shape[2], frames.shape[1])[0]


def _encode_file(src: Path, dst, fps) -> VideoInfo:
    with _open(src) as container:
        stream = container.streams.video[0]
        rate = _rate(stream, 0) if fps is None else Fraction(fps).limit_denominator(1001)
        frames = _frames(container, "rgb24")
        first = next(frames, None)
        if first is None:
            raise MediaError(f"{src}: no decodable video frames")
        first = even_crop(first[None])[0]
        height, width = first.shape[:2]

        def cropped():
            yield first
            for frame in frames:
                yield frame[:height, :width]

        return encode_frames(cropped(), dst, rate, width, height)[0]


def write_frame_set(src, dst_dir, n) -> list[int]:
    """Write ``n`` uniformly sampled frames of ``src`` to ``dst_dir`` in temporal order."""
    indices = sample_frame_indices(probe(src).frame_count, n)
    write_pngs(decode_frames(src, indices), dst_dir)
    return indices
