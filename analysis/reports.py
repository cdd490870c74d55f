"""The study report: every table and figure from one canonical trial table.

:func:`build_report` is a pure function of the DataFrame (the dashboard calls the same
table builders and :mod:`analysis.figures`); :func:`analysis.report_output.write_report`
turns its result into report.html, one CSV per table and metrics.json.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from analysis import (accuracy_model, aot, benchmark_reference, bootstrap, diagnostics,
                      exclusions, figures, human_vs_model, loading, ordering, rt, tra)
from analysis import columns as C

EXPLODED_COLUMNS = ["subject_id", "subject_kind", "observer", "source_clip_id", "stimulus_id",
                    "trial_type", "direction", "correct_response", "response", "correct",
                    "rt_ms", "onset_method"]
HEADLINE = ("n_trials", "accuracy", "f1_forward", "f1_backward", "forward_share", "d_prime",
            "criterion")


@dataclass
class Report:
    """Tables (name -> DataFrame), headline metrics, figures (name -> plotly figure), notes."""

    tables: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    fit_info: dict = field(default_factory=dict)  # sample sizes and methods of model fits
    timings_s: dict = field(default_factory=dict)


def with_observer(data: pd.DataFrame) -> pd.DataFrame:
    """Add ``observer``: ``"human"`` for people pooled; for a model its subject id, plus
    its prompt setting when it was run under several (zero-shot, few-shot, CoT ... are
    separate rows in the paper's tables), plus any TOMATO frame condition other than the
    full clip. Both label orders of the logit scoring stay pooled (they are balanced)."""
    is_model = (data["subject_kind"] == C.MODEL).to_numpy()
    observer = np.full(len(data), C.HUMAN, dtype=object)
    models = data[is_model]
    if len(models):
        setting = [e.get(C.EXTRA_SETTING) for e in models["extra"]]
        variant = [e.get(C.EXTRA_TASK_VARIANT) for e in models["extra"]]
        n_settings = pd.Series(setting, dtype=object).groupby(
            models["subject_id"].to_numpy()).nunique()
        observer[is_model] = [
            str(m) + (f" / {st}" if n_settings.get(m, 0) > 1 else "")
            + (f" / {v}" if v not in (None, "full") else "")
            for m, st, v in zip(models["subject_id"], setting, variant)]
    return data.assign(observer=observer)


def select_models(data: pd.DataFrame, models: Sequence[str] | None) -> pd.DataFrame:
    """Keep people and the named models (all models when ``models`` is empty)."""
    if not models:
        return data
    known = set(data.loc[data["subject_kind"] == C.MODEL, "subject_id"])
    unknown = sorted(set(models) - known)
    if unknown:
        raise ValueError(f"no trials for model(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(known)) or 'none'}")
    return data[(data["subject_kind"] != C.MODEL) | data["subject_id"].isin(models)]


def overall_table(kept: pd.DataFrame, n_boot: int, rng) -> pd.DataFrame:
    """Per observer on the full set and the benchmark subset (no Reciprocal), with CIs."""
    parts = []
    for subset, frame in (("full", kept), ("benchmark", loading.benchmark_subset(kept))):
        if loading.aot_trials(frame).empty:
            continue
        metrics = aot.aot_metrics(frame, by="observer")
        ci = bootstrap.cluster_bootstrap_ci(frame, by="observer", n_boot=n_boot, rng=rng)
        ci = ci.drop(columns=[c for c in bootstrap.DEFAULT_METRICS if c in ci])
        parts.append(metrics.merge(ci, on="observer").assign(subset=subset))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def category_table(exploded: pd.DataFrame, n_boot: int, rng) -> pd.DataFrame:
    """Per observer x category (multi-label counted in each), with clip-bootstrap CIs."""
    metrics = aot.aot_metrics(exploded, by=["observer", "category"])
    ci = bootstrap.cluster_bootstrap_ci(exploded, by=["observer", "category"], n_boot=n_boot,
                                        rng=rng)
    ci = ci.drop(columns=[c for c in bootstrap.DEFAULT_METRICS if c in ci])
    return metrics.merge(ci, on=["observer", "category"])


def _timed(report: Report, name: str, fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    report.timings_s[name] = round(time.perf_counter() - start, 3)
    return out


def build_report(data: pd.DataFrame, models: Sequence[str] | None = None, n_boot: int = 1000,
                 rng: np.random.Generator | None = None,
                 tra_data: pd.DataFrame | None = None) -> Report:
    """Every table, figure and headline metric of a study.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials (typed with :func:`analysis.loading.normalize_trials`).
    models : sequence of str, optional
        Model subject ids to include (default: all).
    n_boot : int
        Bootstrap resamples for clip-clustered CIs.
    rng : numpy.random.Generator, optional
        For the bootstrap; ``default_rng(0)`` when omitted, so reports are reproducible.
    tra_data : pandas.DataFrame, optional
        Per-clip TRA values (:data:`analysis.columns.TRA_COLUMNS`) for the TRA tables.

    Returns
    -------
    Report
    """
    rng = np.random.default_rng(0) if rng is None else rng
    report = Report()
    data = with_observer(select_models(data, models))
    flow = _timed(report, "exclusion_flow", exclusions.trial_exclusion_flow, data)
    kept = loading.included(data)
    aot_kept = loading.aot_trials(kept)
    exploded = _timed(report, "explode", loading.explode_categories, aot_kept,
                      columns=EXPLODED_COLUMNS)
    t = report.tables
    t["exclusion_flow"] = flow
    t["aot_overall"] = _timed(report, "overall", overall_table, aot_kept, n_boot, rng)
    if not exploded.empty:
        t["aot_by_category"] = _timed(report, "category", category_table, exploded, n_boot,
                                      rng)
    t["aot_by_direction"] = aot.aot_metrics(aot_kept, by=["observer", "direction"])
    t["aot_by_subject"] = _timed(report, "by_subject", aot.aot_metrics, aot_kept,
                                 by=["subject_kind", "subject_id"])
    t["aot_by_session"] = aot.aot_metrics(aot_kept, by=["subject_kind", "subject_id",
                                                        "session_id"])
    humans = aot_kept[aot_kept["subject_kind"] == C.HUMAN]
    _add_human_tables(report, humans, exploded[exploded["subject_kind"] == C.HUMAN])
    _add_comparison_tables(report, aot_kept)
    _add_ordering_tables(report, kept)
    _add_diagnostic_tables(report, kept, tra_data)
    bench = benchmark_reference.benchmark_reference_table(aot_kept)  # published beside ours
    if not bench.empty:
        t["benchmark_reference"] = bench
    report.metrics = _headline(report, data, kept)
    report.figures = _timed(report, "figures", _figures, report, humans)
    return report


def _add_human_tables(report: Report, humans: pd.DataFrame, exploded: pd.DataFrame) -> None:
    t = report.tables
    if humans.empty:
        return
    # Without category labels the medians are by direction x response only.
    t["rt_median"] = _timed(report, "rt_median", rt.median_rt, exploded) if len(exploded) \
        else rt.median_rt(humans, by=["direction", "response"])
    t["rt_answer_speed"] = rt.answer_speed(humans)
    lmm, info = _timed(report, "rt_lmm", rt.rt_mixed_model, humans)
    t["rt_lmm"] = lmm
    report.fit_info["rt_lmm"] = info
    report.notes.append(f"Log-RT mixed model fitted on a deterministic subsample: "
                        f"{info['subsample']} ({info['n_obs']} trials).")
    methods = rt.onset_methods(humans)
    if len(methods) > 1:
        listed = ", ".join(f"{method}: {n}" for method, n in methods.items())
        report.notes.append(f"Clip onsets were timed by {len(methods)} methods ({listed} "
                            "answered trials): median RTs are given per onset method and the "
                            "log-RT mixed model has onset_method as a covariate.")
    gee, gee_info = _timed(report, "accuracy_model", accuracy_model.accuracy_model, humans)
    t["accuracy_model"] = gee
    report.fit_info["accuracy_model"] = gee_info
    report.notes.append(f"Accuracy model: {gee_info['method']}; all {gee_info['n_obs']} "
                        f"trials of {gee_info['n_subjects']} participants.")


def _add_comparison_tables(report: Report, aot_kept: pd.DataFrame) -> None:
    kinds = set(aot_kept["subject_kind"])
    if not {C.HUMAN, C.MODEL} <= kinds:
        return
    t = report.tables
    t["per_stimulus_agreement"] = human_vs_model.per_stimulus_agreement(aot_kept)
    t["error_consistency"] = _timed(report, "error_consistency",
                                    human_vs_model.error_consistency, aot_kept)
    if "aot_by_category" in t:
        t["category_gap"] = human_vs_model.gap_from_category_table(t["aot_by_category"])
        t["difficulty_correlation"] = human_vs_model.difficulty_correlation(t["category_gap"])


def _add_ordering_tables(report: Report, kept: pd.DataFrame) -> None:
    rows = kept[kept["trial_type"] == C.FRAME_ORDER]
    if rows.empty:
        return
    t = report.tables
    scores = _timed(report, "ordering", ordering.ordering_trial_scores, rows)
    for name, by in (("ordering_by_condition", "condition"),
                     ("ordering_anchoring", "true_first_position"),
                     ("ordering_by_inversions", "n_inversions")):
        t[name] = ordering.ordering_metrics(rows, by=["observer", by], scores=scores)


def _add_diagnostic_tables(report: Report, kept: pd.DataFrame, tra_data) -> None:
    t = report.tables
    models = kept[kept["subject_kind"] == C.MODEL]
    if not models.empty:
        tomato = diagnostics.tomato_ratios(models)
        if not tomato.empty:
            t["tomato"] = tomato
        if (models["trial_type"] == C.PAIR_ORDER).any():
            t["swap_consistency"] = diagnostics.swap_consistency(models)
        bins, summary = diagnostics.calibration(models)
        if not summary.empty:
            t["calibration_bins"], t["calibration"] = bins, summary
    if tra_data is not None and not tra_data.empty:
        t["tra_process"] = tra.tra_process_table(tra_data)
        t["tra_scenario"] = tra.tra_scenario_table(tra_data)
        if "parameter" in tra_data and tra_data["parameter"].notna().any():
            t["tra_parameter"] = tra.tra_parameter_table(tra_data)


def _headline(report: Report, data: pd.DataFrame, kept: pd.DataFrame) -> dict:
    overall = report.tables.get("aot_overall", pd.DataFrame())
    observers = {}
    for _, row in overall.iterrows():
        entry = observers.setdefault(row["observer"], {})
        entry[row["subset"]] = {k: _plain(row[k]) for k in HEADLINE}
    flow = report.tables["exclusion_flow"]
    out = {"n_trials_entered": int(len(data)), "n_trials_included": int(len(kept)),
           "n_participants_entered": int(flow["n_participants_remaining"].iloc[0]),
           "n_participants_included": int(flow["n_participants_remaining"].iloc[-1]),
           "models": sorted(data.loc[data["subject_kind"] == C.MODEL, "subject_id"].unique()),
           "observers": observers, "notes": report.notes}
    out.update(report.fit_info)
    if "error_consistency" in report.tables:
        out["error_consistency"] = report.tables["error_consistency"].to_dict("records")
    return _plain(out)


def _plain(value):
    """JSON-ready: numpy scalars to Python, NaN/inf to None."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _figures(report: Report, humans: pd.DataFrame) -> dict:
    t = report.tables
    out = {"exclusion_flow": figures.flow_figure(t["exclusion_flow"])}
    if "aot_by_category" in t and not t["aot_by_category"].empty:
        out["categories"] = figures.category_figure(t["aot_by_category"])
    overall = t.get("aot_overall", pd.DataFrame())
    if not overall.empty:
        full = overall[overall["subset"] == "full"]
        out["bias"] = figures.bias_figure(full)
        out["sdt"] = figures.sdt_figure(full)
    if not humans.empty:
        out["rt"] = figures.rt_figure(humans)
    if "ordering_by_condition" in t:
        out["ordering_condition"] = figures.ordering_figure(
            t["ordering_by_condition"], "condition", "Frame ordering by condition")
        out["ordering_anchoring"] = figures.ordering_figure(
            t["ordering_anchoring"], "true_first_position",
            "First-position anchoring: by presented position of the true first frame")
        out["ordering_inversions"] = figures.ordering_figure(
            t["ordering_by_inversions"], "n_inversions",
            "By disorder of the presented order (pairwise inversions)")
    return out


# --- one figure straight from canonical trials (the researcher dashboard's entry points) ---

def category_figure(data: pd.DataFrame, n_boot: int = 1000, rng=None):
    """Per-category Forward F1, Backward F1 and accuracy, people vs each model, with CIs."""
    kept = with_observer(loading.aot_trials(loading.included(data)))
    rng = np.random.default_rng(0) if rng is None else rng
    table = category_table(loading.explode_categories(kept), n_boot, rng)
    return figures.category_figure(table)


def bias_figure(data: pd.DataFrame):
    """Share of Forward answers per observer."""
    kept = with_observer(loading.aot_trials(loading.included(data)))
    return figures.bias_figure(aot.aot_metrics(kept, by="observer"))


def exclusion_flow_figure(data: pd.DataFrame):
    """Participants and trials remaining after each exclusion step."""
    return figures.flow_figure(exclusions.trial_exclusion_flow(data))
