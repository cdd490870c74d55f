"""Time the full analysis report on a large simulated study against a plain pandas groupby.

The study is simulated (analysis.simulate): people as signal-detection observers with a
forward bias, plus models, in the canonical trial shape. The full report is what
``manage.py analyze`` does after reading the CSV (its independent sections in a second
process from ``build.PARALLEL_FROM_TRIALS`` trials; also timed in one process): normalise the table, build every table and
figure (two-way participant x clip bootstrap CIs, per-participant signal detection, the
log-RT LMM, the GEE and the crossed GLMM, human-vs-model, ordering, exclusion flow) and
write report.html, the CSVs and metrics.json. The baseline is the one-line pandas answer to
the simplest question the report answers: accuracy by category.

Rounds are interleaved (groupby, report, groupby, ...), so drift on a shared machine hits
both alike; the ratio is taken per round and reported as median [range].

    .venv/bin/python bench/analysis.py                     # 2,000 x 500 = 1,000,000 trials
    .venv/bin/python bench/analysis.py --participants 200  # quicker
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis import loading, simulate  # noqa: E402
from analysis.report import build, output  # noqa: E402
from analysis.report import registry as R  # noqa: E402

GOAL_S = 10.0


def simulated_study(participants: int, trials: int, seed: int):
    spec = simulate.StudySpec(
        n_participants=participants, trials_per_participant=trials, n_clips=360,
        ordering_share=0.1,
        models={"model-forward-biased": simulate.Observer(d_prime=0.4, criterion=1.0,
                                                          label_position_bias=0.5),
                "model-sensitive": simulate.Observer(d_prime=1.8, criterion=0.1)})
    return simulate.simulate_study(spec, np.random.default_rng(seed))


def baseline(data) -> float:
    """Plain pandas: accuracy by category (multi-label exploded), nothing else."""
    start = time.perf_counter()
    data[["categories", "correct"]].explode("categories").groupby("categories")["correct"].mean()
    return time.perf_counter() - start


def full_report(data, out_dir: Path, n_boot: int, parallel: bool | None = None):
    start = time.perf_counter()
    trials = loading.normalize_trials(data)
    report = build.build_report(trials, n_boot=n_boot, rng=np.random.default_rng(0),
                                parallel=parallel)
    output.write_report(report, out_dir)
    return time.perf_counter() - start, report


def median_range(values, fmt: str = "{:.2f}") -> str:
    values = sorted(values)
    return (f"{fmt.format(statistics.median(values))} "
            f"[{fmt.format(values[0])}-{fmt.format(values[-1])}]")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=2000)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    data = simulated_study(args.participants, args.trials, args.seed)
    simulate_s = time.perf_counter() - t0
    base, full, serial, loads, parts = [], [], [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            base.append(min(baseline(data) for _ in range(3)))
            serial.append(full_report(data, Path(tmp), args.n_boot, parallel=False)[0])
            seconds, report = full_report(data, Path(tmp), args.n_boot)
            full.append(seconds)
            for name, sec in report.timings_s.items():
                parts.setdefault(name, []).append(sec)
        html_mb = (Path(tmp) / "report.html").stat().st_size / 1e6
    info = report.fit_info
    print(f"{len(data):,} trials ({args.participants:,} participants x {args.trials} trials "
          f"+ 2 models); simulated in {simulate_s:.1f} s; {args.rounds} interleaved rounds; "
          f"load1 {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")
    print(f"{'what':<46}{'seconds, median [range]':>26}{'x groupby, median [range]':>30}")
    print(f"{'pandas groupby: accuracy by category':<46}{median_range(base, '{:.3f}'):>26}"
          f"{'1':>30}")
    ratios = [f / b for f, b in zip(full, base)]
    print(f"{'full report, one process':<46}{median_range(serial):>26}"
          f"{median_range([f / b for f, b in zip(serial, base)], '{:.0f}'):>30}")
    print(f"{'full report (goal < %.0f s)' % GOAL_S:<46}{median_range(full):>26}"
          f"{median_range(ratios, '{:.0f}'):>30}")
    print(f"full report / one process: "
          f"{median_range([f / s for f, s in zip(full, serial)])} (same rounds)")
    slow = sorted(parts.items(), key=lambda kv: -statistics.median(kv[1]))[:8]
    print("slowest parts (median s): " + ", ".join(
        f"{k} {statistics.median(v):.2f}" for k, v in slow))
    print(f"intervals: {info['uncertainty']['n_boot']} resamples; people "
          f"{info['uncertainty']['people']}; models {info['uncertainty']['models']}")
    for name in (R.RT_LMM, R.ACCURACY_GLMM):
        if name in info and "fitted_on" in info[name]:
            print(f"{name} fitted on {info[name]['fitted_on']}")
    verdict = "met" if statistics.median(full) < GOAL_S else "NOT met"
    print(f"goal: full report < {GOAL_S:.0f} s: {verdict}; report.html {html_mb:.1f} MB")


if __name__ == "__main__":
    main()
