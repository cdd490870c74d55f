"""The report's tables, declared once: the HTML, the CSVs, metrics.json, the codebook and the
study page all read this registry.

A :class:`Section` is one heading of report.html; a :class:`Table` names its section, the
analysis function that computes it (``builder``), the figures drawn from it, what its columns
mean, whether metrics.json carries it, which figure of the live study page shows it, and,
when a study can lack it, why (``when``). A table is a ``str`` (its name), so the report's
``tables`` dict is keyed by these constants and the name is written here only.

Trial types name the sections that read their rows in ``METRICS``
(``experiments/trial_types``); a section no type names and that is not study-wide is not
part of the report, and :func:`check_built` refuses a built table the registry does not
hold or whose section is not in play.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.accuracy_model import GLMM_MAX_TRIALS
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
SUBJECTS = Section("subjects", "Per participant and session")
BENCHMARK = Section("benchmark", "AoT-PsyPhyBENCH: our runs beside the paper (published, not "
                    "measured)")
# report.html's order
SECTIONS = (EXCLUSIONS, AOT, PARTICIPANTS, CATEGORIES, PAIRS, RT, ACCURACY_MODEL,
            HUMAN_VS_MODEL, TESTS, NON_RESPONSE, ORDERING, DIAGNOSTICS, TRA_SWEEP, SUBJECTS,
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

ONE_DIRECTION = ("Empty in a row whose clips all played one way (every aot_by_direction row; "
                 "a participant shown one direction only): it compares the two directions")
AOT_COLUMNS = {
    "n_ff, n_fb, n_fn, n_bf, n_bb, n_bn": "Trials per stimulus direction (first letter) and "
    "answer (second: F, B, n = none, a timeout or unparseable answer).",
    "accuracy": "Share correct; unanswered trials count as errors.",
    "f1_forward, f1_backward": "F1 of the Forward / Backward label (AoT-PsyPhyBENCH). "
    + ONE_DIRECTION + " (precision needs answers to the other direction).",
    "forward_share": "Share of F among answered trials (label bias).",
    "hit_rate, false_alarm_rate": "P(B | backward) and P(B | forward) on answered trials, "
    "log-linear corrected (Hautus 1995). Empty without answered clips of that direction.",
    "d_prime, criterion": "Sensitivity d' = z(H) - z(FA) and criterion c = -(z(H) + z(FA))/2, "
    "backward as the signal (c > 0: forward bias); log-linear corrected. " + ONE_DIRECTION
    + ".",
}
GAP_COLUMNS = {
    "gap_<metric>_points, gap_d_prime, gap_criterion": "People minus the model: proportions "
    "in percentage points, d' and c as they are; intervals from the same resamples for both "
    "(paired).",
}
FIT_COLUMNS = {
    "coef, se, z, p, ci_low, ci_high, odds_ratio": "Log-odds of a correct answer (GEE: "
    "population-averaged, CR1 cluster-robust, t with participants - 1 df; GLMM: conditional "
    "on a typical participant and clip, Wald).",
    "separated": "True when a design cell was answered all one way, so the term has no "
    "finite estimate; its values are left empty.",
}
PAIR_COLUMNS = {
    "task": "aot: a clip forward and reversed; pair_order (the frame-ordering analogue): two "
    "frames of a clip shown in both orders, AB and BA. N-frame ordering has no pairs (each "
    "clip is seen once, in one order).",
    "n_subjects, n_pairs, n_clips, n_trials": "Pairs: one subject's answers to both copies of "
    "an item (a model's under one label order); the subjects, clips and trials they come "
    "from.",
    "accuracy": "Share correct on the paired trials, the two copies weighted equally.",
    "pair_accuracy": "Both copies right (MVP pair accuracy, TimeBlind instance accuracy); "
    "chance 0.25. With repeated trials of a copy, the mean over every forward x reversed "
    "combination (p1 p2).",
    "pair_consistency": "The two answers differ (both right, or both wrong: the direction "
    "seen consistently, backwards); chance 0.5. A bias to one answer lowers it.",
}
# Columns that mean the same in every table that has them.
COMMON_COLUMNS = {
    "<metric>_ci_low, <metric>_ci_high": "95% percentile bootstrap interval; see ci_method "
    "and n_boot.",
    "ci_method": "What the bootstrap resampled for this row: 'participant x clip (two-way)' "
    "(people, and people-model gaps), 'participant', or 'clip' (models, and one participant's "
    "pair metrics); 'not estimated: needs at least N participants' where people are too few "
    "for an interval (the row's intervals are empty).",
    "n_boot": "Number of bootstrap resamples.",
}

EXCLUSION_FLOW = Table("exclusion_flow", EXCLUSIONS, "analysis.exclusions.trial_exclusion_flow",
                       figures=("exclusion_flow",), live="flow")
AOT_OVERALL = Table("aot_overall", AOT, "analysis.report.summary.overall_table",
                    figures=("bias", "sdt"), columns=AOT_COLUMNS, when=ARROW)
AOT_BY_DIRECTION = Table("aot_by_direction", AOT, "analysis.aot.aot_metrics",
                         figures=("direction_accuracy",), columns=AOT_COLUMNS, when=ARROW)
SDT_PARTICIPANT_SUMMARY = Table(
    "sdt_participant_summary", PARTICIPANTS, "analysis.participant_sdt.participant_summary",
    when=FEW, columns={
        "mean, sd": "Over participants.",
        "ci_low, ci_high, p_value": "Two-way (participant x clip) percentile bootstrap "
        "interval of the mean (widened for few participants or clips: t quantiles, "
        "Welch-Satterthwaite df), and the level at which it leaves out null (0.5 for "
        "accuracy, 0 otherwise); for criterion the test of the forward bias. Empty for the "
        "uncorrected metrics, which a resample can make infinite.",
        "pooled": "The same metric from everyone's counts pooled (the aot_overall row), "
        "which is not a mean over people."})
SDT_BY_PARTICIPANT = Table(
    "sdt_by_participant", PARTICIPANTS, "analysis.participant_sdt.participant_sdt",
    figures=("participants",), live="participants", when=PEOPLE, columns={
        "extreme": "True when the participant's hit or false-alarm rate is 0 or 1 before "
        "correction.",
        "d_prime_uncorrected, criterion_uncorrected": "Without the log-linear correction; "
        "empty where extreme (they would be infinite)."})
AOT_BY_CATEGORY = Table("aot_by_category", CATEGORIES, "analysis.report.summary.category_table",
                        figures=("categories",), columns=AOT_COLUMNS, live="category_accuracy",
                        when="arrow-of-time trials on clips with motion categories")
PAIR_METRICS = Table("pair_metrics", PAIRS, "analysis.pairs.pair_metrics", columns=PAIR_COLUMNS,
                     metrics_json=True, when="a subject's answers to both copies of an item")
PAIR_METRICS_BY_CATEGORY = Table(
    "pair_metrics_by_category", PAIRS, "analysis.pairs.pair_metrics", columns=PAIR_COLUMNS,
    when="pairs on clips with motion categories")
PAIR_METRICS_BY_PARTICIPANT = Table(
    "pair_metrics_by_participant", PAIRS, "analysis.pairs.pair_metrics", columns=PAIR_COLUMNS,
    when="people's pairs")
RT_MEDIAN = Table("rt_median", RT, "analysis.rt.median_rt", figures=("rt", "rt_breakdown"),
                  live="rt", when=PEOPLE)
RT_ANSWER_SPEED = Table("rt_answer_speed", RT, "analysis.rt.answer_speed", when=FEW)
RT_LMM = Table("rt_lmm", RT, "analysis.rt.rt_mixed_model", when=FEW, columns={
    "var(subject), var(clip), var(residual)": "Variance components of log RT (REML)."})
ACCURACY_GEE = Table(
    "accuracy_model", ACCURACY_MODEL, "analysis.accuracy_model.accuracy_model", when=FEW,
    columns={**FIT_COLUMNS,
             "se": "Empty, with the reason in metrics.json's warnings, where no valid "
             "participant-clustered SE exists (a term only one participant's trials "
             "inform)."})
ACCURACY_GLMM = Table(
    "accuracy_glmm", ACCURACY_MODEL, "analysis.accuracy_model.crossed_accuracy_model",
    when=FEW, columns={
        **FIT_COLUMNS,
        "sd(participant), sd(clip)": "Random-intercept SDs (log-odds).",
        "fitted_on": "The trials the GLMM was fitted on: all of them, or, above "
        f"{GLMM_MAX_TRIALS:,} trials, a subsample (all trials of evenly spaced participants, "
        "named here), while the GEE uses every trial."})
HUMAN_MODEL_GAP = Table("human_model_gap", HUMAN_VS_MODEL, "analysis.report.stats.gap_table",
                        columns=GAP_COLUMNS, when=BOTH)
CATEGORY_GAP = Table("category_gap", HUMAN_VS_MODEL,
                     "analysis.human_vs_model.gap_from_category_table", columns={
                         "gap_<metric>_points": "People minus the model in percentage points "
                         "(accuracy, F1 of each label); intervals from the same resamples for "
                         "both (paired)."},
                     when=BOTH + " on clips with motion categories")
ERROR_CONSISTENCY = Table("error_consistency", HUMAN_VS_MODEL,
                          "analysis.human_vs_model.error_consistency", metrics_json=True,
                          when=BOTH)
ITEM_CORRELATION = Table(
    "item_correlation", HUMAN_VS_MODEL, "analysis.comparisons.item_correlations",
    metrics_json=True, when=BOTH, columns={
        "r_ci_low, r_ci_high, p_value": "Percentile interval of Pearson's r over resampled "
        "clips, and a permutation test that moves a model's answers to a clip (both "
        "directions together) to another clip: a clip's directions are not independent "
        "items."})
DIFFICULTY_CORRELATION = Table("difficulty_correlation", HUMAN_VS_MODEL,
                               "analysis.human_vs_model.difficulty_correlation",
                               when=BOTH + " on clips with motion categories")
TEXT_VS_LOGIT_ACCURACY = Table("text_vs_logit_accuracy", HUMAN_VS_MODEL,
                               "analysis.nonresponse.text_and_logit_accuracy",
                               metrics_json=True, when=MODELS)
PER_STIMULUS_AGREEMENT = Table("per_stimulus_agreement", HUMAN_VS_MODEL,
                               "analysis.human_vs_model.per_stimulus_agreement",
                               figures=("item_scatter",), when=BOTH)
BINOMIAL_TESTS = Table(
    "binomial_tests", TESTS, "analysis.comparisons.binomial_tests", metrics_json=True,
    when=ARROW, columns={
        "ci_low, ci_high, p_value": "People: the two-way (participant x clip) percentile "
        "bootstrap of accuracy (widened as in sdt_participant_summary) and the level at "
        "which it leaves out 0.5; empty below the minimum of participants the note names. "
        "Models: the exact sign test over items with its Clopper-Pearson interval."})
MCNEMAR_TESTS = Table("mcnemar_tests", TESTS, "analysis.comparisons.mcnemar_tests",
                      metrics_json=True, when="two or more models' arrow-of-time runs")
NONRESPONSE_SENSITIVITY = Table("nonresponse_sensitivity", NON_RESPONSE,
                                "analysis.nonresponse.sensitivity_table", metrics_json=True,
                                when=ARROW)
ORDERING_NONRESPONSE_SENSITIVITY = Table("ordering_nonresponse_sensitivity", NON_RESPONSE,
                                         "analysis.ordering.ordering_sensitivity",
                                         metrics_json=True, when=ORDERS)
ORDERING_BY_FACTOR = Table("ordering_by_factor", ORDERING,
                           "analysis.ordering_factors.ordering_by_factor",
                           figures=("ordering_factors",),
                           when="frame-ordering trials in more than one condition")
ORDERING_BY_CONDITION = Table("ordering_by_condition", ORDERING,
                              "analysis.ordering.ordering_metrics",
                              figures=("ordering_condition",), when=ORDERS)
ORDERING_ANCHORING = Table("ordering_anchoring", ORDERING, "analysis.ordering.ordering_metrics",
                           figures=("ordering_anchoring",), when=ORDERS)
ORDERING_BY_INVERSIONS = Table("ordering_by_inversions", ORDERING,
                               "analysis.ordering.ordering_metrics",
                               figures=("ordering_inversions",), when=ORDERS)
TOMATO = Table("tomato", DIAGNOSTICS, "analysis.diagnostics.tomato_ratios",
               when="model runs under TOMATO frame conditions")
SWAP_CONSISTENCY = Table("swap_consistency", DIAGNOSTICS, "analysis.diagnostics.swap_consistency",
                         when="model runs on ordered image pairs (pair_order)")
CALIBRATION = Table("calibration", DIAGNOSTICS, "analysis.diagnostics.calibration",
                    when="model answers with log-probabilities")
CALIBRATION_BINS = Table("calibration_bins", DIAGNOSTICS, "analysis.diagnostics.calibration",
                         when="model answers with log-probabilities")
TRA_PROCESS = Table("tra_process", DIAGNOSTICS, "analysis.tra.tra_process_table", when=TRA_FILE)
TRA_SCENARIO = Table("tra_scenario", DIAGNOSTICS, "analysis.tra.tra_scenario_table",
                     when=TRA_FILE)
TRA_PARAMETER = Table("tra_parameter", DIAGNOSTICS, "analysis.tra.tra_parameter_table",
                      when=TRA_FILE + " with sweep parameters")
TRA_SWEEP_FITS = Table("tra_sweep_fits", TRA_SWEEP, "analysis.report.tra.sweep_tables",
                       when=SWEEP)
TRA_SWEEP_LEVEL_MEANS = Table("tra_sweep_level_means", TRA_SWEEP,
                              "analysis.report.tra.sweep_tables", when=SWEEP)
TRA_SWEEP_PARTICIPANTS = Table("tra_sweep_participants", TRA_SWEEP,
                               "analysis.report.tra.sweep_tables",
                               when="people's arrow-of-time trials on TRA sweep clips")
# What the sweep figures draw: in the CSVs, its figures in the HTML, not a table there.
TRA_SWEEP_CURVES = Table("tra_sweep_curves", TRA_SWEEP, "analysis.report.tra.sweep_tables",
                         figures=("tra_sweep_bouncing_ball", "tra_sweep_pendulum"),
                         html=False, when=SWEEP)
AOT_BY_SUBJECT = Table("aot_by_subject", SUBJECTS, "analysis.aot.aot_metrics",
                       columns=AOT_COLUMNS, when=ARROW)
AOT_BY_SESSION = Table("aot_by_session", SUBJECTS, "analysis.aot.aot_metrics",
                       columns=AOT_COLUMNS, when=ARROW)
BENCHMARK_REFERENCE = Table("benchmark_reference", BENCHMARK,
                            "analysis.benchmark_reference.benchmark_reference_table",
                            when="model runs on AoT-PsyPhyBENCH items")

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
