"""Benchmark of the stimulus pipeline: built-in set preparation and clip reversal.

    python bench/stimuli.py [--runs 3] [--clips 20] [--workers N]
    python bench/stimuli.py --tra 38 [--workers 2]   # the TRA set: a tenth, extrapolated

Prints one table: time to render and to prepare the built-in synthetic set (median of
``--runs`` runs), and reversal time per clip (median over clips, each timed ``--repeats``
times) for our path (``experiments.reversal.reverse_clip_checked``: decode, pipe to libx264, decode again
and check every frame) against a direct ``ffmpeg -vf reverse`` call on the same clips, with
the same encoder settings and with ffmpeg's defaults.  Goal: our reversal within 1.2x.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from experiments import media  # noqa: E402
from experiments.reversal import reverse_clip_checked  # noqa: E402
from experiments.stimuli import prepare_clips  # noqa: E402
from experiments.synthetic import synthetic_specs  # noqa: E402


def _timed(function, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def _cpu_seconds() -> float:
    """CPU time of this process and of every finished child (workers, ffmpeg)."""
    usages = (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    return sum(usage.ru_utime + usage.ru_stime for usage in usages)


def ffmpeg_reverse(src: Path, dst: Path, same_settings: bool) -> None:
    """The baseline: one direct ``ffmpeg -vf reverse`` call."""
    encoder = (["-c:v", "libx264", "-preset", media.PRESET, "-crf", str(media.CRF),
                "-pix_fmt", "yuv420p", "-threads", str(media.X264_THREADS),
                "-movflags", "+faststart"] if same_settings else [])
    subprocess.run([media.ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-nostdin",
                    "-i", str(src), "-vf", "reverse", "-an", *encoder, "-y", str(dst)],
                   check=True)


def bench_set(work: Path, runs: int, workers: int | None):
    """Wall and CPU seconds of rendering and of preparing the built-in set, per run."""
    times = {"render": [], "prepare": [], "render_cpu": [], "prepare_cpu": []}
    prepared = None
    for run in range(runs):
        cpu = _cpu_seconds()
        seconds, specs = _timed(synthetic_specs, work / f"src{run}", seed=20231, workers=workers)
        times["render"].append(seconds)
        times["render_cpu"].append(_cpu_seconds() - cpu)
        rel_dirs = [f"synthetic/{spec.clip_key}" for spec in specs]
        cpu = _cpu_seconds()
        seconds, prepared = _timed(prepare_clips, specs, work / f"root{run}", rel_dirs,
                                   workers=workers)
        times["prepare"].append(seconds)
        times["prepare_cpu"].append(_cpu_seconds() - cpu)
    return times, prepared, work / f"root{runs - 1}"


def bench_reverse(clips: list[Path], work: Path, repeats: int) -> dict[str, list[float]]:
    per_clip = {"ours": [], "ffmpeg_same": [], "ffmpeg_default": []}
    for index, clip in enumerate(clips):
        samples = {name: [] for name in per_clip}
        for _ in range(repeats):  # interleaved, so load changes hit all three alike
            samples["ours"].append(_timed(reverse_clip_checked, clip, work / f"o{index}.mp4")[0])
            samples["ffmpeg_same"].append(
                _timed(ffmpeg_reverse, clip, work / f"s{index}.mp4", True)[0])
            samples["ffmpeg_default"].append(
                _timed(ffmpeg_reverse, clip, work / f"d{index}.mp4", False)[0])
        for name, values in samples.items():
            per_clip[name].append(min(values))  # the least-disturbed run of this clip
    return per_clip


def _tra_clip(job: dict, work: str) -> tuple[float, float, float]:
    """Render (PyBullet) and prepare (forward, checked reversal, frame sets) one TRA clip:
    wall seconds of each, and CPU seconds of both (this worker and its ffmpeg children)."""
    from experiments.designs import required_frame_sets
    from experiments.stimuli import prepare_clip
    from experiments.synthetic import tra_bullet

    cpu = _cpu_seconds()
    render_s = _timed(tra_bullet.render_source, job, Path(work) / "src")[0]
    spec = tra_bullet.clip_spec(job, Path(work) / "src")
    prepare_s = _timed(prepare_clip, spec, Path(work) / "root", f"tra/{job['clip_key']}",
                       required_frame_sets())[0]
    return render_s, prepare_s, _cpu_seconds() - cpu


def bench_tra(count: int, workers: int) -> None:
    """The TRA set's build for its first ``count`` clips (every group), extrapolated to 380."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from experiments.synthetic import tra_bullet

    jobs = tra_bullet.tra_jobs(20231)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="chronoscope-bench-tra-") as work:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            start = time.perf_counter()
            times = list(pool.map(_tra_clip, jobs[:count], [work] * count))
            wall = time.perf_counter() - start
    render, prepare, cpu = zip(*times)
    total = [r + p for r, p, _ in times]
    median = statistics.median
    print(f"cpus={os.cpu_count()} workers={workers} load={load:.1f} (after: "
          f"{os.getloadavg()[0]:.1f}) clips={count} of {len(jobs)}")
    for name, values in (("render (PyBullet, lossless source)", render),
                         ("prepare (forward + reversed, checked)", prepare),
                         ("per clip, both", total), ("per clip, CPU s", cpu)):
        print(f"{name:<40} median {median(values):6.2f} s  range {min(values):.2f}-{max(values):.2f}")
    print(f"wall for {count} clips: {wall:.1f} s; extrapolated to all {len(jobs)}: "
          f"{wall * len(jobs) / count / 60:.1f} min (goal: under 15 min)")
    print(f"CPU-bound estimate for all {len(jobs)} on {workers} idle cores: "
          f"{sum(cpu) * len(jobs) / count / workers / 60:.1f} min")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clips", type=int, default=20, help="clips in the reversal benchmark")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--tra", type=int, default=None, metavar="N",
                        help="time the TRA PyBullet set's build on its first N clips instead")
    args = parser.parse_args(argv)
    if args.tra:
        bench_tra(args.tra, args.workers or 2)
        return
    with tempfile.TemporaryDirectory(prefix="chronoscope-bench-") as tmp:
        work = Path(tmp)
        times, prepared, root = bench_set(work, args.runs, args.workers)
        forwards = [root / p.stimuli[0].path for p in prepared[: args.clips]]
        reverse = bench_reverse(forwards, work, args.repeats)
    clips = len(prepared)
    median = statistics.median
    ours, same, default = (median(reverse[k]) for k in ("ours", "ffmpeg_same", "ffmpeg_default"))
    ratios = [o / s for o, s in zip(reverse["ours"], reverse["ffmpeg_same"])]
    render, prepare = median(times["render"]), median(times["prepare"])
    cpu = median(times["render_cpu"]) + median(times["prepare_cpu"])
    rows = [
        ("render built-in set (%d clips), s" % clips, render, "", ""),
        ("prepare built-in set (%d clips), s" % clips, prepare, "", ""),
        ("render + prepare, s", render + prepare, "", ""),
        ("render + prepare, CPU s (all processes)", cpu, "", ""),
        ("reverse per clip: ours (checked), ms", ours * 1e3, "", ""),
        ("reverse per clip: ffmpeg -vf reverse, same settings, ms", same * 1e3,
         f"{ours / same:.2f}x", f"{median(ratios):.2f}x"),
        ("reverse per clip: ffmpeg -vf reverse, defaults, ms", default * 1e3,
         f"{ours / default:.2f}x", ""),
    ]
    print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f} runs={args.runs} "
          f"reversal clips={len(forwards)} x {args.repeats}")
    print(f"{'measure':<58} {'value':>10} {'ours/it':>8} {'per-clip':>9}")
    for name, value, ratio, per_clip in rows:
        print(f"{name:<58} {value:>10.2f} {ratio:>8} {per_clip:>9}")


if __name__ == "__main__":
    main()
