"""Logistic models of correctness on direction x category: a participant-clustered GEE and a
GLMM with crossed random intercepts for participant and clip."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import loading

MODEL_COLUMNS = ("term", "coef", "se", "z", "p", "ci_low", "ci_high", "odds_ratio",
                 "separated")


class SeparationWarning(UserWarning):
    """A design cell was answered all correctly or all wrongly: its terms have no finite
    maximum-likelihood estimate."""


class ConvergenceError(RuntimeError):
    """The GLMM's optimiser or its PIRLS did not converge: what it stopped at is not an
    estimate, so nothing is reported."""


class SeparationError(ValueError):
    """Every design cell was answered all one way: no term of a model has a finite
    estimate, so there is nothing to fit."""


def _all_separated(correct: np.ndarray) -> SeparationError:
    n, right = len(correct), int(np.sum(correct))
    what = (f"no errors: all {n:,} trials were answered correctly" if right == n else
            f"no correct answers: all {n:,} trials were answered wrongly" if right == 0 else
            "separation: every design cell was answered all one way")
    return SeparationError(f"{what}, so no log-odds has a finite estimate (complete "
                           "separation); nothing to fit")


def _design(trials: pd.DataFrame, codes: np.ndarray, sets: list, categories: list[str]):
    """Per (subject, category set, direction) correct counts, trial counts and indicators."""
    backward = (trials["direction"] == C.BACKWARD).to_numpy(int)
    cell = codes * 2 + backward
    subject = pd.factorize(trials["subject_id"])[0]
    n_cells = 2 * len(sets)
    key = subject.astype(np.int64) * n_cells + cell
    uniq, row = np.unique(key, return_inverse=True)
    correct = trials["correct"].fillna(0.0).to_numpy(float)
    x_cells, terms = _cell_design(sets, categories)
    return {"subject": uniq // n_cells, "cell": uniq % n_cells, "x_cells": x_cells,
            "terms": terms, "n": np.bincount(row.ravel()).astype(float),
            "successes": np.bincount(row.ravel(), weights=correct)}


def _estimable(x_cells: np.ndarray, cell_n: np.ndarray, cell_y: np.ndarray):
    """(terms with a finite MLE, cells to fit): a linear programme finds the directions in
    which the likelihood rises forever (Konis 2007), i.e. quasi-complete separation.

    A direction d separates when x'd >= 0 on every cell with a correct answer and x'd <= 0
    on every cell with an error, with some x'd != 0; its terms diverge. Those terms, every
    cell that involves them, and terms left without a cell are set aside, until none is left.
    """
    from scipy.optimize import linprog

    terms = np.asarray(x_cells[cell_n > 0].any(axis=0))
    cells = cell_n > 0
    while terms.any() and cells.any():
        x = x_cells[np.ix_(cells, terms)]
        up = np.where(cell_y[cells] > 0, -1.0, 0.0)  # -x'd <= 0 where some answer was right
        down = np.where(cell_y[cells] < cell_n[cells], 1.0, 0.0)  # x'd <= 0 where one wrong
        a_ub = np.vstack([up[:, None] * x, down[:, None] * x])
        # Maximise the separated margin sum_i s_i x_i'd over the box |d| <= 1.
        sign = np.where(cell_y[cells] == cell_n[cells], 1.0, np.where(cell_y[cells] == 0, -1.0,
                                                                         0.0))
        res = linprog(-(sign @ x), A_ub=a_ub, b_ub=np.zeros(len(a_ub)),
                      bounds=[(-1, 1)] * x.shape[1], method="highs")
        if res.status != 0 or -res.fun < 1e-9:
            break
        diverging = np.flatnonzero(terms)[np.abs(res.x) > 1e-9]
        terms[diverging] = False
        cells &= ~x_cells[:, diverging].any(axis=1)
        terms &= x_cells[cells].any(axis=0)
    return terms, cells


def _cell_design(sets: list, categories: list[str]):
    """Design rows of cell 2k (set k, forward) and 2k + 1 (set k, backward), and term names."""
    terms = categories + [f"{c}:backward" for c in categories]
    x_cells = np.zeros((2 * len(sets), len(terms)))
    for k, members in enumerate(sets):
        for i, cat in enumerate(categories):
            if cat in members:
                x_cells[2 * k:2 * k + 2, i] = 1.0
                x_cells[2 * k + 1, len(categories) + i] = 1.0
    return x_cells, terms


def accuracy_model(data: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Participant-clustered logistic model of correctness on direction x category.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical arrow-of-time trials of one kind of subject (e.g. people), excluded rows
        removed. Unanswered trials count as incorrect.

    Returns
    -------
    (pandas.DataFrame, dict)
        Columns ``term, coef, se, z, p, ci_low, ci_high, odds_ratio, separated`` (log-odds
        scale; cluster-robust CR1 errors; ``z`` is the Wald statistic, referred to a t
        distribution with (participants - 1) degrees of freedom for ``p`` and the 95%
        interval), and ``{"n_obs", "n_subjects", "method", "warnings"}``. Terms of a
        separated design cell (every trial right, or every trial wrong) have no estimate:
        their values are empty, ``separated`` is True and a :class:`SeparationWarning`
        is issued.

    Notes
    -----
    For trial :math:`t` of subject :math:`s` with category indicators :math:`I_c` (a
    multi-label clip sets several) and :math:`b = [\\text{backward}]`:

    .. math:: \\operatorname{logit} P(\\text{correct}) = \\sum_c I_c (\\alpha_c + \\beta_c b)

    so :math:`\\alpha_c` is the log-odds of a correct answer on a forward clip of category
    c and :math:`\\beta_c` the change when it is reversed. It is a GEE with independence
    working correlation, i.e. a logistic GLM with sandwich errors clustered by
    participant. Every covariate is discrete, so the estimate is fitted on the binomial
    totals of the (category set x direction) cells and the sandwich's per-participant
    scores from per-participant cell counts: all trials are used however large the study.
    The small-sample correction is statsmodels' ``use_correction=True`` (CR1,
    :math:`G/(G-1) \\cdot (N-1)/(N-K)` with G participants, N trials, K terms) with t(G-1)
    reference: with a dozen participants the uncorrected sandwich is too small.

    References
    ----------
    .. [1] Liang, K.-Y. & Zeger, S. L. (1986). Longitudinal data analysis using generalized
       linear models. Biometrika 73, 13-22.
    .. [2] Cameron, A. C. & Miller, D. L. (2015). A practitioner's guide to cluster-robust
       inference. J. Human Resources 50(2), 317-372.
    """
    trials = loading.aot_trials(data)
    codes, sets = loading.category_sets(trials)
    tagged = np.array([len(s) > 0 for s in sets], dtype=bool)[codes] if len(trials) else []
    trials, codes = trials[tagged], codes[tagged]
    categories = [c for c in C.CATEGORIES if any(c in s for s in sets)]
    n_subjects = int(trials["subject_id"].nunique())
    notes: list[str] = []
    info = {"n_obs": len(trials), "n_subjects": n_subjects,
            "method": "GEE (independence), participant-clustered robust SE with small-sample "
                      "correction (CR1, t with participants - 1 df), fitted on aggregated "
                      "binomial counts", "warnings": notes}
    empty = pd.DataFrame(columns=list(MODEL_COLUMNS))
    if n_subjects < 2 or not categories:
        return empty, info
    table, no_se = _gee(_design(trials, codes, sets, categories))
    notes.extend(no_se)
    separated = table.loc[table["separated"], "term"].tolist()
    if separated:
        message = (f"separation: every trial of a design cell was answered the same way, so "
                   f"{', '.join(separated)} have no finite estimate (left empty)")
        notes.append(message)
        warnings.warn(message, SeparationWarning, stacklevel=2)
    return table, info


def _gee(d: dict) -> tuple[pd.DataFrame, list[str]]:
    """The GEE table, and why a term with an estimate has no standard error (if one hasn't)."""
    from scipy import stats

    x_cells = d["x_cells"]
    n_cells = len(x_cells)
    cell_n = np.bincount(d["cell"], weights=d["n"], minlength=n_cells)
    cell_y = np.bincount(d["cell"], weights=d["successes"], minlength=n_cells)
    used = x_cells[cell_n > 0].any(axis=0)
    x, terms = x_cells[:, used], [t for t, u in zip(d["terms"], used) if u]
    keep, ok_cells = _estimable(x, cell_n, cell_y)
    bad_terms = ~keep
    beta = np.full(len(terms), np.nan)
    cov = np.full((len(terms), len(terms)), np.nan)
    if keep.any() and ok_cells.any():
        params = _logistic_irls(x[np.ix_(ok_cells, keep)], cell_y[ok_cells], cell_n[ok_cells])
        beta[keep] = params
        cov[np.ix_(keep, keep)] = _cluster_cov(d, x[:, keep], ok_cells, params)
    n_groups = len(np.unique(d["subject"]))
    se, why = _cluster_se(d, x, cov, keep, ok_cells, terms)
    z = beta / se
    crit = stats.t.ppf(0.975, n_groups - 1)
    table = pd.DataFrame({"term": terms, "coef": beta, "se": se, "z": z,
                          "p": 2 * stats.t.sf(np.abs(z), n_groups - 1),
                          "ci_low": beta - crit * se, "ci_high": beta + crit * se})
    table["odds_ratio"] = np.exp(table["coef"])
    table["separated"] = bad_terms
    return table, why


def _cluster_se(d: dict, x: np.ndarray, cov: np.ndarray, estimated: np.ndarray,
                ok_cells: np.ndarray, terms: list[str]) -> tuple[np.ndarray, list[str]]:
    """Standard errors from the sandwich, valid or absent (NaN) with the reason.

    A term whose fitted cells hold a single participant has a score of exactly 0 in every
    participant at the estimate, so its clustered variance is 0 up to rounding (seen: a
    negative one, and an SE of 0.009 with z = 189); no SE is given for it.
    """
    rows = ok_cells[d["cell"]]
    involved = x[d["cell"][rows]] != 0
    n_people = np.array([len(np.unique(d["subject"][rows][involved[:, j]]))
                         for j in range(x.shape[1])])
    var = np.diag(cov)
    one = estimated & (n_people < 2)
    not_positive = estimated & ~one & ~(var > 0)
    se = np.where(estimated & ~one & ~not_positive, np.sqrt(np.where(var > 0, var, 1.0)),
                  np.nan)
    why = []
    for mask, reason in ((one, "one participant's trials alone inform it (a participant-"
                               "clustered variance needs two)"),
                         (not_positive, "the participant-clustered variance is not positive")):
        if mask.any():
            names = ", ".join(t for t, m in zip(terms, mask) if m)
            why.append(f"no standard error for {names}: {reason}")
    return se, why


def _logistic_irls(x: np.ndarray, successes: np.ndarray, n: np.ndarray,
                   tol: float = 1e-12, max_iter: int = 100) -> np.ndarray:
    """Binomial-logit maximum likelihood on a few dozen cells (Newton = IRLS)."""
    beta = np.zeros(x.shape[1])
    for _ in range(max_iter):
        mu = 1 / (1 + np.exp(-(x @ beta)))
        step = np.linalg.solve(x.T @ ((n * mu * (1 - mu))[:, None] * x),
                               x.T @ (successes - n * mu))
        beta += step
        if np.abs(step).max() < tol * (1 + np.abs(beta).max()):
            break
    return beta


def _cluster_cov(d: dict, x: np.ndarray, ok_cells: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """CR1 sandwich: per-participant score sums from per-participant cell counts."""
    rows = ok_cells[d["cell"]]
    cell, subject = d["cell"][rows], d["subject"][rows]
    n, y = d["n"][rows], d["successes"][rows]
    xr = x[cell]
    mu = 1 / (1 + np.exp(-(xr @ beta)))
    bread = np.linalg.inv(xr.T @ ((n * mu * (1 - mu))[:, None] * xr))
    groups, g = np.unique(subject, return_inverse=True)
    scores = np.zeros((len(groups), x.shape[1]))
    np.add.at(scores, g, xr * (y - n * mu)[:, None])
    n_groups, n_obs, k = len(groups), n.sum(), x.shape[1]
    factor = n_groups / (n_groups - 1) * (n_obs - 1) / (n_obs - k)
    return factor * bread @ (scores.T @ scores) @ bread


# Above this many trials the crossed GLMM is fitted on whole participants, evenly spaced by
# id: each PIRLS step re-weights every (participant, clip, cell) row, and a fit takes
# ~60 steps, about 1 s per 60,000 trials here.
GLMM_MAX_TRIALS = 60_000


GLMM_METHOD = ("logistic GLMM, crossed random intercepts for participant and clip; random-"
               "intercept SDs minimise the Laplace-approximate deviance with fixed effects "
               "and random effects estimated jointly by PIRLS (as lme4 glmer nAGQ=0, not the "
               "Laplace fit nAGQ=1); SEs from the PIRLS fixed-effect block (analysis.crossed)")


def crossed_accuracy_model(data: pd.DataFrame, max_trials: int = GLMM_MAX_TRIALS,
                           max_evaluations: int = 15000) -> tuple[pd.DataFrame, dict]:
    """Logistic mixed model of correctness with crossed random intercepts.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical arrow-of-time trials of people, excluded rows removed. Unanswered
        trials count as incorrect.
    max_trials : int
        Fit every trial up to this many; above it, all trials of as many participants as
        fit, evenly spaced by id (``info["fitted_on"]`` says which).
    max_evaluations : int
        Of the deviance, per optimiser run (lme4's ``maxfun``).

    Returns
    -------
    (pandas.DataFrame, dict)
        ``term, coef, se, z, p, ci_low, ci_high, odds_ratio`` for the same fixed effects as
        :func:`accuracy_model`, then rows ``sd(participant)`` and ``sd(clip)`` (random-
        intercept SDs, log-odds; ``coef`` only), and on every row ``fitted_on`` (the trials
        fitted: all, or which participants when capped); and ``{"n_obs", "n_subjects",
        "n_clips", "fitted_on", "all_data", "method", "converged", "warnings"}``. A fit
        that did not converge raises :class:`ConvergenceError` with the reason.

    Notes
    -----
    :math:`\\operatorname{logit} P(\\text{correct}_{ij}) = \\sum_c I_c (\\alpha_c + \\beta_c b)
    + u_i + v_j`, :math:`u_i \\sim N(0, \\sigma_u^2)` per participant and
    :math:`v_j \\sim N(0, \\sigma_v^2)` per clip. Unlike the GEE's population-averaged
    coefficients, these are conditional on a typical participant and clip, so they are
    larger in magnitude. Fitted as lme4's ``glmer(..., nAGQ = 0)``
    (:func:`analysis.crossed_glmm.fit_glmm`), on counts per participant x clip x design cell:
    the two random-intercept SDs minimise the Laplace approximation to the deviance, with
    the fixed effects estimated jointly with the random effects' conditional modes by
    penalised iteratively reweighted least squares (PIRLS) at each step, and standard errors
    from PIRLS's fixed-effect block at the optimum. This is not lme4's Laplace fit
    (``nAGQ = 1``, which also optimises the fixed effects over the Laplace deviance); on
    lme4's ``cbpp`` example the two agree closely, and on simulated studies the fit equals
    lme4's own ``glmer(nAGQ = 0)``, run in the test suite (tests/analysis/test_crossed.py;
    bench/glmm_vs_lme4.py for the whole grid). A fit that did not converge raises
    :class:`ConvergenceError`, so the report shows the reason instead of numbers. A study
    without a single error (or a correct answer) in any design cell raises
    :class:`SeparationError`.

    Why not statsmodels' ``BinomialBayesMixedGLM``: its variational fit took 2 s for
    6,000 trials and 60 s for 100,000, and its mean-field posterior SDs of fixed effects
    came out at about half the standard errors of the fit here (the factorisation drops the
    correlation between intercepts and random effects).

    References
    ----------
    .. [1] Bates, Maechler, Bolker & Walker (2015). Fitting linear mixed-effects models
       using lme4. J. Stat. Softw. 67(1).
    .. [2] Baayen, Davidson & Bates (2008). J. Mem. Lang. 59, 390-412.
    """
    from analysis import crossed, rt

    trials = loading.aot_trials(data)
    codes, sets = loading.category_sets(trials)
    tagged = np.array([len(s) > 0 for s in sets], dtype=bool)[codes] if len(trials) else []
    trials, codes = trials[tagged], codes[tagged]
    categories = [c for c in C.CATEGORIES if any(c in s for s in sets)]
    n_subj = max(1, trials["subject_id"].nunique())
    per_subject = len(trials) / n_subj
    cap = None if len(trials) <= max_trials else max(2, int(max_trials // per_subject))
    sample, fitted_on = rt.feasible_sample(
        trials, cap, reason=f"the GLMM fit is capped at {max_trials:,} trials to bound "
                            "its time (about a second here)")
    codes = codes[trials.index.get_indexer(sample.index)] if len(sample) < len(trials) \
        else codes
    info = {"n_obs": len(sample), "n_subjects": int(sample["subject_id"].nunique()),
            "n_clips": int(sample["source_clip_id"].nunique()), "fitted_on": fitted_on,
            "all_data": len(sample) == len(trials),
            "method": GLMM_METHOD,
            "warnings": [], "converged": False}
    empty = pd.DataFrame(columns=list(MODEL_COLUMNS))
    if info["n_subjects"] < 2 or info["n_clips"] < 2 or not categories:
        return empty, info
    fit, terms, all_terms, separated = _fit_glmm(sample, codes, sets, categories,
                                                 max_evaluations)
    if not fit.converged:
        raise ConvergenceError(f"the GLMM did not converge ({'; '.join(fit.warnings)}), so "
                               f"no estimate is reported; it was fitted on {fitted_on}")
    table = crossed.fixed_table(fit, terms).set_index("term").reindex(all_terms)
    info["converged"], info["warnings"] = fit.converged, list(fit.warnings)
    table = table.reset_index().rename(columns={"index": "term"})
    table["odds_ratio"] = np.exp(table["coef"])
    table["separated"] = table["term"].isin(separated)
    if separated:
        info["warnings"].append(f"separation: {', '.join(separated)} left empty (a design "
                                "cell was answered all one way)")
    sds = pd.DataFrame({"term": ["sd(participant)", "sd(clip)"],
                        "coef": np.sqrt([fit.var_a, fit.var_b])})
    # The GEE beside it uses every trial: a subsample is said on every row of the table.
    return pd.concat([table, sds], ignore_index=True).assign(fitted_on=fitted_on), info


def _fit_glmm(trials: pd.DataFrame, codes: np.ndarray, sets: list, categories: list[str],
              max_evaluations: int):
    """Design cells = (category set, direction); rows = participant x clip x cell. Cells
    answered all one way are left out, as in the GEE (their terms are reported empty)."""
    from analysis import crossed, crossed_glmm

    cell = codes * 2 + (trials["direction"] == C.BACKWARD).to_numpy(int)
    correct = trials["correct"].fillna(0.0).to_numpy(float)
    x_cells, terms = _cell_design(sets, categories)
    cell_n = np.bincount(cell, minlength=len(x_cells)).astype(float)
    cell_y = np.bincount(cell, weights=correct, minlength=len(x_cells))
    used = x_cells[cell_n > 0].any(axis=0)
    cols, ok_cells = _estimable(x_cells, cell_n, cell_y)
    bad = used & ~cols
    keep_rows = ok_cells[cell]
    if not keep_rows.any():
        raise _all_separated(correct)
    subject = pd.factorize(trials["subject_id"].to_numpy()[keep_rows])[0]
    clip = pd.factorize(trials["source_clip_id"].to_numpy()[keep_rows],
                        use_na_sentinel=False)[0]
    design, rows, swapped = crossed.design(subject, clip, cell[keep_rows], x_cells[:, cols],
                                           {"y": correct[keep_rows]})
    names = ("clip", "participant") if swapped else ("participant", "clip")
    fit = crossed_glmm.fit_glmm(design, rows["y"], rows["n"], names=names,
                                max_evaluations=max_evaluations)
    if swapped:
        fit.var_a, fit.var_b = fit.var_b, fit.var_a
    all_terms = [t for t, u in zip(terms, used) if u]
    return fit, [t for t, c in zip(terms, cols) if c], all_terms, \
        [t for t, b in zip(terms, bad) if b]
