"""People's psychometric fits beside psignifit 4.3 on the same simulated participants.

Each participant of the ``tra-sweep`` design (:mod:`bench.tra_power`: the ball's P(correct)
falls from 1 - lapse to chance over restitution 0.1-1.0, the pendulum's rises over damping
0-5) is fitted twice: by the report's fit (:func:`analysis.psychometric.fit_psychometric`,
maximum likelihood, lapse estimated in [0, 0.06], profile likelihood intervals) and by psignifit
(Bayesian, its default priors: the width's is 0 at one level step and flat from two; a
2AFC guess rate of 0.5, the lapse rate free, no overdispersion, as the simulated trials are
independent). Printed per sweep: coverage of the true threshold and width by each method's
95% interval, and, for the participants whose status is "width: upper bound only" (the
width's lower end on one level step), where psignifit puts its lower end.

    .venv/bin/python bench/psychometric_psignifit.py                  # 100 participants a sweep
    .venv/bin/python bench/psychometric_psignifit.py --participants 20
    .venv/bin/python bench/psychometric_psignifit.py --no-psignifit   # the report's fits alone
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.psychometric import fit_psychometric  # noqa: E402
from analysis.report.tra import PEOPLE_FIT  # noqa: E402
from analysis.sweep_fits import WIDTH_UPPER_ONLY, fit_status  # noqa: E402
from bench.tra_power import SWEEPS, participant  # noqa: E402

ENDS = ("threshold", "threshold_lo", "threshold_hi", "width", "width_lo", "width_hi")


def psignifit_fit(data: pd.DataFrame, direction: int) -> dict:
    """psignifit's estimates and 95% credible intervals; a falling curve is fitted on the
    negated levels (psignifit fits rising curves) and its threshold negated back."""
    import psignifit

    levels = np.unique(data["level"])
    k = data.groupby("level")["correct"].sum().reindex(levels).to_numpy()
    n = data.groupby("level")["correct"].size().reindex(levels).to_numpy()
    table = np.c_[direction * levels, k, n]
    with warnings.catch_warnings():  # its notes on the priors and the grid
        warnings.simplefilter("ignore")
        result = psignifit.psignifit(table, experiment_type="2AFC", sigmoid="norm",
                                     fixed_parameters={"eta": 0.0})
    thr, (thr_lo, thr_hi) = (result.parameter_estimate["threshold"],
                             result.confidence_intervals["threshold"]["0.95"])
    if direction < 0:
        thr, thr_lo, thr_hi = -thr, -thr_hi, -thr_lo
    width_lo, width_hi = result.confidence_intervals["width"]["0.95"]
    return dict(zip(ENDS, (thr, thr_lo, thr_hi, result.parameter_estimate["width"],
                           width_lo, width_hi)))


def compare(rng: np.random.Generator, sweep: str, participants: int, trials: int = 24,
            lapse: float = 0.02, psignifit: bool = True) -> pd.DataFrame:
    """One row per simulated participant: both fits' estimates and intervals, the report's
    status, the level step and the truth."""
    levels, threshold, width, direction = SWEEPS[sweep]
    rows = []
    for i in range(participants):
        data = participant(rng, levels, threshold, width, direction, trials, lapse)
        ours = fit_psychometric(data, "level", rng=rng, **PEOPLE_FIT)
        theirs = psignifit_fit(data, direction) if psignifit else dict.fromkeys(ENDS, np.nan)
        rows.append({"sweep": sweep, "participant": i, "status": fit_status(ours),
                     "level_step": float(np.diff(levels).min()), "true_threshold": threshold,
                     "true_width": width, **{f"ours_{e}": ours[e] for e in ENDS},
                     **{f"psignifit_{e}": theirs[e] for e in ENDS}})
    return pd.DataFrame(rows)


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per sweep and method: coverage of the threshold and the width, the median interval
    widths; for the report's "width: upper bound only" rows, psignifit's median lower end
    in level steps and its share of lower ends below two level steps (its prior's ramp)."""
    out = []
    for (sweep, group), method in product(rows.groupby("sweep"), ("ours", "psignifit")):
        col = lambda e: group[f"{method}_{e}"]  # noqa: E731
        upper_only = group["status"].str.contains(WIDTH_UPPER_ONLY)
        steps = group.loc[upper_only, "psignifit_width_lo"] / group.loc[upper_only, "level_step"]
        out.append({
            "sweep": sweep, "method": method, "n": len(group),
            "threshold_coverage": ((col("threshold_lo") <= group["true_threshold"])
                                   & (group["true_threshold"] <= col("threshold_hi"))).mean(),
            "width_coverage": ((col("width_lo") <= group["true_width"])
                               & (group["true_width"] <= col("width_hi"))).mean(),
            "threshold_ci_median": (col("threshold_hi") - col("threshold_lo")).median(),
            "width_ci_median": (col("width_hi") - col("width_lo")).median(),
            "share_width_upper_only": upper_only.mean(),
            "psignifit_width_lo_steps_median": steps.median(),
            "psignifit_width_lo_below_2_steps": (steps < 2).mean()})
    return pd.DataFrame(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=100)
    parser.add_argument("--trials", type=int, default=24, help="trials a level")
    parser.add_argument("--lapse", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-psignifit", action="store_true",
                        help="the report's fits alone (psignifit takes ~8.5 s a fit)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    rows = pd.concat([compare(rng, sweep, args.participants, args.trials, args.lapse,
                              not args.no_psignifit) for sweep in SWEEPS],
                     ignore_index=True)
    print(f"{args.participants} participants a sweep, {args.trials} trials a level, lapse "
          f"{args.lapse:g}, seed {args.seed}; "
          f"{time.perf_counter() - start:.0f} s")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summary(rows).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
