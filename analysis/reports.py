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

from analysis import (aot, benchmark_reference, bootstrap, comparisons,
                      diagnostics, exclusions, figures, human_vs_model, loading, nonresponse,
                      observers, ordering, report_stats, rt, tra)
from analysis import columns as C

EXPLODED_COLUMNS = ["subject_id", "subject_kind", "observer", "source_clip_id", "stimulus_id",
                    "trial_type", "direction", "correct_response", "response", "correct",
                    "rt_ms", "onset_method"]
HEADLINE = ("n_trials", "accuracy", "f1_forward", "f1_backward", "forward_share", "d_prime",
            "criterion")
AOT_TABLES = ("aot_overall", "aot_by_category", "aot_by_direction", "aot_by_subject",
              "aot_by_session")
# Table columns that name observers or models: shown by short label, never by a local path.
LABELLED_COLUMNS = ("observer", "model", "subject_id", "session_id", "observer_a", "observer_b")
# Comparison tables also written to metrics.json (the first three: the Holm family).
METRICS_TABLES = ("binomial_tests", "mcnemar_tests", "item_correlation", "text_vs_logit_accuracy",
                  "nonresponse_sensitivity", "ordering_nonresponse_sensitivity")


@dataclass
class Report:
    """Tables (name -> DataFrame), headline metrics, figures (name -> plotly figure), notes."""

    tables: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    fit_info: dict = field(default_factory=dict)  # sample sizes and methods of model fits
    timings_s: dict = field(default_factory=dict)
    failures: dict = field(default_factory=dict)  # table name -> why it was not computed
    sessions: dict = field(default_factory=dict)  # the session rule and what it left out


def with_observer(data: pd.DataFrame) -> pd.DataFrame:
    """Add ``observer``: ``"human"`` for people pooled; for a model its observer name
    (:func:`analysis.observers.observer_ids`: model, revision, prompt setting and label
    order, named by the parts that differ), plus any TOMATO frame condition other than the
    full clip. A run balanced over both label orders is one observer."""
    return observers.with_observer(data)


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


def overall_table(kept: pd.DataFrame, n_boot: int, rng, gaps: list | None = None
                  ) -> pd.DataFrame:
    """Per observer on the full set and the benchmark subset (no Reciprocal), with CIs:
    two-way (participant x clip) for people, clip for models (:mod:`analysis.bootstrap`).
    People-minus-model gaps from the same draws are appended to ``gaps`` when given."""
    parts = []
    for subset, frame in (("full", kept), ("benchmark", loading.benchmark_subset(kept))):
        if loading.aot_trials(frame).empty:
            continue
        metrics = aot.aot_metrics(frame, by="observer")
        draws = bootstrap.bootstrap_draws(frame, by="observer", strata="observer",
                                          n_boot=n_boot, rng=rng)
        ci = bootstrap.percentile_table(draws)
        ci = ci.drop(columns=[c for c in bootstrap.DEFAULT_METRICS if c in ci])
        parts.append(metrics.merge(ci, on="observer").assign(subset=subset))
        if gaps is not None:
            gaps.append(report_stats.gap_table(draws).assign(subset=subset))
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    return table[["subset", *table.columns.drop("subset")]]  # which set a row is on, first


def category_table(exploded: pd.DataFrame, n_boot: int, rng, gaps: list | None = None
                   ) -> pd.DataFrame:
    """Per observer x category (multi-label counted in each), with CIs as
    :func:`overall_table` (people-minus-model gaps per category appended to ``gaps``)."""
    metrics = aot.aot_metrics(exploded, by=["observer", "category"])
    draws = bootstrap.bootstrap_draws(exploded, by=["observer", "category"],
                                      strata="observer", n_boot=n_boot, rng=rng)
    if gaps is not None:
        gaps.append(report_stats.gap_table(draws))
    ci = bootstrap.percentile_table(draws)
    ci = ci.drop(columns=[c for c in bootstrap.DEFAULT_METRICS if c in ci])
    return metrics.merge(ci, on=["observer", "category"])


def _timed(report: Report, name: str, fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    report.timings_s[name] = round(time.perf_counter() - start, 3)
    return out


def _fit(report: Report, name: str, fn, *args, **kwargs):
    """:func:`_timed` for a model fit, which data can make fail (a singular design when
    everyone is right, perfect separation, no variance ...): a failed fit leaves the reason
    in ``report.failures[name]``, its section and metrics.json, returns None, and the rest
    of the report is still built."""
    try:
        return _timed(report, name, fn, *args, **kwargs)
    except Exception as error:  # noqa: BLE001 - whatever the fitter raises is reported
        reason = f"{type(error).__name__}: {error}"
        report.failures[name] = reason
        report.fit_info[name] = {"failed": reason}
        report.notes.append(f"{name} could not be fitted ({reason}); its table is left out.")
        return None


def build_report(data: pd.DataFrame, models: Sequence[str] | None = None, n_boot: int = 1000,
                 rng: np.random.Generator | None = None,
                 tra_data: pd.DataFrame | None = None, sessions: str = "completed",
                 non_response: str = nonresponse.DEFAULT_POLICY) -> Report:
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
    sessions : str
        Which of people's sessions are analysed (:data:`analysis.columns.SESSION_RULES`):
        ``"completed"`` (default) or ``"all"``; see
        :func:`analysis.exclusions.apply_session_rule`. Sessions left out are a step of
        the exclusion flow, and the rule is stated in the notes and metrics.
    non_response : {"error", "excluded"}
        The one policy for people's timeouts and models' unparseable answers
        (:mod:`analysis.nonresponse`); the tables ``nonresponse_sensitivity`` and
        ``ordering_nonresponse_sensitivity`` give the figures under every policy.

    Returns
    -------
    Report
        Every N it reports is the analysed N: the exclusion flow ends with the trials the
        tables use (practice and catch trials are steps of it).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    report = Report()
    data = with_observer(select_models(data, models))
    data, report.sessions = exclusions.apply_session_rule(data, sessions)
    report.notes.append(_session_note(report.sessions))
    nonresponse.check_policy(non_response, nonresponse.MAIN_POLICIES)
    raw, data = data, nonresponse.apply_policy(data, non_response)
    report.notes.append(_nonresponse_note(raw, data, non_response))
    report.fit_info["non_response"] = {"policy": non_response,
                                       "policies_in_sensitivity": list(nonresponse.POLICIES)}
    flow = _timed(report, "exclusion_flow", exclusions.trial_exclusion_flow, data)
    kept = loading.included(data)
    aot_kept = loading.aot_trials(kept)
    exploded = _timed(report, "explode", loading.explode_categories, aot_kept,
                      columns=EXPLODED_COLUMNS)
    t = report.tables
    t["exclusion_flow"] = flow
    gaps, category_gaps = [], []
    t["aot_overall"] = _timed(report, "overall", overall_table, aot_kept, n_boot, rng, gaps)
    if not exploded.empty:
        t["aot_by_category"] = _timed(report, "category", category_table, exploded, n_boot,
                                      rng, category_gaps)
    gaps = [g for g in gaps if not g.empty]
    if gaps:
        t["human_model_gap"] = pd.concat(gaps, ignore_index=True)
    report.notes.append(report_stats.uncertainty_note(n_boot))
    report.fit_info["uncertainty"] = report_stats.uncertainty_info(n_boot)
    t["aot_by_direction"] = aot.aot_metrics(aot_kept, by=["observer", "direction"])
    t["aot_by_subject"] = _timed(report, "by_subject", aot.aot_metrics, aot_kept,
                                 by=["subject_kind", "subject_id", "observer"])
    t["aot_by_session"] = aot.aot_metrics(aot_kept, by=["subject_kind", "subject_id",
                                                        "session_id"])
    humans = aot_kept[aot_kept["subject_kind"] == C.HUMAN]
    _add_human_tables(report, humans, exploded[exploded["subject_kind"] == C.HUMAN])
    _timed(report, "participant_sdt", report_stats.add_participant_sdt, report, humans, n_boot,
           rng)
    _add_comparison_tables(report, aot_kept, raw, n_boot, rng, non_response)
    if category_gaps:
        report_stats.attach_category_gap_cis(t, category_gaps[0])
    _add_ordering_tables(report, kept, raw, non_response)
    _add_diagnostic_tables(report, kept, tra_data)
    bench = benchmark_reference.benchmark_reference_table(aot_kept)  # published beside ours
    if not bench.empty:
        t["benchmark_reference"] = bench
    if aot_kept.empty:  # e.g. a frame-ordering study: no arrow-of-time tables at all
        for name in AOT_TABLES:
            t.pop(name, None)
    _label_models(report, data)
    report.metrics = _headline(report, data, kept)
    report.figures = _timed(report, "figures", _figures, report, humans)
    return report


def _session_note(info: dict) -> str:
    left = info["n_sessions_left_out"]
    statuses = ", ".join(f"{k}: {v}" for k, v in info["statuses_left_out"].items())
    return (f"Sessions analysed: {info['rule']} (--sessions {info['sessions']}) of "
            f"participants; model runs as stored. {left} session{'s' * (left != 1)} left "
            f"out" + (f" ({statuses}; {info['n_trials_left_out']} trials)" if left else "")
            + "; see the exclusion flow.")


def _model_labels(data: pd.DataFrame) -> dict:
    """Model id -> short label (:func:`analysis.observers.display_label`); ids whose
    labels collide keep the fewest trailing parts of their id that tell them apart."""
    from analysis.observers import display_label

    ids = sorted(map(str, data.loc[data["subject_kind"] == C.MODEL, "subject_id"].unique()))
    labels = {m: display_label(m) for m in ids}
    for label in {v for v in labels.values() if list(labels.values()).count(v) > 1}:
        clash = [m for m in ids if labels[m] == label]
        parts = {m: [p for p in m.replace("\\", "/").split("/") if p] or [m] for m in clash}
        for n in range(1, max(len(p) for p in parts.values()) + 1):
            tails = {m: "/".join(p[-n:]) for m, p in parts.items()}
            if len(set(tails.values())) == len(tails):
                break
        labels.update(tails)
    return labels


def _label_models(report: Report, data: pd.DataFrame) -> None:
    """Show models by short label in every table: an observer name starts with its model
    id (``"<id> / few-shot-4"``), which is replaced by the model's label."""
    labels = _model_labels(data)
    if not labels or all(k == v for k, v in labels.items()):
        return
    longest_first = sorted(labels, key=len, reverse=True)

    def label(value):
        if not isinstance(value, str):
            return value
        for model in longest_first:
            if value == model or value.startswith(model + " / "):
                return labels[model] + value[len(model):]
        return value

    for name, table in report.tables.items():
        for col in LABELLED_COLUMNS:
            if col in table.columns:
                values = table[col].astype(object)
                table = table.assign(**{col: values.map(
                    {v: label(v) for v in values.dropna().unique()}).where(values.notna())})
        report.tables[name] = table


def _add_human_tables(report: Report, humans: pd.DataFrame, exploded: pd.DataFrame) -> None:
    t = report.tables
    if humans.empty:
        return
    # Without category labels the medians are by direction x response only.
    t["rt_median"] = _timed(report, "rt_median", rt.median_rt, exploded) if len(exploded) \
        else rt.median_rt(humans, by=["direction", "response"])
    t["rt_answer_speed"] = rt.answer_speed(humans)
    methods = rt.onset_methods(humans)
    if len(methods) > 1:
        listed = ", ".join(f"{method}: {n}" for method, n in methods.items())
        report.notes.append(f"Clip onsets were timed by {len(methods)} methods ({listed} "
                            "answered trials): median RTs are given per onset method and the "
                            "log-RT mixed model has onset_method as a covariate.")
    # The log-RT LMM, the GEE and the crossed GLMM, each noted with what it was fitted on.
    report_stats.add_model_fits(report, humans, _fit)


def _nonresponse_note(raw: pd.DataFrame, data: pd.DataFrame, policy: str) -> str:
    changed = int((raw["excluded"].astype(bool) != data["excluded"].astype(bool)).sum())
    if policy == "error":
        detail = (f"{changed} trials the exclusion rules set aside only as a timeout are "
                  "counted back in as errors")
    else:
        detail = f"{changed} further non-responses are left out (reason non_response)"
    return (f"Non-responses (people's timeouts, models' unparseable answers) follow one "
            f"policy for both: '{policy}'; {detail}. nonresponse_sensitivity (and, for "
            "frame orders, ordering_nonresponse_sensitivity) gives the main figures with "
            "non-responses as errors, excluded, and as chance guesses.")


def _add_comparison_tables(report: Report, aot_kept: pd.DataFrame, raw: pd.DataFrame,
                           n_boot: int, rng, policy: str) -> None:
    """Tests against chance and between models, human-model agreement, logit accuracy and
    the non-response sensitivity; the family of tests is Holm-corrected together."""
    kinds = set(aot_kept["subject_kind"])
    if aot_kept.empty:
        return
    t = report.tables
    family = {"binomial_tests": comparisons.binomial_tests(aot_kept)}
    t["nonresponse_sensitivity"] = nonresponse.sensitivity_table(raw, policy)
    if C.MODEL in kinds:
        t["text_vs_logit_accuracy"] = nonresponse.text_and_logit_accuracy(aot_kept)
        report.notes.extend(f"{row.observer}: {row.note}." for row in
                            t["text_vs_logit_accuracy"].itertuples() if row.note)
        family["mcnemar_tests"] = comparisons.mcnemar_tests(aot_kept)
    if {C.HUMAN, C.MODEL} <= kinds:
        t["per_stimulus_agreement"] = human_vs_model.per_stimulus_agreement(aot_kept)
        t["error_consistency"] = _timed(report, "error_consistency",
                                        human_vs_model.error_consistency, aot_kept,
                                        n_boot=n_boot, rng=rng)
        family["item_correlation"] = comparisons.item_correlations(t["per_stimulus_agreement"])
        if "aot_by_category" in t:
            t["category_gap"] = human_vs_model.gap_from_category_table(t["aot_by_category"])
            t["difficulty_correlation"] = human_vs_model.difficulty_correlation(
                t["category_gap"])
    family = {k: v for k, v in family.items() if not v.empty}
    family, size = comparisons.holm_family(family)
    t.update(family)
    report.fit_info["holm"] = {"family_size": size, "tables": sorted(family)}
    report.notes.append(
        f"Holm correction across the family of {size} tests the report makes "
        f"({', '.join(sorted(family))}): p_holm beside each p_value. Binomial tests are "
        "two-sided against 50%; McNemar's test is exact below "
        f"{comparisons.EXACT_BELOW} discordant items, else chi-square with continuity "
        "correction; kappa intervals resample clips.")


def _add_ordering_tables(report: Report, kept: pd.DataFrame, raw: pd.DataFrame,
                         policy: str) -> None:
    rows = kept[kept["trial_type"] == C.FRAME_ORDER]
    if rows.empty:
        return
    t = report.tables
    scores = _timed(report, "ordering", ordering.ordering_trial_scores, rows)
    for name, by in (("ordering_by_condition", "condition"),
                     ("ordering_anchoring", "true_first_position"),
                     ("ordering_by_inversions", "n_inversions")):
        t[name] = ordering.ordering_metrics(rows, by=["observer", by], scores=scores,
                                            policy=policy)
    t["ordering_nonresponse_sensitivity"] = ordering.ordering_sensitivity(
        raw, by="observer", main_policy=policy)


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
    # Every N is the flow's: entered, and remaining = the trials the tables analyse.
    out = {"n_trials_entered": int(flow["n_trials_remaining"].iloc[0]),
           "n_trials_included": int(flow["n_trials_remaining"].iloc[-1]),
           "n_participants_entered": int(flow["n_participants_remaining"].iloc[0]),
           "n_participants_included": int(flow["n_participants_remaining"].iloc[-1]),
           "sessions": report.sessions,
           "models": sorted(set(_model_labels(data).values())),
           "observers": observers, "notes": report.notes}
    out.update(report.fit_info)
    if "error_consistency" in report.tables:
        out["error_consistency"] = report.tables["error_consistency"].to_dict("records")
    for name in METRICS_TABLES:
        if name in report.tables:
            out[name] = report.tables[name].to_dict("records")
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
        out["rt_breakdown"] = figures.rt_breakdown_figure(humans)
    if "sdt_by_participant" in t and not overall.empty:
        out["participants"] = figures.participant_figure(
            t["sdt_by_participant"], overall[overall["subset"] == "full"])
    if "per_stimulus_agreement" in t and not t["per_stimulus_agreement"].empty:
        out["item_scatter"] = figures.item_scatter(t["per_stimulus_agreement"])
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
    kept = with_observer(loading.aot_trials(nonresponse.included(data)))
    rng = np.random.default_rng(0) if rng is None else rng
    table = category_table(loading.explode_categories(kept), n_boot, rng)
    return figures.category_figure(table)


def bias_figure(data: pd.DataFrame):
    """Share of Forward answers per observer."""
    kept = with_observer(loading.aot_trials(nonresponse.included(data)))
    return figures.bias_figure(aot.aot_metrics(kept, by="observer"))


def exclusion_flow_figure(data: pd.DataFrame):
    """Participants and trials remaining after each exclusion step."""
    return figures.flow_figure(exclusions.trial_exclusion_flow(data))
