"""Reaction times: medians by condition, forward vs backward answer speed, log-RT LMM."""
from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from analysis import loading

# The crossed-effects likelihood costs ~ (subjects + clips)^2 x trials per step, so the fit
# uses a fixed, reproducible corner of a large study (see rt_mixed_model).
LMM_MAX_SUBJECTS = 20
LMM_MAX_CLIPS = 40
LMM_FORMULA = "log_rt ~ C(direction) * C(response)"
# How a trial's clip onset was timed (Element Timing, the next animation frame, ...): the
# methods differ by up to a refresh, so RTs of different methods are never pooled silently.
ONSET_METHOD = "onset_method"
UNKNOWN_ONSET = "unknown"


def _answered_rt(data: pd.DataFrame) -> pd.DataFrame:
    trials = loading.aot_trials(data)
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
    trials = _answered_rt(data)
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
    trials = _answered_rt(data)
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


def rt_mixed_model(data: pd.DataFrame, max_subjects: int = LMM_MAX_SUBJECTS,
                   max_clips: int = LMM_MAX_CLIPS,
                   formula: str = LMM_FORMULA) -> tuple[pd.DataFrame, dict]:
    """Linear mixed model of log RT with crossed random intercepts for subject and clip.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials of people (answered arrow-of-time trials with RTs are used).
    max_subjects, max_clips : int
        The fit uses the trials of at most this many subjects and clips, each chosen
        evenly spaced in sorted-id order (:func:`deterministic_subsample`). The crossed
        likelihood costs about (subjects + clips)^2 x trials per step, so a large study is
        fitted on this documented, reproducible subsample; ``info["subsample"]`` says
        which.
    formula : str
        Fixed effects (patsy), over ``log_rt``, ``direction``, ``response``; when the fitted
        trials were timed by more than one onset method, ``+ C(onset_method)`` is added, so a
        method's constant offset is not read as an effect.

    Returns
    -------
    (pandas.DataFrame, dict)
        Table with ``term, coef, se, z, p, ci_low, ci_high`` (variance components as
        ``term = "var(subject)"`` / ``"var(clip)"``, ``coef`` = variance) and a dict with
        ``n_obs, n_subjects, n_clips, subsample, converged, formula, onset_methods``.

    Notes
    -----
    :math:`\\log RT_{ij} = x_{ij}^T\\beta + u_{subject(i)} + v_{clip(j)} + \\varepsilon`,
    fitted by REML with statsmodels ``MixedLM``; the crossed clip effect is a variance
    component over a single all-data group, the statsmodels idiom for crossed effects.

    References
    ----------
    .. [1] Baayen, Davidson & Bates (2008). Mixed-effects modeling with crossed random
       effects for subjects and items. J. Mem. Lang. 59, 390-412.
    """
    import statsmodels.formula.api as smf

    trials = _answered_rt(data)
    sample = deterministic_subsample(trials, "subject_id", max_subjects)
    sample = deterministic_subsample(sample, "source_clip_id", max_clips)
    if sample[ONSET_METHOD].nunique() > 1:
        formula = f"{formula} + C({ONSET_METHOD})"
    info = {"n_obs": len(sample), "onset_methods": onset_methods(sample),
            "n_subjects": int(sample["subject_id"].nunique()),
            "n_clips": int(sample["source_clip_id"].nunique()), "formula": formula,
            "subsample": f"{sample['subject_id'].nunique()} of "
                         f"{trials['subject_id'].nunique()} subjects and "
                         f"{sample['source_clip_id'].nunique()} of "
                         f"{trials['source_clip_id'].nunique()} clips, evenly spaced by id"}
    if info["n_subjects"] < 2 or info["n_clips"] < 2 or sample["response"].nunique() < 2:
        info["converged"] = False
        return pd.DataFrame(columns=["term", "coef", "se", "z", "p", "ci_low", "ci_high"]), info
    frame = pd.DataFrame({"log_rt": np.log(sample["rt_ms"].to_numpy(float)),
                          "direction": sample["direction"].astype(str).to_numpy(),
                          "response": sample["response"].astype(str).to_numpy(),
                          ONSET_METHOD: sample[ONSET_METHOD].to_numpy(),
                          "subject": sample["subject_id"].astype(str).to_numpy(),
                          "clip": sample["source_clip_id"].astype(str).to_numpy(),
                          "all": 1})
    model = smf.mixedlm(formula, frame, groups="all",
                        vc_formula={"subject": "0 + C(subject)", "clip": "0 + C(clip)"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = model.fit(method=["lbfgs"], reml=True)
    info["converged"] = bool(fit.converged)
    # Boundary and convergence warnings belong in the report, not on the console.
    info["warnings"] = sorted({str(w.message) for w in caught})
    return _fixed_effects_table(fit, model), info


def _fixed_effects_table(fit, model) -> pd.DataFrame:
    names = model.exog_names
    ci = fit.conf_int().loc[names]
    table = pd.DataFrame({"term": names, "coef": fit.fe_params[names].to_numpy(),
                          "se": fit.bse_fe[names].to_numpy(),
                          "z": fit.tvalues[names].to_numpy(), "p": fit.pvalues[names].to_numpy(),
                          "ci_low": ci[0].to_numpy(), "ci_high": ci[1].to_numpy()})
    vc = pd.DataFrame({"term": [f"var({n})" for n in model.exog_vc.names],
                       "coef": np.asarray(fit.vcomp)})
    return pd.concat([table, vc], ignore_index=True)
