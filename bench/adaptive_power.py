#!/usr/bin/env python
"""The ``tra-adaptive`` design against ``tra-sweep``: how precisely, and how truly, one
participant's threshold is estimated from QUEST+ trials and from fixed levels, in one run.

The simulated participants are ``bench/tra_power.py``'s (the same sweeps, thresholds, widths
and directions; P(correct) between chance and 1 - lapse along a cumulative normal), and
both designs' data are fitted by the report's own fit (``analysis.report.tra.PEOPLE_FIT``:
guess 0.5, lapse estimated in [0, 0.06], profile likelihood intervals where the report
gives them, ``analysis.sweep_fits.intervals_given``; the sweep's direction known from its
physics, ``--direction free`` fits and places levels for both). Adaptive: each trial at
the level :mod:`experiments.adaptive` chooses from the answers before it, up to ``n`` trials a sweep (``--adaptive``), stopping
early where ``--stop`` is given and the threshold's 95% credible interval is within that
many level steps either side. Fixed: ``--fixed`` trials at every level.

Rows are interleaved: every participant of a round goes through every row (each design, each
budget) before the next round, and a row's share within one step is given as the median of
its rounds' shares with their range, beside the share over all participants. Per sweep,
lapse rate and row it prints the trials (the mean used, where a sweep stops early), the
share of participants whose threshold's 95% CI half-width is at most one level step, the
median half-width, the threshold's bias (mean of estimate - truth, with its standard error)
and RMSE, the CIs' coverage of the true threshold (a fit with no interval is a miss), the
fits given no interval, and per case of a fit on a fitting limit (:func:`bound_case`: a step
between two levels inside the sweep, the widest curve, a threshold beyond the sweep) how
many true thresholds its profile interval covered of how many such fits, given or not, and
how many steps' true widths were at or below their width interval's upper end. At the end
it prints each case's coverage per sweep and row over all lapse rates, with its exact 95%
CI: what decides which cases the report gives an interval (docs/measurements.md).
``--fisher`` prints, per sweep and lapse rate,
the fewest trials a sweep whose expected 95% CI half-width is one level step (Fisher
information at the true parameters, trials spread in the c-optimal way over the levels):
with the threshold alone unknown, and with threshold, width and lapse rate, as fitted. Not
a timing benchmark: the load is printed only to date it.

    python bench/adaptive_power.py
    python bench/adaptive_power.py --observers 200 --rounds 5 --adaptive 60,120 --fixed 24
    python bench/adaptive_power.py --observers 100 --adaptive 60,120 --stop 1 --fisher
"""
import argparse
import multiprocessing
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.psychometric_counts import fit_counts  # noqa: E402
from analysis.psychometric_profile import profile_intervals  # noqa: E402
from analysis.report.tra import PEOPLE_FIT  # noqa: E402
from analysis.sweep_fits import intervals_given, psychometric_values, sweep_values  # noqa: E402
from bench.tra_power import SWEEPS, participant  # noqa: E402
from experiments import adaptive  # noqa: E402
from experiments.synthetic import curve_direction  # noqa: E402

CASES = ("step", "widest", "beyond")  # bound_case's, in the order printed


def adaptive_participant(rng, sweep, trials, lapse, known, stop):
    """One participant's answers on up to ``trials`` QUEST+ trials of a sweep."""
    levels, threshold, width, direction = SWEEPS[sweep]
    grid = adaptive.parameter_grid(levels, curve_direction(sweep, levels) if known else None)
    answers: list[tuple[float, bool | None]] = []
    log_post = np.zeros(grid.threshold.size)
    for _ in range(trials):  # adaptive.next_level, the posterior updated answer by answer
        level, said = adaptive.choose(grid, adaptive.normalised(log_post), len(answers))
        if adaptive.reached(said, stop):
            break
        p = psychometric_values(threshold, width, direction, np.array([level]), "norm", 0.5,
                                lapse)[0]
        answers.append((level, bool(rng.random() < p)))
        log_post = adaptive.updated(grid, log_post, *answers[-1])
    return pd.DataFrame({"level": [a[0] for a in answers],
                         "correct": [float(a[1]) for a in answers]})


def bound_case(x, est) -> str:
    """Which fitting limit a fit (of :func:`fit_counts`, one row) lies on: "step" (a step
    between two adjacent levels inside the sweep), "beyond" (the threshold beyond the
    sweep, at its limit or as a step there), "widest" (the widest curve, the threshold
    inside the sweep), or "" (none)."""
    if est["at_step"][0]:
        return "step"
    if not est["at_bound"][0]:
        return ""
    return "widest" if x.min() <= est["threshold"][0] <= x.max() else "beyond"


def one_fit(seed, sweep, row, lapse, known) -> dict:
    """One simulated participant on one row (design, trials, stopping target): its trials,
    threshold estimate, the threshold's profile interval (``lo``, ``hi``) whether or not
    the report gives it (``given``), its :func:`bound_case`, and for a step the width's
    profile upper end (``width_hi``, NaN otherwise)."""
    rng = np.random.default_rng(seed)
    levels, threshold, width, direction = SWEEPS[sweep]
    design, trials, stop = row
    data = adaptive_participant(rng, sweep, trials, lapse, known, stop) if design != "fixed" \
        else participant(rng, levels, threshold, width, direction, trials, lapse)
    out = {"trials": len(data), "estimate": np.nan, "lo": np.nan, "hi": np.nan,
           "given": False, "case": "", "width_hi": np.nan}
    try:  # the report's fit (fit_psychometric), its threshold's interval (a step's width too)
        values = sweep_values(data, "level", "correct")
    except ValueError:  # answers that never vary, or fewer than 3 levels: no fit
        return out
    counts = values.groupby("level")["correct"].agg(["sum", "size"])
    x, k, n = counts.index.to_numpy(float), counts["sum"].to_numpy(), counts["size"].to_numpy(float)
    options = {"sigmoid": "norm", "guess": PEOPLE_FIT["guess"], "lapse": PEOPLE_FIT["lapse"],
               "width_min": None, "direction": curve_direction(sweep, levels) if known else None}
    est = fit_counts(x, k, n, **options)
    case = bound_case(x, est)
    ends = profile_intervals(x, k, n, est, options, 0.95,
                             ("threshold", "width") if case == "step" else ("threshold",))
    given = intervals_given({"at_bound": est["at_bound"][0], "at_step": est["at_step"][0]})
    return out | {"estimate": est["threshold"][0], "lo": ends["threshold"][0],
                  "hi": ends["threshold"][1], "given": given, "case": case,
                  "width_hi": ends.get("width", (np.nan, np.nan))[1]}


def case_coverage(sweep, fits: pd.DataFrame) -> dict:
    """Per bound case, (covered, fits): how many true thresholds the profile interval
    covered, whether or not the report gives it; "step width" counts a step's true width
    at or below its width interval's upper end."""
    _, threshold, width, _ = SWEEPS[sweep]
    covered = (fits["lo"] <= threshold) & (threshold <= fits["hi"])
    out = {case: (int(covered[fits["case"] == case].sum()), int((fits["case"] == case).sum()))
           for case in CASES}
    steps = fits[fits["case"] == "step"]
    return out | {"step width": (int((width <= steps["width_hi"]).sum()), len(steps))}


def summarise(sweep, fits, rounds):
    """A row's figures from its fits (one dict of :func:`one_fit` a participant): the
    report's intervals (a fit given none is a miss for coverage and for the one-step share)
    and per bound case how often the profile interval covered."""
    levels, threshold, *_ = SWEEPS[sweep]
    fits = pd.DataFrame(fits)
    lo, hi = (fits[end].where(fits["given"]).to_numpy(float) for end in ("lo", "hi"))
    step = float(np.diff(levels).min())
    within = np.nan_to_num((hi - lo) / 2, nan=np.inf) <= step + 1e-9
    shares = [part.mean() for part in np.array_split(within, rounds)]
    covered = (lo <= threshold) & (threshold <= hi)
    est = fits["estimate"].to_numpy(float)
    error = est[np.isfinite(est)] - threshold
    return {"trials": fits["trials"].mean(), "within_step": within.mean(), "rounds": shares,
            "median_halfwidth": np.nanmedian((hi - lo) / 2), "bias": error.mean(),
            "bias_se": error.std(ddof=1) / np.sqrt(error.size),
            "rmse": np.sqrt(np.mean(error ** 2)), "coverage": covered.mean(),
            "no_ci": int((~fits["given"]).sum()), "cases": case_coverage(sweep, fits)}


def print_cases(collected: dict) -> None:
    """Per sweep, row (``collected``: (sweep, row) -> its fits at every lapse rate) and
    bound case, and per case over all of them: the profile interval's coverage with its
    exact (Clopper-Pearson) 95% CI."""
    print("profile interval's coverage per bound case, all lapse rates (exact 95% CI)")
    total: dict = {}
    for (sweep, row), fits in collected.items():
        for case, (hit, n) in case_coverage(sweep, pd.DataFrame(fits)).items():
            before = total.get(case, (0, 0))
            total[case] = (before[0] + hit, before[1] + n)
            print(f"{sweep:<14}{row:>14}{case:>12}{coverage_ci(hit, n)}")
    for case, (hit, n) in total.items():
        print(f"{'all':<14}{'all rows':>14}{case:>12}{coverage_ci(hit, n)}")


def coverage_ci(hit: int, n: int) -> str:
    if not n:
        return f"{'0/0':>9}"
    ci = stats.binomtest(hit, n).proportion_ci(0.95, method="exact")
    return f"{f'{hit}/{n}':>9}{hit / n:>6.2f} [{ci.low:.2f}, {ci.high:.2f}]"


def information(sweep, lapse, unknown):
    """Per level, the Fisher information matrix of one trial in (threshold, width, lapse),
    the first ``unknown`` of them."""
    levels, t, w, d = SWEEPS[sweep]
    s = w / (2 * special.ndtri(0.95))
    z = d * (levels - t) / s
    p = 0.5 + (0.5 - lapse) * special.ndtr(z)
    dens = (0.5 - lapse) * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)
    grad = np.stack([-d * dens / s, -dens * z / w, -special.ndtr(z)])[:unknown]
    return np.einsum("il,jl,l->lij", grad, grad, 1 / (p * (1 - p)))


def fisher_trials(sweep, lapse, unknown):
    """Fewest trials a sweep whose expected 95% CI half-width of the threshold is one level
    step: var(threshold) = [M(w)^-1]_00 / n at the c-optimal spread w over the levels."""
    info = information(sweep, lapse, unknown)
    step = float(np.diff(SWEEPS[sweep][0]).min())

    def variance(logits):
        m = np.einsum("l,lij->ij", special.softmax(logits), info)
        return np.linalg.pinv(m)[0, 0] if np.linalg.cond(m) < 1e12 else 1e12
    best = min((optimize.minimize(variance, start, method="Nelder-Mead",
                                  options={"maxiter": 20000, "xatol": 1e-6, "fatol": 1e-12})
                for start in (np.zeros(len(info)), np.linspace(-2, 2, len(info)),
                              np.linspace(2, -2, len(info)))), key=lambda r: r.fun)
    return int(np.ceil((special.ndtri(0.975) / step) ** 2 * best.fun))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observers", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--adaptive", default="60,120", help="QUEST+ trials a sweep (caps)")
    parser.add_argument("--fixed", default="24", help="fixed design's trials a level")
    parser.add_argument("--stopping", default="", help="QUEST+ trials a sweep (caps) of rows "
                        "that stop at the --stop target")
    parser.add_argument("--stop", type=float, default=1.0,
                        help="the stopping rows' credible half-width, in level steps")
    parser.add_argument("--direction", choices=("known", "free"), default="known")
    parser.add_argument("--lapses", default="0,0.02,0.04")
    parser.add_argument("--sweeps", default=",".join(SWEEPS))
    parser.add_argument("--fisher", action="store_true")
    parser.add_argument("--jobs", type=int, default=1, help="processes (only on a free machine)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    known = args.direction == "known"
    rows = [("adaptive", int(v), None) for v in args.adaptive.split(",") if v] + \
        [("stopping", int(v), args.stop) for v in args.stopping.split(",") if v] + \
        [("fixed", int(v), None) for v in args.fixed.split(",") if v]
    print(f"load {' '.join(f'{v:.1f}' for v in os.getloadavg())}; {args.observers} "
          f"participants a row in {args.rounds} interleaved rounds; direction {args.direction}; "
          f"stopping rows' target {args.stop} steps; the threshold's 95% CI (profile "
          f"likelihood, the report's: none at a bound or a step, 'no CI'); per bound case, "
          f"how many true thresholds the profile interval covered / fits (step: between two "
          f"levels inside the sweep; 'st wd': a step's width at or below its interval's upper "
          f"end; widest: the widest curve; beyond: threshold beyond the sweep)")
    print(f"{'sweep':<14}{'lapse':>6}{'design':>9}{'trials':>7}{'<=1 step':>9}"
          f"{'rounds median [range]':>23}{'med hw':>8}{'bias':>8}{'(se)':>7}{'rmse':>7}"
          f"{'cover':>7}{'no CI':>6}{'step':>7}{'widest':>7}{'beyond':>7}{'st wd':>7}")
    collected: dict = {}
    seeds = np.random.SeedSequence(args.seed)
    with multiprocessing.Pool(args.jobs) as pool:
        for sweep in args.sweeps.split(","):
            for lapse in (float(v) for v in args.lapses.split(",")):
                if args.fisher:
                    print(f"{sweep:<14}{lapse:>6.2f}  Fisher bound, trials a sweep for a "
                          f"half-width of one step: threshold alone "
                          f"{fisher_trials(sweep, lapse, 1)}, threshold + width "
                          f"{fisher_trials(sweep, lapse, 2)}, threshold + width + lapse "
                          f"{fisher_trials(sweep, lapse, 3)}", flush=True)
                jobs = [(int(s.generate_state(1)[0]), sweep, row, lapse, known)
                        for s in seeds.spawn(args.observers) for row in rows]
                # interleaved: participant by participant, every row in turn
                done = pool.starmap(one_fit, jobs, chunksize=1)
                for r, row in enumerate(rows):
                    s = summarise(sweep, done[r::len(rows)], args.rounds)
                    collected.setdefault((sweep, f"{row[0]} {row[1]}"), []).extend(
                        done[r::len(rows)])
                    trials = s["trials"] if row[0] != "fixed" else \
                        row[1] * len(SWEEPS[sweep][0])
                    spread = f"{np.median(s['rounds']):.0%} [{min(s['rounds']):.0%}, " \
                        f"{max(s['rounds']):.0%}]"
                    print(f"{sweep:<14}{lapse:>6.2f}{row[0]:>9}{trials:>7.0f}"
                          f"{s['within_step']:>9.0%}{spread:>23}{s['median_halfwidth']:>8.3f}"
                          f"{s['bias']:>8.3f}{s['bias_se']:>7.3f}{s['rmse']:>7.3f}"
                          f"{s['coverage']:>7.2f}{s['no_ci']:>6}"
                          + "".join(f"{f'{hit}/{n}':>7}" for hit, n in s["cases"].values()),
                          flush=True)
    print_cases(collected)


if __name__ == "__main__":
    main()
