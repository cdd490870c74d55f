"""Time the full analysis report on a large simulated study against a plain pandas groupby.

The study is simulated (analysis.simulate): people as signal-detection observers with a
forward bias, plus models, in the canonical trial shape. The full report is what
``manage.py analyze`` does after reading the CSV: normalise the table, build every table and
figure (bootstrap CIs, LMM and GEE fits, human-vs-model, ordering, exclusion flow) and write
report.html, the CSVs and metrics.json. The baseline is the one-line pandas answer to the
simplest question the report answers: accuracy by category.

    .venv/bin/python bench/analysis.py                     # 2,000 x 500 = 1,000,000 trials
    .venv/bin/python bench/analysis.py --participants 200  # quicker
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis import loading, report_output, reports, simulate  # noqa: E402


def simulated_study(participants: int, trials: int, seed: int):
    spec = simulate.StudySpec(
        n_participants=participants, trials_per_participant=trials, n_clips=360,
        ordering_share=0.1,
        models={"model-forward-biased": simulate.Observer(d_prime=0.4, criterion=1.0,
                                                          label_position_bias=0.5),
                "model-sensitive": simulate.Observer(d_prime=1.8, criterion=0.1)})
    return simulate.simulate_study(spec, np.random.default_rng(seed))


def baseline(data) -> tuple[float, float]:
    """Plain pandas: accuracy by category (multi-label exploded), nothing else."""
    start, cpu_start = time.perf_counter(), time.process_time()
    data[["categories", "correct"]].explode("categories").groupby("categories")["correct"].mean()
    return time.perf_counter() - start, time.process_time() - cpu_start


def full_report(data, out_dir: Path, n_boot: int) -> tuple[float, float, dict, dict]:
    start, cpu_start = time.perf_counter(), time.process_time()
    stages = {}
    t0 = time.perf_counter()
    trials = loading.normalize_trials(data)
    stages["normalize"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = reports.build_report(trials, n_boot=n_boot, rng=np.random.default_rng(0))
    stages["build tables + figures"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    report_output.write_report(report, out_dir)
    stages["write html/csv/json"] = time.perf_counter() - t0
    return (time.perf_counter() - start, time.process_time() - cpu_start, stages,
            report.timings_s)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=2000)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    data = simulated_study(args.participants, args.trials, args.seed)
    simulate_s = time.perf_counter() - t0
    base_s, base_cpu = min(baseline(data) for _ in range(3))
    with tempfile.TemporaryDirectory() as tmp:
        report_s, report_cpu, stages, inner = full_report(data, Path(tmp), args.n_boot)
        html_mb = (Path(tmp) / "report.html").stat().st_size / 1e6

    print(f"{len(data):,} trials ({args.participants:,} participants x {args.trials} trials "
          f"+ 2 models); simulated in {simulate_s:.1f} s; n_boot={args.n_boot}")
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          f"(wall time inflates when other work shares the cores; CPU time does not)")
    print(f"{'what':<44}{'wall s':>10}{'ratio':>8}{'cpu s':>10}{'ratio':>8}")
    print(f"{'pandas groupby: accuracy by category':<44}{base_s:>10.2f}{1.0:>8.1f}"
          f"{base_cpu:>10.2f}{1.0:>8.1f}")
    print(f"{'full report (goal < 30 s)':<44}{report_s:>10.2f}{report_s / base_s:>8.1f}"
          f"{report_cpu:>10.2f}{report_cpu / base_cpu:>8.1f}")
    for name, sec in stages.items():
        print(f"{'  ' + name:<44}{sec:>10.2f}")
    slow = sorted(inner.items(), key=lambda kv: -kv[1])[:6]
    print("slowest report parts: " + ", ".join(f"{k} {v:.2f} s" for k, v in slow))
    print(f"report.html: {html_mb:.1f} MB")


if __name__ == "__main__":
    main()
