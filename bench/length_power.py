#!/usr/bin/env python
"""The ``aot-length-adaptive`` design's precision: ``bench/adaptive_power.py``'s simulated
QUEST+ participants and the report's fit, on a clip-length sweep (the default levels of
``manage.py stimuli lengths``) instead of a TRA sweep. Not a timing benchmark.

    python bench/length_power.py [--observers 20] [--trials 80,120] [--lapses 0.02]
        [--threshold 8] [--width 12]

Prints, per trial count and lapse rate, the median 95% CI half-width of the threshold (in
frames), its bias (with its standard error) and RMSE, the CIs' coverage of the true
threshold and the fits without an interval (on a fitting limit, as the report gives them).
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import adaptive_power  # noqa: E402
from bench.length_stimuli import DEFAULT_LEVELS  # noqa: E402
from experiments.length_sweep import SWEEP, parse_levels  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observers", type=int, default=20)
    parser.add_argument("--trials", default="80,120")
    parser.add_argument("--lapses", default="0.02")
    parser.add_argument("--threshold", type=float, default=8.0, help="frames")
    parser.add_argument("--width", type=float, default=12.0, help="frames, 5%%-95%%")
    parser.add_argument("--levels", default=DEFAULT_LEVELS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    levels = np.array(parse_levels(args.levels), float)
    # one more sweep beside the TRA ones, read by adaptive_power's participants and fit; its
    # curve rises (experiments.synthetic.curve_direction)
    adaptive_power.SWEEPS[SWEEP] = (levels, args.threshold, args.width, 1)
    rows = [("adaptive", int(v), None) for v in args.trials.split(",")]
    print(f"load {os.getloadavg()[0]:.1f}; {args.observers} participants a row; levels "
          f"{levels.astype(int).tolist()}; threshold {args.threshold} frames, width {args.width}")
    print(f"{'lapse':>6}{'trials':>7}{'med hw':>8}{'bias':>8}{'(se)':>7}{'rmse':>7}"
          f"{'cover':>7}{'no CI':>6}")
    seeds = np.random.SeedSequence(args.seed)
    for lapse in (float(v) for v in args.lapses.split(",")):
        # interleaved: participant by participant, every row in turn
        done = [adaptive_power.one_fit(int(s.generate_state(1)[0]), SWEEP, row, lapse, True)
                for s in seeds.spawn(args.observers) for row in rows]
        for i, row in enumerate(rows):
            r = adaptive_power.summarise(SWEEP, done[i::len(rows)], 1)
            print(f"{lapse:>6.2f}{row[1]:>7}{r['median_halfwidth']:>8.2f}{r['bias']:>8.2f}"
                  f"{r['bias_se']:>7.2f}{r['rmse']:>7.2f}{r['coverage']:>7.2f}"
                  f"{r['no_ci']:>6}", flush=True)


if __name__ == "__main__":
    main()
