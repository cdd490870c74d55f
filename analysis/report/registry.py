"""The report's tables, declared once: the HTML, the CSVs, metrics.json, the codebook and the
study page all read this registry.

A :class:`Section` is one heading of report.html; a :class:`Table` names its section, the
analysis function that computes it (``builder``), the figures drawn from it, what its columns
mean (every column; the texts are in :mod:`analysis.report.columns_doc`, one dict per
table), whether metrics.json carries it, which figure of the live study page shows it,
and, when a study can lack it, why (``when``). A table is a ``str`` (its name), so the report's
``tables`` dict is keyed by these constants and the name is written here only.

Trial types name the sections that read their rows in ``METRICS``
(``experiments/trial_types``); a section no type names and that is not study-wide is not
part of the report, and :func:`check_built` refuses a built table the registry does not
hold or whose section is not in play.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.report import columns_doc as D
from analysis.report import columns_doc_diagnostics as DD
from experiments.trial_types import TRIAL_TYPES


@dataclass(frozen=True)
class Section:
    """One heading of report.html; ``study_wide``: shown whatever the trial types."""

    id: str
    title: str
    study_wide: bool = False


class Table(str):
    """A report table: its name (the CSV's stem) with what the registry says of it."""

    section: Section
    builder: str
    figures: tuple[str, ...]
    columns: dict[str, str]
    metrics_json: bool
    live: str
    when: str
    html: bool

    def __new__(cls, name: str, section: Section, builder: str, *, figures=(), columns=None,
                metrics_json: bool = False, live: str = "", when: str = "",
                html: bool = True) -> Table:
        table = super().__new__(cls, name)
        table.section, table.builder, table.figures = section, builder, tuple(figures)
        table.columns, table.metrics_json, table.live = dict(columns or {}), metrics_json, live
        table.when, table.html = when, html
        return table

    def __reduce__(self):  # pickled (to another process) as its name, read back from here
        return _registered, (str(self),)


EXCLUSIONS = Section("exclusions", "Exclusion flow", study_wide=True)
AOT = Section("aot", "Arrow of time: accuracy, F1 and bias")
PARTICIPANTS = Section("participants", "Per participant: signal detection and the forward bias")
CATEGORIES = Section("categories", "Per-category performance")
PAIRS = Section("pairs", "Pairs: a clip forward and reversed, both right (pair accuracy) and "
                "told apart (pair consistency)")
RT = Section("rt", "Reaction times")
ACCURACY_MODEL = Section("accuracy_model", "Accuracy models: GEE and crossed GLMM")
HUMAN_VS_MODEL = Section("human_vs_model", "People vs models")
TESTS = Section("tests", "Tests against chance and between models (Holm-corrected as one "
                "family)")
NON_RESPONSE = Section("non_response", "Non-responses: the main figures under each policy")
ORDERING = Section("ordering", "Frame ordering")
DIAGNOSTICS = Section("diagnostics", "Model diagnostics", study_wide=True)
TRA_SWEEP = Section("tra_sweep", "Arrow of time over the TRA sweeps: people, VLMs and "
                    "self-supervised models (TRA paper's peaks published, not measured)")
LENGTH = Section("aot_length", "Arrow of time by clip length: how many frames "
                 "people and models need")
SUBJECTS = Section("subjects", "Per participant and session")
BENCHMARK = Section("benchmark", "AoT-PsyPhyBENCH: our runs beside the paper (published, not "
                    "measured)")
# report.html's order
SECTIONS = (EXCLUSIONS, AOT, PARTICIPANTS, CATEGORIES, PAIRS, RT, ACCURACY_MODEL,
            HUMAN_VS_MODEL, TESTS, NON_RESPONSE, ORDERING, DIAGNOSTICS, TRA_SWEEP, LENGTH,
            SUBJECTS,
            BENCHMARK)

# Why a table can be missing (``when``); each names what the study must hold.
ARROW = "arrow-of-time trials"
PEOPLE = "people's arrow-of-time trials"
FEW = (f"{PEOPLE} of at least analysis.bootstrap.MIN_PARTICIPANTS participants (else its "
       "section says why)")
MODELS = "model runs on arrow-of-time trials"
BOTH = "people's and models' arrow-of-time trials"
ORDERS = "frame-ordering trials"
TRA_FILE = "a --tra file of per-clip TRA values"
SWEEP = "arrow-of-time trials on TRA sweep clips"
CUTS = "arrow-of-time trials on clip-length cuts (a length set, aot-length-adaptive)"

EXCLUSION_FLOW = Table("exclusion_flow", EXCLUSIONS, "analysis.exclusions.trial_exclusion_flow",
                       figures=("exclusion_flow",), live="flow", columns=D.EXCLUSION_FLOW)
AOT_OVERALL = Table("aot_overall", AOT, "analysis.report.summary.overall_table",
                    figures=("bias", "sdt"), when=ARROW, columns=D.AOT_OVERALL)
AOT_BY_DIRECTION = Table("aot_by_direction", AOT, "analysis.aot.aot_metrics",
                         figures=("direction_accuracy",), when=ARROW,
                         columns=D.AOT_BY_DIRECTION)
SDT_PARTICIPANT_SUMMARY = Table(
    "sdt_participant_summary", PARTICIPANTS, "analysis.participant_sdt.participant_summary",
    when=FEW, columns=D.SDT_PARTICIPANT_SUMMARY)
SDT_BY_PARTICIPANT = Table(
    "sdt_by_participant", PARTICIPANTS, "analysis.participant_sdt.participant_sdt",
    figures=("participants",), live="participants", when=PEOPLE, columns=D.SDT_BY_PARTICIPANT)
AOT_BY_CATEGORY = Table("aot_by_category", CATEGORIES, "analysis.report.summary.category_table",
                        figures=("categories",), live="category_accuracy",
                        when="arrow-of-time trials on clips with motion categories",
                        columns=D.AOT_BY_CATEGORY)
PAIR_METRICS = Table("pair_metrics", PAIRS, "analysis.pairs.pair_metrics", metrics_json=True,
                     when="a subject's answers to both copies of an item",
                     columns=D.PAIR_METRICS)
PAIR_METRICS_BY_CATEGORY = Table(
    "pair_metrics_by_category", PAIRS, "analysis.pairs.pair_metrics",
    when="pairs on clips with motion categories", columns=D.PAIR_METRICS_BY_CATEGORY)
PAIR_METRICS_BY_PARTICIPANT = Table(
    "pair_metrics_by_participant", PAIRS, "analysis.pairs.pair_metrics", when="people's pairs",
    columns=D.PAIR_METRICS_BY_PARTICIPANT)
RT_MEDIAN = Table("rt_median", RT, "analysis.rt.median_rt", figures=("rt", "rt_breakdown"),
                  live="rt", when=PEOPLE, columns=D.RT_MEDIAN)
RT_ANSWER_SPEED = Table("rt_answer_speed", RT, "analysis.rt.answer_speed", when=FEW,
                        columns=D.RT_ANSWER_SPEED)
RT_LMM = Table("rt_lmm", RT, "analysis.rt.rt_mixed_model", when=FEW, columns=D.RT_LMM)
ACCURACY_GEE = Table("accuracy_model", ACCURACY_MODEL,
                     "analysis.accuracy_model.accuracy_model", when=FEW,
                     columns=D.ACCURACY_GEE)
ACCURACY_GLMM = Table("accuracy_glmm", ACCURACY_MODEL,
                      "analysis.accuracy_model.crossed_accuracy_model", when=FEW,
                      columns=D.ACCURACY_GLMM)
HUMAN_MODEL_GAP = Table("human_model_gap", HUMAN_VS_MODEL, "analysis.report.stats.gap_table",
                        when=BOTH, columns=D.HUMAN_MODEL_GAP)
CATEGORY_GAP = Table("category_gap", HUMAN_VS_MODEL,
                     "analysis.human_vs_model.gap_from_category_table",
                     when=BOTH + " on clips with motion categories", columns=D.CATEGORY_GAP)
ERROR_CONSISTENCY = Table("error_consistency", HUMAN_VS_MODEL,
                          "analysis.human_vs_model.error_consistency", metrics_json=True,
                          when=BOTH, columns=D.ERROR_CONSISTENCY)
ITEM_CORRELATION = Table("item_correlation", HUMAN_VS_MODEL,
                         "analysis.comparisons.item_correlations", metrics_json=True,
                         when=BOTH, columns=D.ITEM_CORRELATION)
DIFFICULTY_CORRELATION = Table("difficulty_correlation", HUMAN_VS_MODEL,
                               "analysis.human_vs_model.difficulty_correlation",
                               when=BOTH + " on clips with motion categories",
                               columns=D.DIFFICULTY_CORRELATION)
TEXT_VS_LOGIT_ACCURACY = Table("text_vs_logit_accuracy", HUMAN_VS_MODEL,
                               "analysis.nonresponse.text_and_logit_accuracy",
                               metrics_json=True, when=MODELS,
                               columns=D.TEXT_VS_LOGIT_ACCURACY)
PER_STIMULUS_AGREEMENT = Table("per_stimulus_agreement", HUMAN_VS_MODEL,
                               "analysis.human_vs_model.per_stimulus_agreement",
                               figures=("item_scatter",), live="clip_accuracy", when=BOTH,
                               columns=D.PER_STIMULUS_AGREEMENT)
BINOMIAL_TESTS = Table("binomial_tests", TESTS, "analysis.comparisons.binomial_tests",
                       metrics_json=True, when=ARROW, columns=D.BINOMIAL_TESTS)
MCNEMAR_TESTS = Table("mcnemar_tests", TESTS, "analysis.comparisons.mcnemar_tests",
                      metrics_json=True, when="two or more models' arrow-of-time runs",
                      columns=D.MCNEMAR_TESTS)
NONRESPONSE_SENSITIVITY = Table("nonresponse_sensitivity", NON_RESPONSE,
                                "analysis.nonresponse.sensitivity_table", metrics_json=True,
                                when=ARROW, columns=D.NONRESPONSE_SENSITIVITY)
ORDERING_NONRESPONSE_SENSITIVITY = Table("ordering_nonresponse_sensitivity", NON_RESPONSE,
                                         "analysis.ordering.ordering_sensitivity",
                                         metrics_json=True, when=ORDERS,
                                         columns=D.ORDERING_NONRESPONSE_SENSITIVITY)
ORDERING_BY_FACTOR = Table("ordering_by_factor", ORDERING,
                           "analysis.ordering_factors.ordering_by_factor",
                           figures=("ordering_factors",),
                           when="frame-ordering trials in more than one condition",
                           columns=D.ORDERING_BY_FACTOR)
ORDERING_BY_CONDITION = Table("ordering_by_condition", ORDERING,
                              "analysis.ordering.ordering_metrics",
                              figures=("ordering_condition",), when=ORDERS,
                              columns=D.ORDERING_BY_CONDITION)
ORDERING_ANCHORING = Table("ordering_anchoring", ORDERING, "analysis.ordering.ordering_metrics",
                           figures=("ordering_anchoring",), when=ORDERS,
                           columns=D.ORDERING_ANCHORING)
ORDERING_BY_INVERSIONS = Table("ordering_by_inversions", ORDERING,
                               "analysis.ordering.ordering_metrics",
                               figures=("ordering_inversions",), when=ORDERS,
                               columns=D.ORDERING_BY_INVERSIONS)
TOMATO = Table("tomato", DIAGNOSTICS, "analysis.diagnostics.tomato_ratios",
               when="model runs under TOMATO frame conditions", columns=DD.TOMATO)
SWAP_CONSISTENCY = Table("swap_consistency", DIAGNOSTICS, "analysis.diagnostics.swap_consistency",
                         when="model runs on ordered image pairs (pair_order)",
                         columns=DD.SWAP_CONSISTENCY)
CALIBRATION = Table("calibration", DIAGNOSTICS, "analysis.diagnostics.calibration",
                    when="model answers with log-probabilities", columns=DD.CALIBRATION)
CALIBRATION_BINS = Table("calibration_bins", DIAGNOSTICS, "analysis.diagnostics.calibration",
                         when="model answers with log-probabilities",
                         columns=DD.CALIBRATION_BINS)
MODEL_LEDGER = Table("model_ledger", DIAGNOSTICS, "analysis.diagnostics.ledger_table",
                     when="model runs that stored their tokens (run-models since its ledger)",
                     metrics_json=True, columns=DD.MODEL_LEDGER)
TRA_PROCESS = Table("tra_process", DIAGNOSTICS, "analysis.tra.tra_process_table",
                    when=TRA_FILE, columns=DD.TRA_PROCESS)
TRA_SCENARIO = Table("tra_scenario", DIAGNOSTICS, "analysis.tra.tra_scenario_table",
                     when=TRA_FILE, columns=DD.TRA_SCENARIO)
TRA_PARAMETER = Table("tra_parameter", DIAGNOSTICS, "analysis.tra.tra_parameter_table",
                      when=TRA_FILE + " with sweep parameters", columns=DD.TRA_PARAMETER)
TRA_SWEEP_FITS = Table("tra_sweep_fits", TRA_SWEEP, "analysis.report.tra.sweep_tables",
                       when=SWEEP, columns=DD.TRA_SWEEP_FITS)
TRA_SWEEP_LEVEL_MEANS = Table("tra_sweep_level_means", TRA_SWEEP,
                              "analysis.report.tra.sweep_tables", when=SWEEP,
                              columns=DD.TRA_SWEEP_LEVEL_MEANS)
TRA_SWEEP_PARTICIPANTS = Table("tra_sweep_participants", TRA_SWEEP,
                               "analysis.report.tra.sweep_tables",
                               when="people's arrow-of-time trials on TRA sweep clips",
                               columns=DD.TRA_SWEEP_PARTICIPANTS)
# What the sweep figures draw: in the CSVs, its figures in the HTML, not a table there.
TRA_SWEEP_CURVES = Table("tra_sweep_curves", TRA_SWEEP, "analysis.report.tra.sweep_tables",
                         figures=("tra_sweep_bouncing_ball", "tra_sweep_pendulum"),
                         html=False, when=SWEEP, columns=DD.TRA_SWEEP_CURVES)
TRA_ADAPTIVE_SEQUENCE = Table("tra_adaptive_sequence", TRA_SWEEP,
                              "analysis.report.tra.sweep_tables",
                              figures=("tra_adaptive_sequences",), html=False,
                              when="adaptive (QUEST+) sessions, such as tra-adaptive's",
                              columns=DD.TRA_ADAPTIVE_SEQUENCE)
LENGTH_THRESHOLDS = Table("length_thresholds", LENGTH, "analysis.report.length.length_tables",
                          when=CUTS, columns=DD.LENGTH_THRESHOLDS)
LENGTH_LEVEL_MEANS = Table("length_level_means", LENGTH, "analysis.report.length.length_tables",
                           when=CUTS, columns=DD.LENGTH_LEVEL_MEANS)
# What the length figure draws: in the CSVs, its figure in the HTML.
LENGTH_CURVES = Table("length_curves", LENGTH, "analysis.report.length.length_tables",
                      figures=("length_curves",), html=False, when=CUTS,
                      columns=DD.LENGTH_CURVES)
LENGTH_SEQUENCE = Table("length_sequence", LENGTH, "analysis.report.length.length_tables",
                        figures=("length_sequences",), html=False,
                        when="adaptive sessions on clip-length cuts (aot-length-adaptive)",
                        columns=DD.LENGTH_SEQUENCE)
AOT_BY_SUBJECT = Table("aot_by_subject", SUBJECTS, "analysis.aot.aot_metrics", when=ARROW,
                       columns=D.AOT_BY_SUBJECT)
AOT_BY_SESSION = Table("aot_by_session", SUBJECTS, "analysis.aot.aot_metrics", when=ARROW,
                       columns=D.AOT_BY_SESSION)
AOT_BY_SESSION_NUMBER = Table(
    "aot_by_session_number", SUBJECTS, "analysis.aot.aot_metrics",
    when=f"{ARROW} with their session_number (an export made before it was kept has none)",
    columns=D.AOT_BY_SESSION_NUMBER)
BENCHMARK_REFERENCE = Table("benchmark_reference", BENCHMARK,
                            "analysis.benchmark_reference.benchmark_reference_table",
                            when="model runs on AoT-PsyPhyBENCH items",
                            columns=DD.BENCHMARK_REFERENCE)

# Every table, in report.html's order within each section.
TABLES: tuple[Table, ...] = tuple(v for v in dict(globals()).values() if isinstance(v, Table))
BY_NAME = {str(t): t for t in TABLES}


def _registered(name: str) -> Table:
    return BY_NAME[name]


def sections() -> tuple[Section, ...]:
    """The report's sections, in :data:`SECTIONS` order: the study-wide ones and those a
    registered trial type names in its ``METRICS``."""
    named = {section for module in TRIAL_TYPES.values() for section in module.METRICS}
    return tuple(s for s in SECTIONS if s.study_wide or s.id in named)


def check_built(tables) -> None:
    """Raise ``ValueError`` for a built table that the registry does not hold, or whose
    section no trial type names: it would be written nowhere, or shown nowhere."""
    in_play = sections()
    for name in tables:
        if name not in BY_NAME:
            raise ValueError(f"report table {name!r} is not in analysis/report/registry.py")
        if BY_NAME[name].section not in in_play:
            raise ValueError(f"report table {name!r}: its section "
                             f"{BY_NAME[name].section.id!r} is named by no trial type's "
                             "METRICS")
