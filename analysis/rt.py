"""Reaction times: medians by condition, forward vs backward answer speed, log-RT LMM."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from analysis import crossed, loading

LMM_FORMULA = "log_rt ~ C(direction) * C(response)"
# How a trial's clip onset was timed (Element Timing, the next animation frame, ...): the
# methods differ by up to a refresh, so RTs of different methods are never pooled silently.
ONSET_METHOD = "onset_method"
UNKNOWN_ONSET = "unknown"


def _answered_rt(data: pd.DataFrame, extra=()) -> pd.DataFrame:
    # Only the columns RT analyses read (and ``extra``): a filtered copy of every column
    # costs more than the analysis on a million trials.
    needed = ("subject_id", "source_clip_id", "categories", "category", "direction",
              "response", "correct_response", "trial_type", "rt_ms", ONSET_METHOD, *extra)
    trials = loading.aot_trials(data[[c for c in dict.fromkeys(needed) if c in data.columns]])
    keep = trials["response"].isin(("F", "B")) & (trials["rt_ms"] > 0)
    trials = trials[keep]
    if ONSET_METHOD not in trials.columns:
        return trials.assign(**{ONSET_METHOD: UNKNOWN_ONSET})
    methods = trials[ONSET_METHOD].astype(object)  # may be categorical, without "unknown"
    return trials.assign(**{ONSET_METHOD: methods.where(methods.notna(), UNKNOWN_ONSET).astype(str)})


def onset_methods(data: pd.DataFrame) -> dict[str, int]:
    """Answered arrow-of-time trials per onset method (``"unknown"`` where none was stored).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"correct_response": ["F"] * 3, "response": ["F"] * 3,
    ...                    "rt_ms": [500.0, 600.0, 700.0],
    ...                    "onset_method": ["element-timing", "raf-next", "raf-next"]})
    >>> onset_methods(df)
    {'element-timing': 1, 'raf-next': 2}
    """
    counts = _answered_rt(data)[ONSET_METHOD].value_counts().sort_index()
    return {str(method): int(n) for method, n in counts.items()}


def median_rt(data: pd.DataFrame, by: Sequence[str] | str = ("category", "direction",
                                                              "response")) -> pd.DataFrame:
    """Median reaction time per group of answered arrow-of-time trials.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials; rows without an answer or a positive ``rt_ms`` are skipped.
    by : str or sequence of str
        Grouping; ``"category"`` breaks multi-label trials out.

    Returns
    -------
    pandas.DataFrame
        ``by`` columns, ``n``, ``median_rt_ms``, ``q25_rt_ms``, ``q75_rt_ms``.

    Notes
    -----
    Medians, not means, because RT distributions are right-skewed (Hanyu et al. 2023 report
    medians by category x direction x response). When the trials were timed by more than
    one onset method, ``onset_method`` is added to ``by``: the methods differ by up to a
    display refresh, so their RTs are not pooled.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"correct_response": ["F", "F"], "response": ["F", "F"],
    ...                    "direction": ["forward"] * 2, "rt_ms": [500.0, 700.0]})
    >>> float(median_rt(df, by="direction").median_rt_ms[0])
    600.0
    """
    by = [by] if isinstance(by, str) else list(by)
    trials = _answered_rt(data, by)
    if trials[ONSET_METHOD].nunique() > 1 and ONSET_METHOD not in by:
        by.append(ONSET_METHOD)
    if "category" in by and "category" not in trials.columns:
        trials = loading.explode_categories(trials)
    if trials.empty:
        return pd.DataFrame(columns=[*by, "n", "median_rt_ms", "q25_rt_ms", "q75_rt_ms"])
    grouped = trials.groupby(by, observed=True)["rt_ms"]
    out = grouped.agg(n="size", median_rt_ms="median")
    quart = grouped.quantile([0.25, 0.75]).unstack()
    out["q25_rt_ms"], out["q75_rt_ms"] = quart[0.25], quart[0.75]
    return out.reset_index()


def answer_speed(data: pd.DataFrame, subject: str = "subject_id") -> pd.DataFrame:
    """Are "forward" answers faster than "backward" answers? Paired over subjects.

    Returns
    -------
    pandas.DataFrame
        One row: ``n_subjects`` (those with both answers), ``median_rt_forward_ms``,
        ``median_rt_backward_ms`` (medians over subjects of per-subject medians),
        ``mean_difference_ms`` (backward minus forward), ``t``, ``p_t`` (paired t-test on
        per-subject log medians), ``w``, ``p_wilcoxon`` (Wilcoxon signed-rank).

    References
    ----------
    .. [1] Hanyu, Watanabe & Kitazawa (2023). Ready to detect a reversal of time's arrow.
       R. Soc. Open Sci. 10: 230036.
    """
    trials = _answered_rt(data, (subject,))
    per = trials.groupby([subject, "response"])["rt_ms"].median().unstack()
    per = per.dropna(subset=[c for c in ("F", "B") if c in per.columns])
    if not {"F", "B"} <= set(per.columns) or len(per) < 2:
        return pd.DataFrame([{"n_subjects": len(per)}])
    diff = per["B"] - per["F"]
    t, p_t = stats.ttest_rel(np.log(per["B"]), np.log(per["F"]))
    nonzero = diff[diff != 0]
    w, p_w = stats.wilcoxon(nonzero) if len(nonzero) else (np.nan, np.nan)
    return pd.DataFrame([{
        "n_subjects": len(per), "median_rt_forward_ms": per["F"].median(),
        "median_rt_backward_ms": per["B"].median(), "mean_difference_ms": diff.mean(),
        "t": t, "p_t": p_t, "w": w, "p_wilcoxon": p_w}])


def deterministic_subsample(data: pd.DataFrame, column: str, k: int) -> pd.DataFrame:
    """Rows of at most ``k`` distinct values of ``column``, evenly spaced in sorted order.

    The subsample depends only on the set of values, so a report is reproducible.
    """
    ids = np.sort(data[column].dropna().astype(str).unique())
    if len(ids) > k:
        ids = ids[np.unique(np.linspace(0, len(ids) - 1, k).round().astype(int))]
    return data[data[column].astype(str).isin(set(ids))]


def feasible_sample(trials: pd.DataFrame, max_subjects: int | None = None,
                    subject: str = "subject_id", clip: str = "source_clip_id",
                    reason: str | None = None):
    """All trials when a crossed fit of their size is feasible (and within ``max_subjects``),
    else whole participants, evenly spaced by id, as many as fit; and a sentence saying which.
    """
    n_s, n_k = trials[subject].nunique(), trials[clip].nunique()
    keep = n_s if max_subjects is None else min(n_s, max_subjects)
    while keep > 2 and not crossed.feasible(keep, n_k):
        keep = int(keep * 0.8)
    if keep >= n_s:
        return trials, (f"all {len(trials):,} trials of {n_s:,} participants and {n_k:,} "
                        "clips")
    sample = deterministic_subsample(trials, subject, keep)
    why = (reason or f"at most {max_subjects:,} participants were asked for") \
        if crossed.feasible(n_s, n_k) else \
        "the participant x clip coupling of all of them is too large to form"
    return sample, (f"{len(sample):,} of {len(trials):,} trials: all trials of "
                    f"{sample[subject].nunique():,} of {n_s:,} participants (evenly spaced by "
                    f"id) and the {sample[clip].nunique():,} clips they saw, because {why}")


def rt_mixed_model(data: pd.DataFrame, formula: str = LMM_FORMULA,
                   max_subjects: int | None = None) -> tuple[pd.DataFrame, dict]:
    """Linear mixed model of log RT with crossed random intercepts for subject and clip.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials of people (answered arrow-of-time trials with RTs are used).
    formula : str
        Fixed effects (patsy), over ``log_rt``, ``direction``, ``response``; when the fitted
        trials were timed by more than one onset method, ``+ C(onset_method)`` is added, so a
        method's constant offset is not read as an effect.
    max_subjects : int, optional
        Fit at most this many participants (evenly spaced by id). By default every trial
        is fitted unless the participant x clip coupling is too large to form
        (:func:`analysis.crossed.feasible`); ``info["fitted_on"]`` says what was fitted.

    Returns
    -------
    (pandas.DataFrame, dict)
        Table with ``term, coef, se, z, p, ci_low, ci_high`` (variance components as
        ``term = "var(subject)"`` / ``"var(clip)"`` / ``"var(residual)"``, ``coef`` =
        variance) and a dict with ``n_obs, n_subjects, n_clips, fitted_on, all_data,
        method, converged, warnings, formula, onset_methods``.

    Notes
    -----
    :math:`\\log RT_{ij} = x_{ij}^T\\beta + u_{subject(i)} + v_{clip(j)} + \\varepsilon`,
    fitted by REML with :func:`analysis.crossed.fit_lmm` (lme4's profiled REML for crossed
    random intercepts). It gives statsmodels ``MixedLM``'s estimates (tests compare them)
    on all trials: statsmodels needs about a second for 1,400 trials and minutes for
    20,000, while this costs (participants x clips^2) per step whatever the trial count.

    References
    ----------
    .. [1] Baayen, Davidson & Bates (2008). Mixed-effects modeling with crossed random
       effects for subjects and items. J. Mem. Lang. 59, 390-412.
    .. [2] Bates, Maechler, Bolker & Walker (2015). Fitting linear mixed-effects models
       using lme4. J. Stat. Softw. 67(1).
    """
    trials = _answered_rt(data)
    sample, fitted_on = feasible_sample(trials, max_subjects)
    if sample[ONSET_METHOD].nunique() > 1:
        formula = f"{formula} + C({ONSET_METHOD})"
    counts = sample[ONSET_METHOD].value_counts().sort_index()
    info = {"n_obs": len(sample), "onset_methods": {str(m): int(n) for m, n in counts.items()},
            "n_subjects": int(sample["subject_id"].nunique()),
            "n_clips": int(sample["source_clip_id"].nunique()), "formula": formula,
            "fitted_on": fitted_on, "all_data": len(sample) == len(trials),
            "method": "REML, crossed random intercepts for participant and clip (lme4's "
                      "algorithm, analysis.crossed)", "warnings": []}
    empty = pd.DataFrame(columns=["term", "coef", "se", "z", "p", "ci_low", "ci_high"])
    if info["n_subjects"] < 2 or info["n_clips"] < 2 or sample["response"].nunique() < 2:
        info["converged"] = False
        info["warnings"] = ["too few participants, clips or answers to fit"]
        return empty, info
    fit, names = _fit_log_rt(sample, formula)
    info["converged"], info["warnings"] = fit.converged, fit.warnings
    variances = pd.DataFrame({"term": ["var(subject)", "var(clip)", "var(residual)"],
                              "coef": [fit.var_a, fit.var_b, fit.scale]})
    return pd.concat([crossed.fixed_table(fit, names), variances], ignore_index=True), info


def _fit_log_rt(sample: pd.DataFrame, formula: str):
    """Fixed-effect design from the distinct (direction, response, onset) cells, then REML."""
    import patsy

    # Codes per covariate (categoricals factorise without hashing strings), one cell each.
    key, levels = np.zeros(len(sample), dtype=np.int64), []
    for col in ("direction", "response", ONSET_METHOD):
        codes, uniques = pd.factorize(sample[col])
        key = key * len(uniques) + codes
        levels.append((col, np.asarray(uniques, dtype=object).astype(str)))
    present, cell = np.unique(key, return_inverse=True)
    cells, rest = {}, present
    for col, values in reversed(levels):
        cells[col], rest = values[rest % len(values)], rest // len(values)
    x_cells = patsy.dmatrix(formula.split("~", 1)[1], pd.DataFrame(cells),
                            return_type="dataframe")
    log_rt = np.log(sample["rt_ms"].to_numpy(float))
    subject = pd.factorize(sample["subject_id"])[0]
    clip = pd.factorize(sample["source_clip_id"], use_na_sentinel=False)[0]
    design, rows, swapped = crossed.design(subject, clip, cell.ravel(), x_cells.to_numpy(),
                                           {"y": log_rt})
    names = ("clip", "subject") if swapped else ("subject", "clip")
    fit = crossed.fit_lmm(design, rows["n"], rows["y"], float(log_rt @ log_rt), names=names)
    if swapped:
        fit.var_a, fit.var_b = fit.var_b, fit.var_a
    return fit, list(x_cells.columns)
