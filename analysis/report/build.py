"""The study report: every table and figure from one canonical trial table.

:func:`build_report` is a pure function of the DataFrame; it assembles the sections of
:mod:`analysis.report.sections` (the summary tables with CIs are
:mod:`analysis.report.summary`), labels models (:mod:`analysis.report.labels`), and adds
the headline metrics (:mod:`analysis.report.metrics`) and figures
(:mod:`analysis.report.figures`, drawn by :mod:`analysis.figures`, which the researcher
dashboard draws with too). Every table it builds is one of
:mod:`analysis.report.registry`'s. :func:`analysis.report.output.write_report` turns its
result into report.html, one CSV per table and metrics.json.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from analysis import benchmark_reference, exclusions, loading, nonresponse, observers
from analysis import columns as C
from analysis.report import length, pairs, stats, tra
from analysis.report import registry as R
from analysis.report.figures import report_figures
from analysis.report.labels import label_models
from analysis.report.metrics import headline
from analysis.report.sections import (
    add_aot_tables,
    add_comparison_tables,
    add_diagnostic_tables,
    add_human_tables,
    add_ordering_tables,
    fit,
    timed,
)

EXPLODED_COLUMNS = ["subject_id", "subject_kind", "observer", "source_clip_id", "stimulus_id",
                    "trial_type", "direction", "correct_response", "response", "correct",
                    "rt_ms", "onset_method"]
# From this many trials the sections that draw nothing from the report's generator run in a
# second process, beside those that do (bench/analysis.py: the 1M-trial report's two halves).
PARALLEL_FROM_TRIALS = 200_000
AOT_TABLES = (R.AOT_OVERALL, R.AOT_BY_CATEGORY, R.AOT_BY_DIRECTION, R.AOT_BY_SUBJECT,
              R.AOT_BY_SESSION)


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


def build_report(data: pd.DataFrame, models: Sequence[str] | None = None, n_boot: int = 1000,
                 rng: np.random.Generator | None = None,
                 tra_data: pd.DataFrame | None = None, sessions: str = "completed",
                 non_response: str = nonresponse.DEFAULT_POLICY,
                 sweep_levels: pd.DataFrame | None = None,
                 participants: pd.DataFrame | None = None,
                 parallel: bool | None = None) -> Report:
    """Every table, figure and headline metric of a study.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials (typed with :func:`analysis.loading.normalize_trials`).
    models : sequence of str, optional
        Model subject ids to include (default: all).
    n_boot : int
        Bootstrap resamples for the CIs (two-way for people, clips for models).
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
    participants : pandas.DataFrame, optional
        The study's sessions (participants.csv), so that the exclusion flow counts people
        who entered without a trial (:func:`analysis.exclusions.trial_exclusion_flow`).
    parallel : bool, optional
        Build the sections that draw nothing from ``rng`` (people's model fits, frame
        ordering, pair metrics, diagnostics, the sweeps) in a forked process while this one
        builds the rest; the result is the same either way. Default: from
        :data:`PARALLEL_FROM_TRIALS` trials, where more than one core is available.

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
    report.fit_info["non_response"] = {"policy": non_response,
                                       "policies_in_sensitivity": list(nonresponse.POLICIES)}
    t = report.tables
    t[R.EXCLUSION_FLOW] = timed(report, R.EXCLUSION_FLOW, exclusions.trial_exclusion_flow,
                                data, participants=participants)
    kept = loading.included(data)
    aot_kept = loading.aot_trials(kept)
    exploded = timed(report, "explode", loading.explode_categories, aot_kept,
                     columns=EXPLODED_COLUMNS)
    humans = aot_kept[aot_kept["subject_kind"] == C.HUMAN]

    def independent(part: Report) -> None:
        """Sections that draw no number from ``rng`` (seeded their own, or none)."""
        add_human_tables(part, humans, exploded[exploded["subject_kind"] == C.HUMAN])
        add_ordering_tables(part, kept, raw, non_response, n_boot=n_boot)
        timed(part, R.PAIR_METRICS, pairs.add_pair_tables, part, kept, n_boot=n_boot)
        add_diagnostic_tables(part, kept, tra_data)
        # People, VLMs and TRA over the sweeps; nothing at all without trials on sweep clips.
        if tra.has_sweep_trials(aot_kept, tra_data, sweep_levels):
            part.tables.update(fit(part, R.TRA_SWEEP_FITS, tra.sweep_tables, aot_kept,
                                   tra_data, sweep_levels, n_boot) or {})
        if length.has_length_trials(aot_kept, sweep_levels):  # clip-length cuts
            part.tables.update(fit(part, R.LENGTH_THRESHOLDS, length.length_tables, aot_kept,
                                   sweep_levels, n_boot) or {})

    if parallel is None:
        parallel = len(data) >= PARALLEL_FROM_TRIALS and _can_fork()
    other = _forked(independent) if parallel else None
    try:
        category_gaps = add_aot_tables(report, aot_kept, exploded, n_boot, rng)
        timed(report, "participant_sdt", stats.add_participant_sdt, report, humans, n_boot, rng)
        add_comparison_tables(report, aot_kept, raw, n_boot, rng, non_response)
    except BaseException:
        if other is not None:
            other.stop()  # nobody will read its pipe: it would wait there
        raise
    if category_gaps is not None:
        stats.attach_category_gap_cis(t, category_gaps)
    _merge(report, other.wait() if other else _run(independent))
    bench = benchmark_reference.benchmark_reference_table(aot_kept)  # published beside ours
    if not bench.empty:
        t[R.BENCHMARK_REFERENCE] = bench
    if aot_kept.empty:  # e.g. a frame-ordering study: no arrow-of-time tables at all
        for name in AOT_TABLES:
            t.pop(name, None)
    R.check_built(t)
    report.notes.append(_nonresponse_note(raw, data, non_response, t))
    label_models(t, data)
    report.metrics = headline(report, data)
    report.figures = timed(report, "figures", report_figures, t, humans)
    report.figures.update(tra.sweep_figures(t))
    report.figures.update(length.length_figures(t))
    return report


def _run(sections: Callable[[Report], None]) -> Report:
    part = Report()
    sections(part)
    return part


def _can_fork() -> bool:
    """More than one core for this process, and a platform that forks (macOS forks unsafely
    and Windows not at all: there the report is built in one process)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    return cores > 1 and "fork" in multiprocessing.get_all_start_methods() \
        and sys.platform.startswith("linux")


class _Forked:
    """A forked process building sections; :meth:`wait` returns their Report."""

    def __init__(self, process, receiver):
        self.process, self.receiver = process, receiver

    def wait(self) -> Report:
        try:
            done, part = self.receiver.recv()
        except EOFError:
            done, part = False, f"the process exited with code {self.process.exitcode}"
        self.process.join()
        if not done:
            raise RuntimeError(f"report sections failed in their worker process:\n{part}")
        return part

    def stop(self) -> None:
        self.process.terminate()
        self.process.join()


def _forked(sections: Callable[[Report], None]) -> _Forked:
    """Start ``sections`` on a fresh :class:`Report` in a forked process, which sees the
    parent's data without copying it.
    Forking is safe here: the report is built in a command-line process, never a server's."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)

    def child() -> None:
        try:
            sender.send((True, _run(sections)))
        except BaseException:  # noqa: BLE001 - sent to the parent, which raises it
            sender.send((False, traceback.format_exc()))

    process = context.Process(target=child, daemon=True)
    process.start()
    sender.close()
    return _Forked(process, receiver)


def _merge(report: Report, part: Report) -> None:
    report.tables.update(part.tables)
    report.notes.extend(part.notes)
    report.fit_info.update(part.fit_info)
    report.timings_s.update(part.timings_s)
    report.failures.update(part.failures)


def _session_note(info: dict) -> str:
    left = info["n_sessions_left_out"]
    statuses = ", ".join(f"{k}: {v}" for k, v in info["statuses_left_out"].items())
    return (f"Sessions analysed: {info['rule']} (--sessions {info['sessions']}) of "
            f"participants; model runs as stored. {left} session{'s' * (left != 1)} left "
            f"out" + (f" ({statuses}; {info['n_trials_left_out']} trials)" if left else "")
            + "; see the exclusion flow.")


def _nonresponse_note(raw: pd.DataFrame, data: pd.DataFrame, policy: str,
                      tables: dict) -> str:
    was, now = raw["excluded"].astype(bool), data["excluded"].astype(bool)
    back, out = int((was & ~now).sum()), int((~was & now).sum())
    detail = (f"{back} trials the exclusion rules set aside only for non-responses (a "
              "timeout, or a person's too_many_timeouts) are counted back in"
              + (" as errors" if policy == "error" else
                 f"; {out} non-responses are left out (reason non_response)"))
    sensitivity = [name for name in (R.NONRESPONSE_SENSITIVITY,
                                     R.ORDERING_NONRESPONSE_SENSITIVITY) if name in tables]
    shown = (f" {' and '.join(sensitivity)} give{'s' * (len(sensitivity) == 1)} the main "
             "figures, with the number of people and models analysed, with non-responses "
             "as errors, excluded, and as chance guesses." if sensitivity else "")
    return (f"Non-responses (people's timeouts, models' unparseable answers) follow one "
            f"policy for both: '{policy}'; {detail}. No one is dropped for non-responses "
            "alone, as no model is: a person excluded only as too_many_timeouts is "
            "analysed, their timeouts scored by the policy." + shown)
