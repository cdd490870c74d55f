"""What a clip-length set costs (experiments.length_sweep): preparing every clip's cuts at the
default levels against preparing the clips themselves, in time and disk.

    python bench/length_stimuli.py [--rounds 3] [--per-category 1] [--levels 2,3,...,90]

The built-in set's regular clips (3 s, 90 frames) are rendered once; then, in interleaved
rounds, (a) the baseline: the clips prepared as a study set is (forward + backward, checked,
padded; no frame sets) and (b) the cuts: each clip cut to the n frames around its middle at every level
(lossless) and those cuts prepared the same way. One worker process each, so the ratio is
the work's, not the scheduler's. Prints medians with their range, the ratio (b)/(a), bytes
on disk of each, and the machine's load (``uptime``) before and after.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from experiments import length_sweep  # noqa: E402
from experiments.stimuli import prepare_clips  # noqa: E402
from experiments.synthetic import synthetic_specs  # noqa: E402

DEFAULT_LEVELS = "2,3,4,6,8,12,16,24,32,48,64,90"  # manage.py stimuli lengths' default


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _prepare(specs, out: Path) -> tuple[float, int]:
    start = time.perf_counter()
    prepare_clips(specs, out, [s.clip_key for s in specs], frame_set_sizes=(), workers=1)
    return time.perf_counter() - start, _bytes(out)


def _cuts(specs, levels, out: Path) -> tuple[float, int]:
    start = time.perf_counter()
    cuts = [c for s in specs for c in length_sweep.length_specs(s, levels, out / "lossless",
                                                               np.random.default_rng(0))]
    prepare_clips(cuts, out / "set", [c.clip_key for c in cuts], frame_set_sizes=(), workers=1)
    return time.perf_counter() - start, _bytes(out / "set")


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}, {max(values):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-category", type=int, default=1)
    parser.add_argument("--levels", default=DEFAULT_LEVELS)
    args = parser.parse_args()
    levels = length_sweep.parse_levels(args.levels)
    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory() as folder:
        specs = [s for s in synthetic_specs(Path(folder) / "src", seed=0,
                                            clips_per_category=args.per_category)
                 if s.split is None]
        times: dict[str, list[float]] = {"clips": [], "cuts": []}
        sizes: dict[str, int] = {}
        for r in range(args.rounds):
            for name in (("clips", "cuts") if r % 2 == 0 else ("cuts", "clips")):
                out = Path(folder) / f"{name}-{r}"
                seconds, size = (_prepare(specs, out) if name == "clips"
                                 else _cuts(specs, levels, out))
                times[name].append(seconds)
                sizes[name] = size
    ratios = [c / b for c, b in zip(times["cuts"], times["clips"])]
    print(f"{len(specs)} clips, levels {list(levels)} ({sum(levels)} frames a clip across "
          f"levels), {args.rounds} interleaved rounds, 1 worker")
    print(f"  clips (baseline): {_summary(times['clips'])} s, {sizes['clips']} bytes")
    print(f"  cuts:             {_summary(times['cuts'])} s, {sizes['cuts']} bytes")
    print(f"  time ratio cuts/clips: {_summary(ratios)}; disk ratio "
          f"{sizes['cuts'] / sizes['clips']:.2f}")
    print("load after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
