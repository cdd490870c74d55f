"""The report's uncertainty, mixed-model and per-participant signal-detection parts.

:mod:`analysis.report.build` calls these; each adds tables, notes and metrics.json entries to a
:class:`analysis.report.build.Report`, so what is said about a method is said once, here.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import accuracy_model, bootstrap, intervals, participant_sdt, rt
from analysis import columns as C
from analysis.report import registry as R

# Human minus model: metric -> (column, scale). Proportions in percentage points.
GAP_METRICS = {"accuracy": ("gap_accuracy_points", 100.0),
               "f1_forward": ("gap_f1_forward_points", 100.0),
               "f1_backward": ("gap_f1_backward_points", 100.0),
               "d_prime": ("gap_d_prime", 1.0), "criterion": ("gap_criterion", 1.0)}
CORRECTION = ("log-linear correction (Hautus 1995: 0.5 added to hits and false alarms and 1 "
              "to each total, for every participant and observer alike)")


def gap_table(draws: bootstrap.Draws, metrics=GAP_METRICS) -> pd.DataFrame:
    """People minus each model from one set of draws (``observer`` in its groups)."""
    if C.HUMAN not in set(draws.groups["observer"]):
        return pd.DataFrame()
    out = bootstrap.difference_table(draws, "observer", C.HUMAN, metrics)
    return out.rename(columns={"observer": "model"}) if not out.empty else out


def few_people_intervals(table: pd.DataFrame, data: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its intervals over people (two-way or by participant) left empty, and
    ``ci_method`` saying
    why, when ``data`` holds fewer than :data:`analysis.bootstrap.MIN_PARTICIPANTS` people:
    resampling two people is not an interval of a population's value."""
    too_few = bootstrap.too_few_people(
        data.loc[data["subject_kind"] == C.HUMAN, "subject_id"].nunique())
    if not too_few or "ci_method" not in table:
        return table
    # startswith: a label may carry a note (an exact bound where the draws had no spread)
    over_people = table["ci_method"].astype(str).str.startswith(
        tuple(bootstrap.SCHEME_LABELS[s] for s in ("two-way", "subject")))
    cols = [c for c in table.columns if c.endswith(("_ci_low", "_ci_high"))]
    table = table.copy()
    table.loc[over_people, cols] = np.nan
    table.loc[over_people, "ci_method"] = f"not estimated: {too_few}"
    return table


def attach_category_gap_cis(tables: dict, gaps: pd.DataFrame) -> None:
    """Add the paired two-way intervals to ``category_gap`` (by model and category)."""
    if R.CATEGORY_GAP not in tables or gaps.empty:
        return
    cols = [c for c in gaps.columns if c.endswith(("_ci_low", "_ci_high"))
            and c.removesuffix("_ci_low").removesuffix("_ci_high") in tables[R.CATEGORY_GAP]]
    tables[R.CATEGORY_GAP] = tables[R.CATEGORY_GAP].merge(
        gaps[["model", "category", *cols, "ci_method", "n_boot"]], on=["model", "category"],
        how="left")


def uncertainty_info(n_boot: int) -> dict:
    """What metrics.json says about every interval in the report."""
    return {
        "method": "percentile bootstrap",
        "n_boot": int(n_boot), "ci": 0.95,
        "people": bootstrap.SCHEME_LABELS["two-way"]
        + ": participants and clips resampled independently in each resample",
        "models": "clip: a model is one subject, so only clips are resampled",
        "human_model_gaps": "paired: people and models from the same clip draws, participants "
                            "resampled too",
        "per_participant_means": "the two-way bootstrap, its percentile interval and the "
                                 "test that inverts it",
        "references": ["Owen (2007) The pigeonhole bootstrap, Ann. Appl. Stat. 1(2)",
                       "Brennan, Harris & Hanson (1987) ACT Research Report 87-7",
                       "Field & Welsh (2007) JRSS B 69(3)"]}


def uncertainty_note(n_boot: int, signal_detection: bool = True) -> str:
    return (f"Intervals are 95% percentile bootstraps with {n_boot} resamples. People's "
            "metrics and every people-model gap resample participants and clips together "
            "(two-way, Owen 2007), since both are samples; models, which have no "
            "participants, resample clips only. The ci_method column says which per row."
            + (f" Signal detection (d', c) uses the {CORRECTION}." if signal_detection
               else ""))


def add_model_fits(report, humans: pd.DataFrame, fit) -> None:
    """The log-RT LMM, the GEE and the crossed GLMM, each with a note of what was fitted.

    ``fit`` is :func:`analysis.report.sections.fit` (a failed fit is reported, not raised).
    Each models participants as a sample (a random effect, or clustered errors), so none
    is fitted below :data:`analysis.bootstrap.MIN_PARTICIPANTS` participants.
    """
    t = report.tables
    if too_few_participants(report, [R.RT_LMM, R.ACCURACY_GEE, R.ACCURACY_GLMM],
                            humans["subject_id"].nunique()):
        return
    fitted = fit(report, R.RT_LMM, rt.rt_mixed_model, humans)
    if fitted is not None:
        t[R.RT_LMM], info = fitted
        report.fit_info[R.RT_LMM] = info
        report.notes.append(_fit_note("Log-RT mixed model", info))
    fitted = fit(report, R.ACCURACY_GEE, accuracy_model.accuracy_model, humans)
    if fitted is not None:
        t[R.ACCURACY_GEE], info = fitted
        report.fit_info[R.ACCURACY_GEE] = info
        report.notes.append(f"Accuracy model (GEE): {info['method']}; all {info['n_obs']:,} "
                            f"trials of {info['n_subjects']} participants."
                            + _warnings(info))
    fitted = fit(report, R.ACCURACY_GLMM, accuracy_model.crossed_accuracy_model, humans)
    if fitted is not None:
        t[R.ACCURACY_GLMM], info = fitted
        report.fit_info[R.ACCURACY_GLMM] = info
        report.notes.append(_fit_note("Accuracy GLMM (beside the GEE; conditional, so "
                                      "larger, coefficients)", info))


def _fit_note(name: str, info: dict) -> str:
    return (f"{name}: {info['method']}; fitted on {info['fitted_on']}."
            + ("" if info.get("converged", True) else " It did not converge.")
            + _warnings(info))


def _warnings(info: dict) -> str:
    shown = info.get("warnings") or []
    return f" Warnings: {'; '.join(shown)}." if shown else ""


def add_participant_sdt(report, humans: pd.DataFrame, n_boot: int, rng) -> None:
    """Per-participant d' and c, and their means with two-way intervals and tests (the
    forward-bias test among them) from :data:`analysis.bootstrap.MIN_PARTICIPANTS` on."""
    if humans.empty:
        return
    per = participant_sdt.participant_sdt(humans)
    report.tables[R.SDT_BY_PARTICIPANT] = per
    if too_few_participants(report, [R.SDT_PARTICIPANT_SUMMARY], len(per)):
        return
    draws = bootstrap.subject_mean_draws(humans, n_boot=n_boot, rng=rng)
    overall = report.tables.get(R.AOT_OVERALL, pd.DataFrame())
    pooled = {}
    if not overall.empty:
        row = overall[(overall["subset"] == "full") & (overall["observer"] == C.HUMAN)]
        pooled = {m: float(row[m].iloc[0]) for m in ("accuracy", "d_prime", "criterion")
                  if len(row)}
    summary = participant_sdt.participant_summary(per, draws=draws, pooled=pooled,
                                                  few=intervals.few_units(humans))
    report.tables[R.SDT_PARTICIPANT_SUMMARY] = summary
    by_metric = summary.set_index("metric")
    c, d = by_metric.loc["criterion"], by_metric.loc["d_prime"]
    n_extreme = int(per["extreme"].sum())
    report.fit_info["participant_sdt"] = {
        "correction": CORRECTION, "n_participants": int(len(per)),
        "n_extreme": n_extreme, "interval": "two-way (participant x clip) percentile "
        f"bootstrap, {n_boot} resamples", "summary": summary.to_dict("records")}
    report.notes.append(
        f"Per participant (n = {len(per)}): mean d' {d['mean']:.2f} (95% CI {d['ci_low']:.2f} "
        f"to {d['ci_high']:.2f}; pooled counts give {d['pooled']:.2f}); mean c "
        f"{c['mean']:.2f} ({c['ci_low']:.2f} to {c['ci_high']:.2f}), forward bias c != 0: "
        f"p = {c['p_value']:.2g}. Intervals and tests resample participants and clips "
        f"(two-way), as both are samples. d' and c use the {CORRECTION}; uncorrected values "
        f"are given beside them for the {len(per) - n_extreme} participants without a rate "
        "of 0 or 1.")


def too_few_participants(report, names: list[str], n_people: int) -> bool:
    """True below :data:`analysis.bootstrap.MIN_PARTICIPANTS` people: then each of
    ``names`` is left out and says so in its section (``report.failures``), in
    metrics.json and in one note."""
    too_few = bootstrap.too_few_people(n_people)
    if not too_few:
        return False
    reason = f"{too_few}; a spread between participants is not estimated from fewer"
    for name in names:
        report.failures[name] = reason
        report.fit_info[name] = {"not_estimated": reason}
    report.notes.append(f"Not estimated: {', '.join(names)}; {reason}.")
    return True
