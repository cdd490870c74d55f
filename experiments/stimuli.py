"""Preparing a source clip into the stimuli shown on trials.

For each clip: ``forward.mp4`` and ``backward.mp4`` are both encoded from the same decoded
source frames with the same settings, so the only difference between them is the direction
(a second-generation backward copy would be blurrier -- a cue to the answer).  Frame sets for
ordering tasks are PNGs of frames sampled uniformly from the source.
"""
from __future__ import annotations

import multiprocessing
import os
import re
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path, PurePosixPath

import numpy as np

from experiments import media
from experiments.equal_size import equalize
from experiments.reversal import check_alignment, luma_from_rgb


class StimulusError(ValueError):
    """A clip that could not be prepared; the message names the clip."""


@dataclass
class ClipSpec:
    clip_key: str
    path: Path
    categories: list[str]
    annotation_brief: str | None = None
    annotation_comprehensive: str | None = None
    split: str | None = None
    params: dict = field(default_factory=dict)


@dataclass
class PreparedStimulus:
    kind: str  # "clip" | "frame_set"
    direction: str | None  # "forward" | "backward" for clips
    frame_indices: list[int] | None  # for frame sets, in temporal order
    path: str  # POSIX, relative to the stimulus root (a folder for frame sets)
    sha256: str  # of the file; for a frame set, of its PNG files' bytes in temporal order
    meta: dict


@dataclass
class PreparedClip:
    spec: ClipSpec
    info: media.VideoInfo  # of forward.mp4
    stimuli: list[PreparedStimulus]


def _encode(frames: np.ndarray, path: Path, rate: Fraction) -> tuple[media.VideoInfo, np.ndarray]:
    info, luma = media.encode_frames(frames, path, rate, frames.shape[2], frames.shape[1],
                                     decode_as="luma")
    if luma is None:  # unreachable: with decode_as, encode_frames returns the frames
        raise media.MediaError(f"{path}: encode_frames returned no decoded frames")
    return info, luma


def _clip_meta(info: media.VideoInfo, path: Path, check: dict, spec: ClipSpec,
               direction: str) -> dict:
    meta = {**info.as_dict(), "size_bytes": path.stat().st_size,
            "encoder": {"codec": "libx264", "crf": media.CRF, "preset": media.PRESET},
            "alignment_check": check}
    item_id = spec.params.get(f"item_id_{direction}")
    if item_id:
        meta["item_id"] = str(item_id)
    return meta


def _frame_set_plan(sizes) -> list[tuple[int, str | None]]:
    """``frame_set_sizes`` items: ``n`` (whole clip) or ``(n, span)`` (see SPAN_WINDOWS)."""
    plan = []
    for item in sizes:
        n, span = (item, None) if isinstance(item, (int, np.integer)) else tuple(item)
        if span is not None and span not in media.SPAN_WINDOWS:
            raise ValueError(f"unknown frame-set span {span!r}")
        plan.append((int(n), span))
    if len(set(plan)) != len(plan):
        raise ValueError(f"frame_set_sizes repeats an entry: {list(sizes)}")
    return plan


def _sample(count: int, n: int, span: str | None) -> list[int]:
    return (media.sample_frame_indices(count, n) if span is None
            else media.span_frame_indices(count, n, span))


def _frame_sets(frames: np.ndarray, out: Path, rel: PurePosixPath,
                samples: list[tuple[int, str | None, list[int]]]) -> list[PreparedStimulus]:
    result = []
    for n, span, indices in samples:
        name = f"frames_{n}" if span is None else f"frames_{n}_{span}"
        paths = media.write_pngs(frames[indices], out / name)
        equalize(paths)
        meta = {"n": n, "files": [p.name for p in paths], "width": frames.shape[2],
                "height": frames.shape[1], "rule": "floor((i + 0.5) * frame_count / n)"}
        if span is not None:
            meta.update(span=span, window=list(media.SPAN_WINDOWS[span]))
        result.append(PreparedStimulus(
            kind="frame_set", direction=None, frame_indices=indices, path=str(rel / name),
            sha256=media.sha256_files(paths), meta=meta))
    return result


def _prepare_into(spec: ClipSpec, out: Path, rel: PurePosixPath, sizes) -> PreparedClip:
    plan = _frame_set_plan(sizes)
    source_info, decoded = media.scan(spec.path, "rgb24")
    if decoded is None:  # unreachable: with a format, scan returns the frames
        raise media.MediaError(f"{spec.path}: scan returned no decoded frames")
    frames = media.even_crop(decoded)
    # Sampled before encoding so that a clip too short for its frame sets fails early.
    samples = [(n, span, _sample(len(frames), n, span)) for n, span in plan]
    rate = Fraction(source_info.fps).limit_denominator(1001)
    fwd_info, fwd_luma = _encode(frames, out / "forward.mp4", rate)
    # Luma of every other row and column only: the check samples no more than that.
    fidelity = check_alignment(luma_from_rgb(frames[:, ::2, ::2]), fwd_luma[:, ::2, ::2], step=1)
    bwd_info, bwd_luma = _encode(frames[::-1], out / "backward.mp4", rate)
    # The criterion: decoded backward frame k == decoded forward frame N-1-k.
    reversal = check_alignment(fwd_luma[::-1], bwd_luma)
    equalize([out / "forward.mp4", out / "backward.mp4"])
    clips = [
        PreparedStimulus("clip", "forward", None, str(rel / "forward.mp4"),
                         media.sha256_file(out / "forward.mp4"),
                         _clip_meta(fwd_info, out / "forward.mp4", fidelity, spec, "forward")),
        PreparedStimulus("clip", "backward", None, str(rel / "backward.mp4"),
                         media.sha256_file(out / "backward.mp4"),
                         _clip_meta(bwd_info, out / "backward.mp4", reversal, spec, "backward")),
    ]
    source = {"source_sha256": media.sha256_file(spec.path), "source": source_info.as_dict()}
    for stimulus in clips:
        stimulus.meta.update(source)
    return PreparedClip(spec=spec, info=fwd_info, stimuli=clips + _frame_sets(frames, out, rel, samples))


def _relative(rel_dir: str) -> PurePosixPath:
    rel = PurePosixPath(str(rel_dir).replace(os.sep, "/"))
    if rel.is_absolute() or not rel.parts or any(p in ("..", ".") for p in rel.parts):
        raise ValueError(f"rel_dir must be a plain relative path, got {rel_dir!r}")
    return rel


def _check_free(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise StimulusError(f"{out} already exists; prepared stimuli are never overwritten")


def prepare_clip(spec: ClipSpec, root: Path, rel_dir: str, frame_set_sizes=(2, 4, 8)) -> PreparedClip:
    """Write ``root/rel_dir/{forward.mp4, backward.mp4, frames_N/}`` for one source clip.

    ``frame_set_sizes`` items are ``n`` (n frames over the whole clip, ``frames_n/``) or
    ``(n, span)`` with span "short"/"medium"/"long" (``frames_n_span/``, meta ``span``).
    Every file is checked after writing (frame count, codec, faststart, frame-by-frame
    alignment); on any failure the folder is removed again and ``StimulusError`` raised.
    """
    rel = _relative(rel_dir)
    out = Path(root) / rel
    _check_free(out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _prepare_into(spec, out, rel, tuple(frame_set_sizes))
    except BaseException as error:
        shutil.rmtree(out, ignore_errors=True)
        if isinstance(error, (ValueError, OSError)):  # bad input or disk: name the clip
            raise StimulusError(f"clip {spec.clip_key!r}: {error}") from error
        raise


def equalize_clip_files(prepared: list[PreparedClip], root) -> None:
    """Pad every clip file of ``prepared`` to one size and record the new hashes and sizes.

    For sets whose members must not be told apart by size (the catch videos: which key a
    video names must not show in its Content-Length); study sets are padded per clip only.
    """
    clips = [s for p in prepared for s in p.stimuli if s.kind == "clip"]
    size = equalize([Path(root) / s.path for s in clips])
    for stimulus in clips:
        stimulus.sha256 = media.sha256_file(Path(root) / stimulus.path)
        stimulus.meta["size_bytes"] = size


WORKERS_VARIABLE = "CHRONOSCOPE_STIMULUS_WORKERS"
MAX_WORKERS = 64


def build_workers(jobs: int, requested: int | None = None) -> int:
    """How many processes a stimulus build of ``jobs`` clips renders or prepares in:
    ``requested``, else $CHRONOSCOPE_STIMULUS_WORKERS, else one a CPU this process may run
    on (at most MAX_WORKERS), and never more than the clips (1: in this process, no pool; the
    test suite's choice, whose workers already hold the cores)."""
    if requested is None:
        value = os.environ.get(WORKERS_VARIABLE, "").strip()
        if not value:
            return max(1, min(jobs, MAX_WORKERS, _usable_cpus()))
        if not (re.fullmatch(r"[0-9]{1,3}", value) and 1 <= int(value) <= MAX_WORKERS):
            raise ValueError(f"{WORKERS_VARIABLE} must be a whole number from 1 to "
                             f"{MAX_WORKERS}, got {value!r}")
        requested = int(value)
    elif not 1 <= requested <= MAX_WORKERS:
        raise ValueError(f"workers must be from 1 to {MAX_WORKERS}, got {requested}")
    return max(1, min(jobs, requested))


def _usable_cpus() -> int:
    # the CPUs this process may run on where the platform says (Linux), else all of them
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def prepare_clips(specs, root, rel_dirs, frame_set_sizes=(2, 4, 8),
                  workers: int | None = None) -> list[PreparedClip]:
    """Prepare many clips in parallel processes; results in input order.

    All targets are checked to be free before any work starts; if any clip fails, the
    folders of every clip of this call are removed and the first error is raised.
    """
    specs, rel_dirs = list(specs), [str(r) for r in rel_dirs]
    if len(specs) != len(rel_dirs):
        raise ValueError(f"{len(specs)} specs but {len(rel_dirs)} rel_dirs")
    rels = [_relative(r) for r in rel_dirs]
    if len(set(rels)) != len(rels):
        raise ValueError("rel_dirs must be distinct")
    outs = [Path(root) / rel for rel in rels]
    for out in outs:
        _check_free(out)
    workers = build_workers(len(specs), workers)
    try:
        if workers <= 1:
            return [prepare_clip(s, root, r, frame_set_sizes) for s, r in zip(specs, rel_dirs)]
        # spawn, not fork: callers (a Flask CLI, a test runner) may hold threads and locks.
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = [pool.submit(prepare_clip, s, root, r, frame_set_sizes)
                       for s, r in zip(specs, rel_dirs)]
            try:
                return [future.result() for future in futures]
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    except BaseException:
        for out in outs:
            shutil.rmtree(out, ignore_errors=True)
        raise
