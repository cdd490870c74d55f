#!/usr/bin/env python
"""Power of the ``tra-sweep`` design: how precisely one participant's threshold is estimated.

Simulated participants answer forward/backward on every level of a sweep; P(correct) goes
between chance (0.5) and 1 - lapse along a cumulative normal, and the fit is the report's own
(``analysis.report.tra.PEOPLE_FIT``: guess 0.5, lapse estimated in [0, 0.06], profile
likelihood intervals, the sweep's direction known from its physics since 2026-11-28; the
figures in ``experiments.designs`` were measured with it free).  For each sweep, true lapse rate and number of trials per level it
prints the median and 80th percentile of the 95% CI half-width of the threshold over
participants, the share whose half-width is at most one level step, and the fits that give
no interval (at a bound).  Not a timing benchmark: the load is printed only to date the run.

Sweeps: the PyBullet set's (``stimuli generate --set tra``): ball restitution 0.1-1.0 in 10
levels, P(correct) falling to chance at elastic (threshold 0.6, 5-95% width 0.5); pendulum
damping 0-5 in 11 levels, rising from chance at no damping (threshold 1.5, width 2.5).

    python bench/tra_power.py
    python bench/tra_power.py --observers 100 --trials 16,20,24 --lapses 0,0.04
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.psychometric import fit_psychometric  # noqa: E402
from analysis.report.tra import PEOPLE_FIT  # noqa: E402
from analysis.sweep_fits import psychometric_values  # noqa: E402
from experiments.synthetic import curve_direction  # noqa: E402
from experiments.synthetic.tra_bullet import SWEEP_DAMPINGS, SWEEP_RESTITUTIONS  # noqa: E402

SWEEPS = {  # name -> (levels, threshold, width, direction)
    "bouncing_ball": (np.array(SWEEP_RESTITUTIONS), 0.6, 0.5, -1),
    "pendulum": (np.array(SWEEP_DAMPINGS), 1.5, 2.5, 1),
}


def participant(rng, levels, threshold, width, direction, trials, lapse) -> pd.DataFrame:
    """One participant's answers: ``trials`` per level, half on each copy of a source clip."""
    x = np.repeat(levels, trials)
    p = psychometric_values(threshold, width, direction, x, "norm", 0.5, lapse)
    return pd.DataFrame({"level": x, "correct": (rng.random(x.size) < p).astype(float),
                         "source_clip_id": np.arange(x.size) // 2})


def half_widths(rng, sweep, trials, lapse, observers, n_boot):
    levels, threshold, width, direction = SWEEPS[sweep]
    out = []
    for _ in range(observers):
        data = participant(rng, levels, threshold, width, direction, trials, lapse)
        try:
            fit = fit_psychometric(data, "level", rng=rng, n_boot=n_boot, **PEOPLE_FIT,
                                   direction=curve_direction(sweep, levels))
        except ValueError:  # answers that never vary: no fit at all
            out.append(np.nan)
            continue
        out.append((fit["threshold_hi"] - fit["threshold_lo"]) / 2)
    return np.array(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observers", type=int, default=60)
    parser.add_argument("--trials", default="12,16,20,22,24,32")
    parser.add_argument("--lapses", default="0,0.02,0.04")
    parser.add_argument("--n-boot", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"load {os.getloadavg()[0]:.1f}; {args.observers} participants a row, "
          f"{args.n_boot} resamples each; half-width of the threshold's 95% CI")
    print(f"{'sweep':<14}{'lapse':>6}{'trials':>7}{'median':>9}{'80th pct':>10}"
          f"{'<= 1 step':>11}{'no CI':>7}{'s/fit':>7}")
    for sweep, (levels, *_) in SWEEPS.items():
        step = float(np.diff(levels).min())
        for lapse in (float(v) for v in args.lapses.split(",")):
            for trials in (int(v) for v in args.trials.split(",")):
                start = time.perf_counter()
                hw = half_widths(rng, sweep, trials, lapse, args.observers, args.n_boot)
                seconds = (time.perf_counter() - start) / args.observers
                fitted = hw[np.isfinite(hw)]
                median, p80 = (np.percentile(fitted, q) if fitted.size else np.nan
                               for q in (50, 80))
                within = np.mean(np.nan_to_num(hw, nan=np.inf) <= step)
                print(f"{sweep:<14}{lapse:>6.2f}{trials:>7}{median:>9.3f}{p80:>10.3f}"
                      f"{within:>11.0%}{np.isnan(hw).sum():>7}{seconds:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
