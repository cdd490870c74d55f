"""Logistic model of correctness on direction x category, clustered by participant."""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import loading

MODEL_COLUMNS = ("term", "coef", "se", "z", "p", "ci_low", "ci_high", "odds_ratio")


def _design(trials: pd.DataFrame, codes: np.ndarray, sets: list, categories: list[str]):
    """Per (subject, category set, direction) correct/incorrect counts and indicators."""
    cells = pd.DataFrame({"subject": trials["subject_id"].to_numpy(), "cats": codes,
                          "backward": (trials["direction"] == C.BACKWARD).to_numpy(int),
                          "correct": trials["correct"].fillna(0.0).to_numpy(float)})
    agg = cells.groupby(["subject", "cats", "backward"]).agg(
        successes=("correct", "sum"), n=("correct", "size")).reset_index()
    for cat in categories:
        ind = np.array([float(cat in s) for s in sets])[agg["cats"].to_numpy()]
        agg[cat] = ind
        agg[f"{cat}:backward"] = ind * agg["backward"]
    return agg


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
        Columns ``term, coef, se, z, p, ci_low, ci_high, odds_ratio`` (log-odds scale,
        95% Wald intervals, cluster-robust), and ``{"n_obs", "n_subjects", "method"}``.

    Notes
    -----
    For trial :math:`t` of subject :math:`s` with category indicators :math:`I_c` (a
    multi-label clip sets several) and :math:`b = [\\text{backward}]`:

    .. math:: \\operatorname{logit} P(\\text{correct}) = \\sum_c I_c (\\alpha_c + \\beta_c b)

    so :math:`\\alpha_c` is the log-odds of a correct answer on a forward clip of category
    c and :math:`\\beta_c` the change when it is reversed. It is a GEE with independence
    working correlation, i.e. a logistic GLM with sandwich errors clustered by
    participant. Because every covariate is discrete, it is fitted exactly on binomial
    counts per participant x category set x direction, so all trials are used however
    large the study (the scores of a participant's trials add up within the cluster).

    References
    ----------
    .. [1] Liang, K.-Y. & Zeger, S. L. (1986). Longitudinal data analysis using generalized
       linear models. Biometrika 73, 13-22.
    """
    import statsmodels.api as sm

    trials = loading.aot_trials(data)
    codes, sets = loading.category_sets(trials)
    tagged = np.array([len(s) > 0 for s in sets], dtype=bool)[codes] if len(trials) else []
    trials, codes = trials[tagged], codes[tagged]
    categories = [c for c in C.CATEGORIES if any(c in s for s in sets)]
    info = {"n_obs": len(trials), "n_subjects": int(trials["subject_id"].nunique()),
            "method": "GEE (independence), participant-clustered robust SE, "
                      "fitted on aggregated binomial counts"}
    empty = pd.DataFrame(columns=list(MODEL_COLUMNS))
    if info["n_subjects"] < 2 or not categories:
        return empty, info
    agg = _design(trials, codes, sets, categories)
    terms = categories + [f"{c}:backward" for c in categories]
    exog = agg[terms]
    exog = exog.loc[:, exog.abs().sum() > 0]
    endog = np.column_stack([agg["successes"], agg["n"] - agg["successes"]])
    groups = pd.factorize(agg["subject"])[0]
    fit = sm.GLM(endog, exog, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False})
    ci = fit.conf_int()
    table = pd.DataFrame({"term": exog.columns, "coef": fit.params.to_numpy(),
                          "se": fit.bse.to_numpy(), "z": fit.tvalues.to_numpy(),
                          "p": fit.pvalues.to_numpy(), "ci_low": ci[0].to_numpy(),
                          "ci_high": ci[1].to_numpy()})
    table["odds_ratio"] = np.exp(table["coef"])
    return table, info
