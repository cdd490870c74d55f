"""How often the report's test of people against 50% rejects a true null.

People and clips are both samples: P(correct) = logistic(u_p + v_k), u_p ~ N(0, person SD)
per participant and v_k ~ N(0, clip SD) per clip (both directions of a clip alike), so the
population's accuracy is exactly 50% and every rejection is a false positive. Each
simulated participant answers every clip in both directions once.

"before" is the t-test of per-participant accuracy against 0.5 (what the report did: it
takes the clips as fixed); "after" is the report's test now
(:func:`analysis.comparisons.binomial_tests`: the two-way participant x clip bootstrap,
which the report gives from :data:`analysis.bootstrap.MIN_PARTICIPANTS` participants on).
The rate is printed with its 95% Clopper-Pearson interval.

    .venv/bin/python bench/null_fpr.py                       # 500 studies a cell
    .venv/bin/python bench/null_fpr.py --sims 200 --people 5 10 20
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis import bootstrap, intervals  # noqa: E402

ALPHA = 0.05


def null_study(n_people: int, n_clips: int, clip_sd: float, person_sd: float,
               rng: np.random.Generator, shift: float = 0.0) -> pd.DataFrame:
    """People's arrow-of-time trials on a true null (population accuracy 50%), or, with a
    ``shift`` of the mean log-odds, off it."""
    u = rng.normal(shift, person_sd, n_people)
    v = rng.normal(0.0, clip_sd, n_clips)
    p = 1 / (1 + np.exp(-(u[:, None, None] + v[None, :, None])))
    right = rng.random((n_people, n_clips, 2)) < np.broadcast_to(p, (n_people, n_clips, 2))
    person, clip, backward = np.indices(right.shape).reshape(3, -1)
    truth = np.where(backward == 1, "B", "F")
    return pd.DataFrame({
        "subject_id": [f"p{i:03d}" for i in person], "subject_kind": "human",
        "trial_type": "aot", "source_clip_id": [f"c{k:03d}" for k in clip],
        "stimulus_id": [f"c{k:03d}/{b}" for k, b in zip(clip, backward)],
        "direction": np.where(backward == 1, "backward", "forward"),
        "correct_response": truth,
        "response": np.where(right.ravel(), truth, np.where(truth == "B", "F", "B"))})


def t_test_p(trials: pd.DataFrame) -> float:
    """Before: one-sample t-test of per-participant accuracy against 0.5."""
    right = trials["response"] == trials["correct_response"]
    return float(stats.ttest_1samp(right.groupby(trials["subject_id"]).mean(), 0.5).pvalue)


def two_way_p(trials: pd.DataFrame, n_boot: int, rng: np.random.Generator) -> float:
    """After: the report's test of people against 50% (as
    :func:`analysis.comparisons.binomial_tests`, here also below its minimum of
    participants, to show why there is one)."""
    boot = bootstrap.bootstrap_draws(trials, n_boot=n_boot, rng=rng).boot["accuracy"][0]
    return intervals.percentile_p_value(boot, 0.5, intervals.few_units(trials))


def rejection_rates(n_sims: int, n_people: int, n_clips: int, clip_sd: float,
                    person_sd: float, n_boot: int, seed: int = 0) -> dict:
    """Share of ``n_sims`` null studies each test rejects at :data:`ALPHA`."""
    rng = np.random.default_rng(seed)
    before = after = 0
    for _ in range(n_sims):
        trials = null_study(n_people, n_clips, clip_sd, person_sd, rng)
        before += t_test_p(trials) < ALPHA
        after += two_way_p(trials, n_boot, rng) < ALPHA
    return {"before": before / n_sims, "after": after / n_sims, "n_before": before,
            "n_after": after, "n_sims": n_sims}


def interval(k: int, n: int) -> str:
    ci = stats.binomtest(k, n).proportion_ci(method="exact")
    return f"{k / n:6.1%} [{ci.low:.1%}, {ci.high:.1%}]"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=500)
    parser.add_argument("--people", type=int, nargs="+", default=[3, 5, 10, 20])
    parser.add_argument("--clips", type=int, default=40)
    parser.add_argument("--clip-sd", type=float, nargs="+", default=[0.0, 1.0])
    parser.add_argument("--person-sd", type=float, default=0.5)
    parser.add_argument("--n-boot", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"True null, {args.clips} clips x 2 directions, person SD {args.person_sd}, "
          f"{args.sims} studies a cell, alpha {ALPHA}; rate [95% CI]")
    print(f"{'clip SD':>7} {'people':>6}  {'before: t over people':>24}  "
          f"{'after: two-way bootstrap':>24}  time")
    for clip_sd in args.clip_sd:
        for people in args.people:
            start = time.perf_counter()
            r = rejection_rates(args.sims, people, args.clips, clip_sd, args.person_sd,
                                args.n_boot, args.seed)
            print(f"{clip_sd:7.1f} {people:6d}  {interval(r['n_before'], r['n_sims']):>24}  "
                  f"{interval(r['n_after'], r['n_sims']):>24}  "
                  f"{time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
