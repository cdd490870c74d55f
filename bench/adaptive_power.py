#!/usr/bin/env python
"""The ``tra-adaptive`` design against ``tra-sweep``: how precisely, and how truly, one
participant's threshold is estimated from QUEST+ trials and from fixed levels, in one run.

The simulated participants are ``bench/tra_power.py``'s (the same sweeps, thresholds, widths
and directions; P(correct) between chance and 1 - lapse along a cumulative normal), and
both designs' data are fitted by the report's own fit (``analysis.report.tra.PEOPLE_FIT``:
guess 0.5, lapse estimated in [0, 0.06], profile likelihood intervals). Adaptive: each
trial at the level :mod:`experiments.adaptive` chooses from the answers before it, ``n``
trials a sweep. Fixed: ``--fixed`` trials at every level. Per sweep, lapse rate and
design it prints the trials, the share of participants whose threshold's 95% CI half-width
is at most one level step, the median half-width, the threshold's bias (mean of estimate -
truth, with its standard error) and RMSE, the CIs' coverage of the true threshold, and the
fits that gave no interval. Not a timing benchmark: the load is printed only to date it.

    python bench/adaptive_power.py
    python bench/adaptive_power.py --observers 100 --adaptive 60,120 --fixed 24 --lapses 0.02
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.psychometric import fit_psychometric  # noqa: E402
from analysis.report.tra import PEOPLE_FIT  # noqa: E402
from analysis.sweep_fits import psychometric_values  # noqa: E402
from bench.tra_power import SWEEPS, participant  # noqa: E402
from experiments import adaptive  # noqa: E402


def adaptive_participant(rng, levels, threshold, width, direction, trials, lapse):
    """One participant's answers on ``trials`` QUEST+ trials of a sweep."""
    grid = adaptive.parameter_grid(levels)
    answers: list[tuple[float, bool | None]] = []
    for _ in range(trials):
        level, _ = adaptive.next_level(grid, answers)
        p = psychometric_values(threshold, width, direction, np.array([level]), "norm", 0.5,
                                lapse)[0]
        answers.append((level, bool(rng.random() < p)))
    return pd.DataFrame({"level": [a[0] for a in answers],
                         "correct": [float(a[1]) for a in answers]})


def one_row(rng, sweep, design, trials, lapse, observers):
    levels, threshold, width, direction = SWEEPS[sweep]
    estimates, half, covered = [], [], []
    for _ in range(observers):
        make = adaptive_participant if design == "adaptive" else participant
        data = make(rng, levels, threshold, width, direction, trials, lapse)
        try:
            fit = fit_psychometric(data, "level", rng=rng, **PEOPLE_FIT)
        except ValueError:  # answers that never vary, or fewer than 3 levels: no fit
            estimates.append(np.nan), half.append(np.nan), covered.append(False)
            continue
        lo, hi = fit["threshold_lo"], fit["threshold_hi"]
        estimates.append(fit["threshold"])
        half.append((hi - lo) / 2)
        covered.append(bool(lo <= threshold <= hi))
    est, hw = np.array(estimates), np.array(half)
    error = est[np.isfinite(est)] - threshold
    step = float(np.diff(levels).min())
    n = trials if design == "adaptive" else trials * len(levels)
    return {"sweep": sweep, "lapse": lapse, "design": design, "trials": n,
            "within_step": np.mean(np.nan_to_num(hw, nan=np.inf) <= step),
            "median_halfwidth": np.nanmedian(hw), "bias": error.mean(),
            "bias_se": error.std(ddof=1) / np.sqrt(error.size),
            "rmse": np.sqrt(np.mean(error ** 2)), "coverage": np.mean(covered),
            "no_ci": int(np.isnan(hw).sum())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observers", type=int, default=60)
    parser.add_argument("--adaptive", default="60,120", help="QUEST+ trials a sweep")
    parser.add_argument("--fixed", default="24", help="fixed design's trials a level")
    parser.add_argument("--lapses", default="0,0.02,0.04")
    parser.add_argument("--sweeps", default=",".join(SWEEPS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"load {os.getloadavg()[0]:.1f}; {args.observers} participants a row; the threshold's "
          "95% CI (profile likelihood, the report's)")
    print(f"{'sweep':<14}{'lapse':>6}{'design':>9}{'trials':>7}{'<=1 step':>9}{'med hw':>8}"
          f"{'bias':>8}{'(se)':>7}{'rmse':>7}{'cover':>7}{'no CI':>6}")
    for sweep in args.sweeps.split(","):
        for lapse in (float(v) for v in args.lapses.split(",")):
            rows = [("adaptive", int(v)) for v in args.adaptive.split(",")] + \
                [("fixed", int(v)) for v in args.fixed.split(",")]
            for design, trials in rows:
                r = one_row(rng, sweep, design, trials, lapse, args.observers)
                print(f"{sweep:<14}{lapse:>6.2f}{design:>9}{r['trials']:>7}"
                      f"{r['within_step']:>9.0%}{r['median_halfwidth']:>8.3f}{r['bias']:>8.3f}"
                      f"{r['bias_se']:>7.3f}{r['rmse']:>7.3f}{r['coverage']:>7.2f}"
                      f"{r['no_ci']:>6}", flush=True)


if __name__ == "__main__":
    main()
