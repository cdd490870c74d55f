#!/usr/bin/env python
"""Time of the report's TRA-sweep section on a study of the shipped PyBullet design.

The study is simulated in the trial table's shape: participants who answer every sweep clip
of the PyBullet set once forward and once reversed (22 trials a ball level, 20 a pendulum
level, ``experiments/studies/tra-sweep-pybullet.toml``) with 3% lapses, VLMs scored on every
clip in both label orders, and one self-supervised model's TRA at two context lengths.
Timed: ``analysis.report.tra.sweep_tables`` with the report's fits (people's lapse rate
estimated on a 13-point grid) against its baseline, the same section with the lapse fixed at
0 as before; rounds interleaved, medians [range], the load, and the ratio per round.

    python bench/tra_report.py
    python bench/tra_report.py --participants 60 --vlms 5 --rounds 3 --n-boot 2000
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import columns as C  # noqa: E402
from analysis.report import registry as R  # noqa: E402
from analysis.report import tra as report_tra  # noqa: E402
from analysis.sweep_fits import psychometric_values  # noqa: E402
from experiments.synthetic.tra_bullet import (  # noqa: E402
    BALL_REPEATS,
    PENDULUM_REPEATS,
    SWEEP_DAMPINGS,
    SWEEP_RESTITUTIONS,
)

# scenario -> parameter, levels, source clips a level, threshold, width, direction
SWEEPS = {"bouncing_ball": ("restitution", SWEEP_RESTITUTIONS, BALL_REPEATS, 0.6, 0.5, -1),
          "pendulum": ("damping", SWEEP_DAMPINGS, PENDULUM_REPEATS, 1.5, 2.5, 1)}


def sweep_levels() -> pd.DataFrame:
    return pd.DataFrame([
        {"source_clip_id": f"{scenario}-{value}-{r}", "scenario": scenario,
         "parameter": parameter, "parameter_value": value}
        for scenario, (parameter, values, repeats, *_) in SWEEPS.items()
        for value in values for r in range(repeats)])


def study(rng, participants: int, vlms: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    levels = sweep_levels()
    truth = levels.apply(lambda c: psychometric_values(*SWEEPS[c.scenario][3:], c.parameter_value,
                                                       "norm", 0.5, 0.0), axis=1).to_numpy()
    rows = []
    for subject in range(participants):
        for direction in (C.FORWARD, C.BACKWARD):
            p = 0.5 + (truth - 0.5) * (1 - 0.03 / 0.5)  # 3% lapses
            rows.append(pd.DataFrame({
                "subject_kind": C.HUMAN, "subject_id": f"p{subject}", "observer": "people",
                "source_clip_id": levels["source_clip_id"], "direction": direction,
                "stimulus_id": levels["source_clip_id"] + direction,
                "correct": (rng.random(len(levels)) < p).astype(float)}))
    for model in range(vlms):
        bias = rng.normal(0, 0.1, len(levels))
        for direction in (C.FORWARD, C.BACKWARD):
            for order in ("FB", "BF"):
                p_correct = np.clip(0.5 + 0.3 * (truth - 0.5) + rng.normal(0, 0.05, len(levels)),
                                    0, 1)
                p_forward = np.clip((p_correct if direction == C.FORWARD else 1 - p_correct)
                                    + bias, 0, 1)
                rows.append(pd.DataFrame({
                    "subject_kind": C.MODEL, "subject_id": f"vlm{model}",
                    "observer": f"vlm{model}", "source_clip_id": levels["source_clip_id"],
                    "direction": direction, "stimulus_id": levels["source_clip_id"] + direction,
                    "correct": (p_correct > 0.5).astype(float), "p_forward": p_forward,
                    "label_order": order}))
    tra = pd.concat([levels.rename(columns={"source_clip_id": "clip_id"}).assign(
        model="vjepa2", context_frames=context, tra=rng.normal(0.001, 0.001, len(levels)))
        for context in (8, 12)], ignore_index=True)
    return pd.concat(rows, ignore_index=True), tra, levels


def median_range(values) -> str:
    values = sorted(values)
    return f"{statistics.median(values):.2f} [{values[0]:.2f}-{values[-1]:.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=30)
    parser.add_argument("--vlms", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args()
    trials, tra, levels = study(np.random.default_rng(0), args.participants, args.vlms)
    estimated = report_tra.PEOPLE_FIT
    modes = {"lapse fixed at 0 (baseline)": {**estimated, "lapse": 0.0},
             "lapse estimated (report)": estimated}
    seconds: dict[str, list[float]] = {name: [] for name in modes}
    loads = []
    for round_ in range(args.rounds):
        names = list(modes)[round_ % 2:] + list(modes)[:round_ % 2]  # rotate the order
        for name in names:
            report_tra.PEOPLE_FIT = modes[name]
            loads.append(os.getloadavg()[0])
            start = time.perf_counter()
            tables = report_tra.sweep_tables(trials, tra, levels, n_boot=args.n_boot)
            seconds[name].append(time.perf_counter() - start)
            assert not tables[R.TRA_SWEEP_FITS].empty
    report_tra.PEOPLE_FIT = estimated
    print(f"{len(trials):,} trials ({args.participants} participants, {args.vlms} VLMs), "
          f"{args.n_boot} resamples; load {min(loads):.1f}-{max(loads):.1f}")
    base = seconds["lapse fixed at 0 (baseline)"]
    for name, values in seconds.items():
        ratios = [v / b for v, b in zip(values, base)]
        print(f"{name:<30} {median_range(values):>20} s   x{median_range(ratios)}")


if __name__ == "__main__":
    main()
