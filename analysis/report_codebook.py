"""The report's codebook: what the columns of its tables mean, written beside the CSVs.

One entry per (tables, column); ``tables`` is the table names it applies to (``*`` for
every table with that column). :func:`analysis.report_output.write_report` writes it as
``codebook.csv`` and ``codebook.md``.
"""
from __future__ import annotations

import pandas as pd

from analysis.accuracy_model import GLMM_MAX_TRIALS

AOT = "aot_overall, aot_by_category, aot_by_direction, aot_by_subject, aot_by_session"
PAIRS = "pair_metrics, pair_metrics_by_category, pair_metrics_by_participant"
ONE_DIRECTION = ("Empty in a row whose clips all played one way (every aot_by_direction row; "
                 "a participant shown one direction only): it compares the two directions")
ENTRIES = [
    (AOT, "n_ff, n_fb, n_fn, n_bf, n_bb, n_bn", "Trials per stimulus direction (first letter) "
     "and answer (second: F, B, n = none, a timeout or unparseable answer)."),
    (AOT, "accuracy", "Share correct; unanswered trials count as errors."),
    (AOT, "f1_forward, f1_backward", "F1 of the Forward / Backward label (AoT-PsyPhyBENCH). "
     + ONE_DIRECTION + " (precision needs answers to the other direction)."),
    (AOT, "forward_share", "Share of F among answered trials (label bias)."),
    (AOT, "hit_rate, false_alarm_rate", "P(B | backward) and P(B | forward) on answered "
     "trials, log-linear corrected (Hautus 1995). Empty without answered clips of that "
     "direction."),
    (AOT, "d_prime, criterion", "Sensitivity d' = z(H) - z(FA) and criterion c = -(z(H) + "
     "z(FA))/2, backward as the signal (c > 0: forward bias); log-linear corrected. "
     + ONE_DIRECTION + "."),
    ("*", "<metric>_ci_low, <metric>_ci_high", "95% percentile bootstrap interval; see "
     "ci_method and n_boot."),
    ("*", "ci_method", "What the bootstrap resampled for this row: 'participant x clip "
     "(two-way)' (people, and people-model gaps), 'participant', or 'clip' (models, and "
     "one participant's pair metrics); 'not estimated: needs at least N participants' where "
     "people are too few for an interval (the row's intervals are empty)."),
    ("*", "n_boot", "Number of bootstrap resamples."),
    ("human_model_gap, category_gap", "gap_<metric>_points, gap_d_prime, gap_criterion",
     "People minus the model: proportions in percentage points, d' and c as they are; "
     "intervals from the same resamples for both (paired)."),
    ("sdt_by_participant", "extreme", "True when the participant's hit or false-alarm rate "
     "is 0 or 1 before correction."),
    ("sdt_by_participant", "d_prime_uncorrected, criterion_uncorrected", "Without the "
     "log-linear correction; empty where extreme (they would be infinite)."),
    ("sdt_participant_summary", "mean, sd", "Over participants."),
    ("sdt_participant_summary", "ci_low, ci_high, p_value", "Two-way (participant x clip) "
     "percentile bootstrap interval of the mean (widened for few participants or clips: "
     "t quantiles, Welch-Satterthwaite df), and the level at which it leaves out null "
     "(0.5 for accuracy, 0 otherwise); for criterion the test of the forward bias. Empty "
     "for the uncorrected metrics, which a resample can make infinite."),
    ("sdt_participant_summary", "pooled", "The same metric from everyone's counts pooled "
     "(the aot_overall row), which is not a mean over people."),
    ("binomial_tests", "ci_low, ci_high, p_value", "People: the two-way (participant x clip) "
     "percentile bootstrap of accuracy (widened as in sdt_participant_summary) and the "
     "level at which it leaves out 0.5; empty "
     "below the minimum of participants the note names. Models: the exact sign test over "
     "items with its Clopper-Pearson interval."),
    ("item_correlation", "r_ci_low, r_ci_high, p_value", "Percentile interval of Pearson's "
     "r over resampled clips, and a permutation test that moves a model's answers to a "
     "clip (both directions together) to another clip: a clip's directions are not "
     "independent items."),
    ("accuracy_model, accuracy_glmm", "coef, se, z, p, ci_low, ci_high, odds_ratio",
     "Log-odds of a correct answer (GEE: population-averaged, CR1 cluster-robust, t with "
     "participants - 1 df; GLMM: conditional on a typical participant and clip, Wald)."),
    ("accuracy_model, accuracy_glmm", "separated", "True when a design cell was answered all "
     "one way, so the term has no finite estimate; its values are left empty."),
    ("accuracy_glmm", "sd(participant), sd(clip)", "Random-intercept SDs (log-odds)."),
    ("accuracy_glmm", "fitted_on", "The trials the GLMM was fitted on: all of them, or, "
     f"above {GLMM_MAX_TRIALS:,} trials, a subsample (all trials of evenly spaced "
     "participants, named here), while the GEE uses every trial."),
    ("accuracy_model", "se", "Empty, with the reason in metrics.json's warnings, where no "
     "valid participant-clustered SE exists (a term only one participant's trials inform)."),
    ("rt_lmm", "var(subject), var(clip), var(residual)", "Variance components of log RT "
     "(REML)."),
    (PAIRS, "task", "aot: a clip forward and reversed; pair_order (the frame-ordering "
     "analogue): two frames of a clip shown in both orders, AB and BA. N-frame ordering "
     "has no pairs (each clip is seen once, in one order)."),
    (PAIRS, "n_subjects, n_pairs, n_clips, n_trials", "Pairs: one subject's answers to both copies of "
     "an item (a model's under one label order); the subjects, clips and trials they "
     "come from."),
    (PAIRS, "accuracy", "Share correct on the paired trials, the two copies weighted equally."),
    (PAIRS, "pair_accuracy", "Both copies right (MVP pair accuracy, TimeBlind instance "
     "accuracy); chance 0.25. With repeated trials of a copy, the mean over every forward x "
     "reversed combination (p1 p2)."),
    (PAIRS, "pair_consistency", "The two answers differ (both right, or both wrong: the "
     "direction seen consistently, backwards); chance 0.5. A bias to one answer lowers it."),
]


def codebook_table() -> pd.DataFrame:
    return pd.DataFrame(ENTRIES, columns=["tables", "columns", "description"])


def codebook_markdown() -> str:
    lines = ["# Report codebook", "", "| tables | columns | description |", "|---|---|---|"]
    lines += [f"| {t} | `{c}` | {d} |" for t, c, d in ENTRIES]
    return "\n".join(lines) + "\n"
