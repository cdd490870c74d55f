"""The report's sections: each ``add_*`` function adds its tables and notes to a
:class:`analysis.report.build.Report`, timing its steps and reporting a failed model fit
rather than raising it."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from analysis import (
    aot,
    comparisons,
    diagnostics,
    human_vs_model,
    nonresponse,
    ordering,
    ordering_factors,
    rt,
    tra,
)
from analysis import columns as C
from analysis.report import registry as R
from analysis.report import stats
from analysis.report.summary import category_table, overall_table

ORDERING_SEED = 0  # the ordering-by-factor intervals' own generator, when none is given


def timed(report, name: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, its duration kept in ``report.timings_s[name]``."""
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    report.timings_s[name] = round(time.perf_counter() - start, 3)
    return out


def fit(report, name: str, fn, *args, **kwargs):
    """:func:`timed` for a model fit, which data can make fail (a singular design when
    everyone is right, perfect separation, no variance ...): a failed fit leaves the reason
    in ``report.failures[name]``, its section and metrics.json, returns None, and the rest
    of the report is still built."""
    try:
        return timed(report, name, fn, *args, **kwargs)
    except Exception as error:  # noqa: BLE001 - whatever the fitter raises is reported
        reason = f"{type(error).__name__}: {error}"
        report.failures[name] = reason
        report.fit_info[name] = {"failed": reason}
        report.notes.append(f"{name} could not be fitted ({reason}); its table is left out.")
        return None


def add_aot_tables(report, aot_kept: pd.DataFrame, exploded: pd.DataFrame, n_boot: int,
                   rng) -> pd.DataFrame | None:
    """Arrow-of-time metrics overall (with people-minus-model gaps), per category, per
    direction, subject and session. Returns the per-category gap draws' table for
    :func:`analysis.report.stats.attach_category_gap_cis`, or None without categories."""
    t = report.tables
    gaps: list[pd.DataFrame] = []
    category_gaps: list[pd.DataFrame] = []
    t[R.AOT_OVERALL] = timed(report, "overall", overall_table, aot_kept, n_boot, rng, gaps)
    if not exploded.empty:
        t[R.AOT_BY_CATEGORY] = timed(report, "category", category_table, exploded, n_boot,
                                     rng, category_gaps)
    gaps = [g for g in gaps if not g.empty]
    if gaps:
        t[R.HUMAN_MODEL_GAP] = pd.concat(gaps, ignore_index=True)
    report.notes.append(stats.uncertainty_note(n_boot,
                                                      signal_detection=not aot_kept.empty))
    report.fit_info["uncertainty"] = stats.uncertainty_info(n_boot)
    t[R.AOT_BY_DIRECTION] = aot.aot_metrics(aot_kept, by=["observer", "direction"])
    t[R.AOT_BY_SUBJECT] = timed(report, "by_subject", aot.aot_metrics, aot_kept,
                                by=["subject_kind", "subject_id", "observer"])
    t[R.AOT_BY_SESSION] = aot.aot_metrics(aot_kept, by=["subject_kind", "subject_id",
                                                        "session_id"])
    numbered = aot_kept[aot_kept["session_number"].notna()]  # an older export has none
    if not numbered.empty:
        t[R.AOT_BY_SESSION_NUMBER] = aot.aot_metrics(
            numbered.astype({"session_number": int}), by=["observer", "session_number"])
    return category_gaps[0] if category_gaps else None


def add_human_tables(report, humans: pd.DataFrame, exploded: pd.DataFrame) -> None:
    """People's median RTs and answer speed, and the log-RT LMM, GEE and crossed GLMM."""
    t = report.tables
    if humans.empty:
        return
    # Without category labels the medians are by direction x response only.
    t[R.RT_MEDIAN] = timed(report, R.RT_MEDIAN, rt.median_rt, exploded) if len(exploded) \
        else rt.median_rt(humans, by=["direction", "response"])
    if not stats.too_few_participants(report, [R.RT_ANSWER_SPEED],
                                             humans["subject_id"].nunique()):
        t[R.RT_ANSWER_SPEED] = rt.answer_speed(humans)  # a paired test over participants
    methods = rt.onset_methods(humans)
    if len(methods) > 1:
        listed = ", ".join(f"{method}: {n}" for method, n in methods.items())
        report.notes.append(f"Clip onsets were timed by {len(methods)} methods ({listed} "
                            "answered trials): median RTs are given per onset method and the "
                            "log-RT mixed model has onset_method as a covariate.")
    # The log-RT LMM, the GEE and the crossed GLMM, each noted with what it was fitted on.
    stats.add_model_fits(report, humans, fit)


def add_comparison_tables(report, aot_kept: pd.DataFrame, raw: pd.DataFrame,
                          n_boot: int, rng, policy: str) -> None:
    """Tests against chance and between models, human-model agreement, logit accuracy and
    the non-response sensitivity; the family of tests is Holm-corrected together."""
    kinds = set(aot_kept["subject_kind"])
    if aot_kept.empty:
        return
    t = report.tables
    family = {R.BINOMIAL_TESTS: comparisons.binomial_tests(aot_kept, n_boot=n_boot, rng=rng)}
    t[R.NONRESPONSE_SENSITIVITY] = nonresponse.sensitivity_table(raw, policy)
    if C.MODEL in kinds:
        t[R.TEXT_VS_LOGIT_ACCURACY] = nonresponse.text_and_logit_accuracy(aot_kept)
        report.notes.extend(f"{row.observer}: {row.note}." for row in
                            t[R.TEXT_VS_LOGIT_ACCURACY].itertuples() if row.note)
        family[R.MCNEMAR_TESTS] = comparisons.mcnemar_tests(aot_kept)
    if {C.HUMAN, C.MODEL} <= kinds:
        t[R.PER_STIMULUS_AGREEMENT] = human_vs_model.per_stimulus_agreement(aot_kept)
        t[R.ERROR_CONSISTENCY] = stats.few_people_intervals(timed(
            report, R.ERROR_CONSISTENCY, human_vs_model.error_consistency, aot_kept,
            n_boot=n_boot, rng=rng), aot_kept)  # its intervals resample people too
        family[R.ITEM_CORRELATION] = comparisons.item_correlations(t[R.PER_STIMULUS_AGREEMENT])
        if R.AOT_BY_CATEGORY in t:
            t[R.CATEGORY_GAP] = human_vs_model.gap_from_category_table(t[R.AOT_BY_CATEGORY])
            t[R.DIFFICULTY_CORRELATION] = human_vs_model.difficulty_correlation(
                t[R.CATEGORY_GAP])
    family = {k: v for k, v in family.items() if not v.empty}
    family, size = comparisons.holm_family(family)
    t.update(family)
    report.fit_info["holm"] = {"family_size": size, "tables": sorted(family)}
    report.notes.append(
        f"Holm correction across the family of {size} tests the report makes "
        f"({', '.join(sorted(family))}): p_holm beside each p_value. Tests against 50% "
        "are two-sided and take independent units, never pooled trials: people by the "
        "two-way (participant x clip) bootstrap of their accuracy, p the level at which its "
        "percentile interval leaves out 50% (a t-test over participants would take the "
        "clips as fixed), models by an exact sign test over "
        "items (a clip in one direction, label orders averaged), as are McNemar's pairs "
        f"(exact below {comparisons.EXACT_BELOW} discordant items, else chi-square with "
        "continuity correction); the per-item correlation of people with a model permutes "
        "and resamples whole clips (a clip's two directions are not independent items); "
        "kappa intervals resample clips and people (two-way).")


def add_ordering_tables(report, kept: pd.DataFrame, raw: pd.DataFrame, policy: str,
                        n_boot: int | None = None, rng=None) -> None:
    """Frame ordering by condition, by factor with CIs, anchoring and disorder, and under
    each non-response policy.

    ``n_boot`` defaults to the report's (``fit_info["uncertainty"]``, else 1000) and ``rng``
    to ``default_rng(ORDERING_SEED)``, so adding ordering intervals leaves the draws of
    the arrow-of-time tables as they were; the seed is kept in ``fit_info``.
    """
    rows = kept[kept["trial_type"] == C.FRAME_ORDER]
    if rows.empty:
        return
    t = report.tables
    scores = timed(report, "ordering", ordering.ordering_trial_scores, rows)
    for name, by in ((R.ORDERING_BY_CONDITION, "condition"),
                     (R.ORDERING_ANCHORING, "true_first_position"),
                     (R.ORDERING_BY_INVERSIONS, "n_inversions")):
        t[name] = ordering.ordering_metrics(rows, by=["observer", by], scores=scores,
                                            policy=policy)
    n_boot = n_boot or report.fit_info.get("uncertainty", {}).get("n_boot", 1000)
    seeded = rng is None
    rng = np.random.default_rng(ORDERING_SEED) if seeded else rng
    by_factor = timed(report, "ordering_factors", ordering_factors.ordering_by_factor, rows, scores,
                      policy, n_boot=n_boot, rng=rng)
    if by_factor["condition"].nunique() > 1:  # one condition has no factor to draw
        t[R.ORDERING_BY_FACTOR] = stats.few_people_intervals(by_factor, rows)
        report.fit_info[R.ORDERING_BY_FACTOR] = {
            "n_boot": n_boot, "seed": ORDERING_SEED if seeded else None,
            "people": "participant bootstrap", "models": "clip bootstrap",
            "metrics": list(ordering_factors.FACTOR_METRICS)}
        report.notes.append(
            "Frame ordering by factor: each EGO-FLIGHT condition varies one factor (frames, "
            "span, annotation, hints) from the original (4 frames, medium span, brief "
            "annotation, no hints), which is drawn in every panel; 95% percentile intervals "
            f"from {n_boot} resamples of participants (people) or clips (models).")
    t[R.ORDERING_NONRESPONSE_SENSITIVITY] = ordering.ordering_sensitivity(
        raw, by="observer", main_policy=policy)


def add_diagnostic_tables(report, kept: pd.DataFrame, tra_data: pd.DataFrame | None) -> None:
    """Models' TOMATO ratios, label-swap consistency, calibration and ledger; the TRA
    tables."""
    t = report.tables
    models = kept[kept["subject_kind"] == C.MODEL]
    if not models.empty:
        tomato = diagnostics.tomato_ratios(models)
        if not tomato.empty:
            t[R.TOMATO] = tomato
        if (models["trial_type"] == C.PAIR_ORDER).any():
            t[R.SWAP_CONSISTENCY] = diagnostics.swap_consistency(models)
        bins, summary = diagnostics.calibration(models)
        if not summary.empty:
            t[R.CALIBRATION_BINS], t[R.CALIBRATION] = bins, summary
        ledger = diagnostics.ledger_table(models)
        if not ledger.empty:
            t[R.MODEL_LEDGER] = ledger
    if tra_data is not None and not tra_data.empty:
        t[R.TRA_PROCESS] = tra.tra_process_table(tra_data)
        t[R.TRA_SCENARIO] = tra.tra_scenario_table(tra_data)
        if "parameter" in tra_data and tra_data["parameter"].notna().any():
            t[R.TRA_PARAMETER] = tra.tra_parameter_table(tra_data)
