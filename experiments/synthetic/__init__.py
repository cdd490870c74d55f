"""The built-in synthetic stimulus set, rendered with numpy (no downloads).

Every clip is 3 s at 30 fps (90 frames of 320x240) and shows a real physical process of one
of the six arrow-of-time categories, plus the two parameter sweeps of the Temporal Reversal
Asymmetry paper (bouncing-ball restitution 0.1-1.0, pendulum damping 0-5).  Rendering is
deterministic: clip ``k`` of category ``c`` draws its parameters from
``numpy.random.default_rng([seed, c, k])`` and its pixels depend on those parameters only,
which are all recorded in ``ClipSpec.params``.  Source clips are stored losslessly (H.264
RGB, qp 0) so preparation starts from the exact rendered pixels.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from experiments import length_sweep, media
from experiments.categories import CATEGORIES
from experiments.stimuli import ClipSpec, build_workers
from experiments.synthetic import canvas
from experiments.synthetic.diffusion import FIREWORK, INK
from experiments.synthetic.division import KNIFE, WEDGE
from experiments.synthetic.fall import BALL, BOX, POT
from experiments.synthetic.proceed import CAR, WALKER
from experiments.synthetic.put import JAR, STACK
from experiments.synthetic.reciprocal import PENDULUM, SPRING

GENERATOR_VERSION = "chronoscope-synthetic/1"
SCENES = {scene.name: scene for scene in (WALKER, CAR, BALL, BOX, POT, INK, FIREWORK, KNIFE,
                                          WEDGE, STACK, JAR, PENDULUM, SPRING)}
# Scenes cycled through for each category's clips; some add a second label (pot, firework, jar).
PLAN = {
    "Proceed": ("walker", "car"),
    "Fall": ("bouncing_ball", "dropped_box", "shattering_pot"),
    "Diffusion": ("ink_drop", "firework"),
    "Division": ("knife_cut", "wedge_split"),
    "Put": ("block_stack", "jar_fill"),
    "Reciprocal": ("pendulum", "spring_mass"),
}
RESTITUTIONS = tuple(round(0.1 * k, 1) for k in range(1, 11))
DAMPINGS = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0)
TRA_SPLIT = "tra-sweep"


def _regular_jobs(seed: int, per_category: int) -> list[dict]:
    jobs = []
    for c, category in enumerate(CATEGORIES):
        names = PLAN[category]
        for k in range(per_category):
            scene = SCENES[names[k % len(names)]]
            params = scene.sample(np.random.default_rng([seed, c, k]))
            params.update(scene=scene.name, seed=seed, rng_key=[seed, c, k],
                          generator=GENERATOR_VERSION)
            jobs.append({"clip_key": f"{category.lower()}-{k:02d}-{scene.name}",
                         "params": params, "split": None})
    return jobs


def _sweep_jobs(seed: int) -> list[dict]:
    """The TRA sweeps: one fixed scene, only the dissipation parameter varies."""
    jobs: list[dict[str, Any]] = []
    for e in RESTITUTIONS:
        params = {"scenario": "bouncing_ball", "restitution": e, "drop_m": 2.0, "vx_px_s": 0.0,
                  "radius_px": 12.0, "color": "red", "start_x": 160.0, "delay_s": 0.2}
        jobs.append({"clip_key": f"tra-bounce-e{e:.1f}", "params": params})
    for d in DAMPINGS:
        params = {"scenario": "pendulum", "damping": d, "damping_1_s": d, "length_px": 140.0,
                  "length_m": 0.4, "theta0_rad": 0.7, "omega0_rad_s": 0.0, "bob_px": 13.0,
                  "color": "blue", "start_side": 1}
        jobs.append({"clip_key": f"tra-pendulum-d{d:.1f}", "params": params})
    for job in jobs:
        job["params"].update(scene=job["params"]["scenario"], seed=seed,
                             generator=GENERATOR_VERSION)
        job["split"] = TRA_SPLIT
    return jobs


# The parameter each sweep varies, and its value with (almost) no dissipation: a perfectly
# elastic bounce, an undamped pendulum (the TRA paper's low-dissipation end of each sweep).
SWEEP_PARAMETERS = {"bouncing_ball": ("restitution", 1.0), "pendulum": ("damping", 0.0)}


def curve_direction(scenario: str, levels) -> int | None:
    """Which way P(correct) runs along a sweep of ``levels``: +1 rising, -1 falling, None
    where the physics does not say. Dissipation is what gives time its arrow, and it grows
    with the distance from the sweep's lossless value (:data:`SWEEP_PARAMETERS`): a sweep
    starting at it gets easier along the levels (damping 0 upwards), one ending at it harder
    (restitution up to 1). A sweep that straddles it, or an unknown scenario, has no known
    direction. A clip-length sweep (:data:`experiments.length_sweep.SWEEP`) rises: more
    frames never hide the earlier ones.

    Examples
    --------
    >>> curve_direction("bouncing_ball", [0.1, 0.5, 1.0]), curve_direction("pendulum", [0, 5])
    (-1, 1)
    >>> curve_direction("length", [2, 4, 8])
    1
    """
    if scenario == length_sweep.SWEEP:
        return 1
    if scenario not in SWEEP_PARAMETERS:
        return None
    lossless = SWEEP_PARAMETERS[scenario][1]
    values = [float(v) for v in levels]
    return 1 if lossless <= min(values) else -1 if lossless >= max(values) else None


def sweep_labels(params: dict) -> dict:
    """A sweep clip's TRA labels: ``scenario``, ``parameter``, ``parameter_value``, ``process``.

    Examples
    --------
    >>> sweep_labels({"scenario": "pendulum", "damping": 2.0})["process"]
    'dissipative'
    """
    scenario = params.get("scenario")
    if scenario not in SWEEP_PARAMETERS:
        raise ValueError(f"not a TRA sweep clip (scenario {scenario!r}); sweeps are "
                         f"{sorted(SWEEP_PARAMETERS)}")
    parameter, lossless = SWEEP_PARAMETERS[scenario]
    value = float(params[parameter])
    return {"scenario": scenario, "parameter": parameter, "parameter_value": value,
            "process": "low_dissipation" if value == lossless else "dissipative"}


def write_lossless(frames: np.ndarray, path: Path, fps: float = canvas.FPS) -> media.VideoInfo:
    """Store rendered RGB frames exactly (libx264rgb qp 0); checks the frame count."""
    height, width = frames.shape[1:3]
    command = [media.ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-nostdin",
               "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{width}x{height}",
               "-framerate", str(fps), "-i", "pipe:0", "-an", "-c:v", "libx264rgb", "-qp", "0",
               "-preset", "veryfast", "-threads", "1", "-fflags", "+bitexact",
               "-f", "matroska", "-y", str(path)]
    written = media.pipe_to_ffmpeg(command, frames)
    info = media.probe(path)
    if info.frame_count != written:
        raise media.MediaError(f"{path}: {info.frame_count} frames decoded, {written} written")
    return info


def render_job(job: dict, out_dir: Path) -> ClipSpec:
    """Render and store one clip; a pure function of ``job`` (run in worker processes)."""
    scene = SCENES[job["params"]["scene"]]
    frames = scene.render(job["params"])
    path = Path(out_dir) / f"{job['clip_key']}.mkv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_lossless(frames, path)
    brief, comprehensive = scene.describe(job["params"])
    return ClipSpec(clip_key=job["clip_key"], path=path, categories=list(scene.categories),
                    annotation_brief=brief, annotation_comprehensive=comprehensive,
                    split=job["split"], params=job["params"])


def synthetic_specs(out_dir: Path, seed: int, clips_per_category: int = 8,
                    workers: int | None = None, include_sweeps: bool = True) -> list[ClipSpec]:
    """Render the built-in set into ``out_dir``: ``6 * clips_per_category`` clips + 17 sweep clips.

    Same seed, same pixels (and, with the same ffmpeg build, the same file bytes).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if clips_per_category < 1:
        raise ValueError(f"clips_per_category must be >= 1, got {clips_per_category}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = _regular_jobs(int(seed), clips_per_category)
    jobs += _sweep_jobs(int(seed)) if include_sweeps else []
    workers = build_workers(len(jobs), workers)
    if workers <= 1:
        return [render_job(job, out_dir) for job in jobs]
    # spawn, not fork: callers (a Flask CLI, a test runner) may hold threads and locks.
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(render_job, jobs, [out_dir] * len(jobs), chunksize=2))
