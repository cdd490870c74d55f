"""The crossed GLMM (analysis.crossed.fit_glmm) against lme4's glmer on a grid of simulated studies.

Every study is the issue's shape: participants x clips, each clip seen forward and reversed by
every participant, logit P(correct) = cell effect + u_participant + v_clip. The grid crosses the
participant SD, the clip SD, the accuracy and the design (intercept + backward, or three
categories x direction, the report's cell-means terms), with seeds per cell. lme4 (R's
``glmer``, same nAGQ, same aggregated rows and design columns) runs in one Rscript per batch.

A fit passes when it equals lme4 (fixed effects within 1e-3, SEs within 1 %, variances within
1 % or 1e-4 absolute where lme4's is near 0), or when its deviance is lower than lme4's (it
says so: "lower"). A fit that says it did not converge is a failure wherever it lands.

    .venv/bin/python bench/glmm_vs_lme4.py                    # the full grid, 10 seeds a cell
    .venv/bin/python bench/glmm_vs_lme4.py --seeds 2 --sd-participant 0.05 0.1
"""
from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis import crossed, crossed_glmm  # noqa: E402

SD_PARTICIPANT = (0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.5)
SD_CLIP = (0.0, 0.5, 1.0, 1.5)
ACCURACY = (0.55, 0.75, 0.9, 0.97)
BETA_TOL, SE_RTOL, VAR_RTOL, VAR_ATOL = 1e-3, 0.01, 0.01, 1e-4

R_SCRIPT = r"""
suppressMessages(library(lme4))
args <- commandArgs(TRUE)
d <- read.csv(args[1])
nagq <- as.integer(args[2])
xs <- grep("^x[0-9]+$", names(d), value = TRUE)
form <- as.formula(paste("cbind(y, n - y) ~ 0 +", paste(xs, collapse = " + "),
                         "+ (1 | participant) + (1 | clip)"))
rows <- list()
for (k in unique(d$study)) {
  s <- d[d$study == k, ]
  s$participant <- factor(s$participant); s$clip <- factor(s$clip)
  fit <- glmer(form, data = s, family = binomial, nAGQ = nagq)
  vc <- as.data.frame(VarCorr(fit))
  msgs <- paste(c(fit@optinfo$conv$lme4$messages, fit@optinfo$message), collapse = "; ")
  rows[[length(rows) + 1]] <- data.frame(
    study = k, term = c(names(fixef(fit)), "var_participant", "var_clip", "deviance"),
    value = c(fixef(fit), vc$vcov[vc$grp == "participant"], vc$vcov[vc$grp == "clip"],
              -2 * as.numeric(logLik(fit))),
    se = c(sqrt(diag(as.matrix(vcov(fit)))), NA, NA, NA),
    singular = isSingular(fit), messages = msgs)
}
write.csv(do.call(rbind, rows), args[3], row.names = FALSE)
"""


def simulate(sd_participant: float, sd_clip: float, accuracy: float, categories: bool,
             rng: np.random.Generator, n_participants: int = 60, n_clips: int = 80):
    """Rows (participant, clip, cell, y, n) of one study and its cell design matrix.

    Every participant answers every clip once forward and once reversed; reversed clips are
    0.6 logits harder, and with categories (three, drawn per clip) the categories sit at
    -0.4, 0 and +0.4 around the level that gives ``accuracy`` at u = v = 0.
    """
    base = np.log(accuracy / (1 - accuracy)) + 0.3
    u = rng.normal(0.0, sd_participant, n_participants)
    v = rng.normal(0.0, sd_clip, n_clips)
    n_cat = 3 if categories else 1
    cat = rng.integers(0, n_cat, n_clips)
    shift = np.array([-0.4, 0.0, 0.4]) if categories else np.zeros(1)
    p, c, back = (g.ravel() for g in np.meshgrid(np.arange(n_participants), np.arange(n_clips),
                                                 [0, 1], indexing="ij"))
    eta = base + shift[cat[c]] - 0.6 * back + u[p] + v[c]
    y = (rng.random(len(eta)) < 1 / (1 + np.exp(-eta))).astype(float)
    if categories:  # the report's terms: category, category:backward
        x_cells = np.zeros((6, 6))
        for k in range(3):
            x_cells[2 * k:2 * k + 2, k] = 1.0
            x_cells[2 * k + 1, 3 + k] = 1.0
    else:
        x_cells = np.array([[1.0, 0.0], [1.0, 1.0]])
    return pd.DataFrame({"participant": p, "clip": c, "cell": cat[c] * 2 + back, "y": y,
                         "n": 1.0}), x_cells


def fit_ours(rows: pd.DataFrame, x_cells: np.ndarray, nagq: int) -> dict:
    design, agg, swapped = crossed.design(rows["participant"], rows["clip"], rows["cell"],
                                          x_cells, {"y": rows["y"].to_numpy(float)})
    fit = crossed_glmm.fit_glmm(design, agg["y"], agg["n"], nagq=nagq,
                           names=("clip", "participant") if swapped else ("participant",
                                                                          "clip"))
    var_p, var_c = (fit.var_b, fit.var_a) if swapped else (fit.var_a, fit.var_b)
    return {"beta": fit.beta, "se": np.sqrt(np.diag(fit.cov)), "var_participant": var_p,
            "var_clip": var_c, "deviance": fit.deviance, "converged": fit.converged,
            "warnings": fit.warnings}


def fit_lme4(studies: list[tuple[pd.DataFrame, np.ndarray]], nagq: int) -> list[dict]:
    """glmer on each study, all in one Rscript run (R's start-up is ~1 s)."""
    frames = []
    for k, (rows, x_cells) in enumerate(studies):
        x = pd.DataFrame(x_cells[rows["cell"]], columns=[f"x{i}" for i in
                                                          range(x_cells.shape[1])])
        frames.append(pd.concat([rows.reset_index(drop=True), x], axis=1).assign(study=k))
    with tempfile.TemporaryDirectory() as tmp:
        data, script, out = (Path(tmp) / n for n in ("data.csv", "fit.R", "out.csv"))
        pd.concat(frames, ignore_index=True).fillna(0.0).to_csv(data, index=False)
        script.write_text(R_SCRIPT)
        subprocess.run(["Rscript", str(script), str(data), str(nagq), str(out)], check=True,
                       capture_output=True, text=True)
        table = pd.read_csv(out)
    results = []
    for k in range(len(studies)):
        s = table[table["study"] == k].set_index("term")
        terms = [t for t in s.index if t.startswith("x")]
        results.append({"beta": s.loc[terms, "value"].to_numpy(float),
                        "se": s.loc[terms, "se"].to_numpy(float),
                        "var_participant": float(s.loc["var_participant", "value"]),
                        "var_clip": float(s.loc["var_clip", "value"]),
                        "deviance": float(s.loc["deviance", "value"]),
                        "singular": bool(s["singular"].iloc[0]),
                        "messages": str(s["messages"].iloc[0])})
    return results


def compare(ours: dict, ref: dict) -> dict:
    """Largest differences, and the verdict: "equal", "lower" (our deviance below lme4's)
    or "FAIL"."""
    d_beta = float(np.max(np.abs(ours["beta"] - ref["beta"])))
    d_se = float(np.max(np.abs(ours["se"] / ref["se"] - 1)))
    d_var = max(abs(ours[k] - ref[k]) / max(ref[k], VAR_ATOL / VAR_RTOL)
                for k in ("var_participant", "var_clip"))
    d_dev = ours["deviance"] - ref["deviance"]
    equal = d_beta <= BETA_TOL and d_se <= SE_RTOL and d_var <= VAR_RTOL
    verdict = ("FAIL" if not ours["converged"] else "equal" if equal else
               "lower" if d_dev < 0 else "FAIL")
    singular_ours = any("singular" in w for w in ours["warnings"])
    return {"d_beta": d_beta, "d_se": d_se, "d_var": d_var, "d_dev": d_dev,
            "verdict": verdict, "singular_ours": singular_ours,
            "singular_lme4": ref["singular"]}


def run_cell(sd_p, sd_c, acc, categories, seeds, nagq) -> pd.DataFrame:
    studies = [simulate(sd_p, sd_c, acc, categories, np.random.default_rng(seed))
               for seed in seeds]
    refs = fit_lme4(studies, nagq)
    rows = []
    for seed, (rows_, x_cells), ref in zip(seeds, studies, refs):
        cell = {"sd_participant": sd_p, "sd_clip": sd_c, "accuracy": acc,
                "categories": categories, "seed": seed}
        try:
            rows.append(cell | compare(fit_ours(rows_, x_cells, nagq), ref))
        except Exception as error:  # noqa: BLE001 - a fit that raises is a failure of the grid
            rows.append(cell | {"d_beta": np.nan, "d_se": np.nan, "d_var": np.nan,
                                "d_dev": np.nan, "verdict": "FAIL", "singular_ours": False,
                                "singular_lme4": ref["singular"], "error": repr(error)})
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--nagq", type=int, default=0, choices=(0, 1))
    parser.add_argument("--sd-participant", type=float, nargs="+", default=SD_PARTICIPANT)
    parser.add_argument("--sd-clip", type=float, nargs="+", default=SD_CLIP)
    parser.add_argument("--accuracy", type=float, nargs="+", default=ACCURACY)
    parser.add_argument("--categories", choices=("both", "yes", "no"), default="both")
    args = parser.parse_args(argv)
    cats = {"both": (False, True), "yes": (True,), "no": (False,)}[args.categories]
    start = time.perf_counter()
    print(f"nAGQ={args.nagq}; {args.seeds} seeds a cell; load1 {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    print(f"{'sd_p':>5}{'sd_c':>5}{'acc':>6}{'cats':>5}{'max dbeta':>11}{'max dSE':>9}"
          f"{'max dvar':>9}{'min ddev':>10}  equal/lower/FAIL  singular ours/lme4")
    results = []
    for sd_p, sd_c, acc, cat in itertools.product(args.sd_participant, args.sd_clip,
                                                  args.accuracy, cats):
        cell = run_cell(sd_p, sd_c, acc, cat, list(range(args.seeds)), args.nagq)
        results.append(cell)
        counts = cell["verdict"].value_counts()
        print(f"{sd_p:>5}{sd_c:>5}{acc:>6}{'y' if cat else 'n':>5}{cell['d_beta'].max():>11.1e}"
              f"{cell['d_se'].max():>9.1e}{cell['d_var'].max():>9.1e}"
              f"{cell['d_dev'].min():>10.1e}  {counts.get('equal', 0)}/"
              f"{counts.get('lower', 0)}/{counts.get('FAIL', 0)}"
              f"{'':>12}{int(cell['singular_ours'].sum())}/{int(cell['singular_lme4'].sum())}",
              flush=True)
    every = pd.concat(results, ignore_index=True)
    failed = every[every["verdict"] == "FAIL"]
    print(f"{len(every)} fits in {time.perf_counter() - start:.0f} s; "
          f"{(every['verdict'] == 'equal').sum()} equal, {(every['verdict'] == 'lower').sum()} "
          f"lower deviance than lme4, {len(failed)} failures; load1 {os.getloadavg()[0]:.1f}")
    if len(failed):
        print(failed.to_string(index=False))


if __name__ == "__main__":
    main()
