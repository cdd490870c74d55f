"""What every column of every report table means, for a researcher reading the CSVs.

One dict per table, named as its constant in :mod:`analysis.report.registry` (which passes
it as the table's ``columns``), plus column groups several tables share; the diagnostics,
TRA-sweep and benchmark tables are in :mod:`analysis.report.columns_doc_diagnostics`. A key names one
column or several, comma-separated; ``<metric>`` stands for another column of the same
table (``accuracy_ci_low`` is the interval of ``accuracy``). Columns that mean the same in
every table that has them are in :data:`COMMON_COLUMNS`.
``tests/analysis/test_report_registry.py`` checks both ways: every built column is
documented, every documented column is built.
"""
from __future__ import annotations

from analysis.accuracy_model import GLMM_MAX_TRIALS

# Columns that mean the same in every table that has them.
COMMON_COLUMNS = {
    "<metric>_ci_low, <metric>_ci_high": "95% percentile bootstrap interval; see ci_method "
    "and n_boot.",
    "ci_method": "What the bootstrap resampled for this row: 'participant x clip (two-way)' "
    "(people, and people-model gaps), 'participant', or 'clip' (models, and one participant's "
    "pair metrics); 'not estimated: needs at least N participants' where people are too few "
    "for an interval (the row's intervals are empty).",
    "n_boot": "Number of bootstrap resamples.",
    "observer": "Who answered: 'human' (all people pooled) or a model run (model id, plus "
    "the revision, prompt setting, label order, thinking switch or frame condition where "
    "the model ran under more than one, e.g. 'm / few-shot-4', 'm / thinking on').",
    "subject_id": "One participant's id (or a model's id).",
    "subject_kind": "'human' or 'model'.",
    "category": "A clip's motion category (Hanyu et al. 2023); a clip with several counts in "
    "each.",
}

ONE_DIRECTION = ("Empty in a row whose clips all played one way (every aot_by_direction row; "
                 "a participant shown one direction only): it compares the two directions")
AOT_COUNTS = {
    "n_ff, n_fb, n_fn, n_bf, n_bb, n_bn": "Trials per stimulus direction (first letter) and "
    "answer (second: F, B, n = none, a timeout or unparseable answer).",
    "n_trials, n_answered": "Trials counted (non-responses as the report's policy says), and "
    "those with an F or B answer.",
    "accuracy": "Share correct; unanswered trials count as errors.",
    "hit_rate, false_alarm_rate": "P(B | backward) and P(B | forward) on answered trials, "
    "log-linear corrected (Hautus 1995). Empty without answered clips of that direction.",
    "d_prime, criterion": "Sensitivity d' = z(H) - z(FA) and criterion c = -(z(H) + z(FA))/2, "
    "backward as the signal (c > 0: forward bias); log-linear corrected. " + ONE_DIRECTION
    + ".",
}
AOT_COLUMNS = {
    **AOT_COUNTS,
    "f1_forward, f1_backward": "F1 of the Forward / Backward label (AoT-PsyPhyBENCH). "
    + ONE_DIRECTION + " (precision needs answers to the other direction).",
    "forward_share": "Share of F among answered trials (label bias).",
}
GAPS = "gap_accuracy_points, gap_f1_forward_points, gap_f1_backward_points"
FIT_COLUMNS = {
    "term": "'<category>': log-odds of a correct answer on a forward clip of that category; "
    "'<category>:backward': the change when the clip is reversed (one term per motion "
    "category present).",
    "coef, se, z, p, ci_low, ci_high, odds_ratio": "Log-odds of a correct answer (GEE: "
    "population-averaged, CR1 cluster-robust, t with participants - 1 df; GLMM: conditional "
    "on a typical participant and clip, Wald); odds_ratio = exp(coef).",
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
ORDERING_METRICS = {
    "kendall_tau, pairwise_accuracy, mean_abs_distance, lcs_ratio, edit_distance, "
    "exact_match": "Means over the trials the non-response policy counts (an invalid "
    "order: 'error' scores it as the reversed order, 'chance' as the mean over every "
    "order, 'excluded' drops it): Kendall's tau_b of the answered against the true order "
    "(1 right, -1 reversed), share of frame pairs in the right order, mean |answered - true position| in frames, "
    "longest common subsequence / frames, Levenshtein distance in frames, share exactly "
    "right.",
}
ORDERING_COLUMNS = {
    "n_trials, n_valid": "Frame-ordering trials, and those whose answer is a complete order "
    "of the frames.",
    **ORDERING_METRICS,
}

EXCLUSION_FLOW = {
    "step": "'entered', people without trials by their session's status (screened_out, "
    "no_consent, ...), practice_gate, each further exclusion reason (most frequent first), "
    "manual, session_not_completed, practice_trials, catch_trials, 'remaining' (what is "
    "analysed). A trial with several reasons is charged to the first step naming it.",
    "n_participants_removed, n_trials_removed": "Removed at this step (a participant when "
    "their last remaining trial is); the removed counts add up to entered minus remaining.",
    "n_participants_remaining, n_trials_remaining": "Left after this step. People only when "
    "the study has any.",
}
AOT_OVERALL = {
    "subset": "'full': every analysed clip; 'benchmark': the AoT-PsyPhyBENCH subset "
    "(without the Reciprocal category).",
    **AOT_COLUMNS,
}
AOT_BY_DIRECTION = {"direction": "The clip as played: forward or backward.", **AOT_COLUMNS}
AOT_BY_CATEGORY = AOT_COLUMNS
AOT_BY_SUBJECT = AOT_COLUMNS
AOT_BY_SESSION = {"session_id": "One session (a participant's sitting, a model's run).",
                  **AOT_COLUMNS}
AOT_BY_SESSION_NUMBER = {
    "session_number": "The design's session (1, 2, ...: sessions on different days), so a "
                      "multi-day study shows whether a later sitting differs from the first.",
    **AOT_COLUMNS}
SDT_PARTICIPANT_SUMMARY = {
    "metric, null": "accuracy, d_prime, criterion and their uncorrected forms "
    "(sdt_by_participant's columns); the value tested against (0.5 for accuracy, else 0).",
    "n_participants": "Participants with the metric.",
    "mean, sd": "Over participants.",
    "ci_low, ci_high, p_value": "Two-way (participant x clip) percentile bootstrap "
    "interval of the mean (widened for few participants or clips: t quantiles, "
    "Welch-Satterthwaite df), and the level at which it leaves out null (0.5 for "
    "accuracy, 0 otherwise); for criterion the test of the forward bias. Empty for the "
    "uncorrected metrics, which a resample can make infinite.",
    "pooled": "The same metric from everyone's counts pooled (the aot_overall row), "
    "which is not a mean over people."}
SDT_BY_PARTICIPANT = {
    **AOT_COUNTS,
    "extreme": "True when the participant's hit or false-alarm rate is 0 or 1 before "
    "correction.",
    "d_prime_uncorrected, criterion_uncorrected": "Without the log-linear correction; "
    "empty where extreme (they would be infinite)."}
PAIR_METRICS = PAIR_COLUMNS
PAIR_METRICS_BY_CATEGORY = PAIR_COLUMNS
PAIR_METRICS_BY_PARTICIPANT = {
    **PAIR_COLUMNS,
    "subject_id": "One participant (people only); n_subjects is 1 and the interval resamples "
    "that participant's clips.",
}
RT_MEDIAN = {
    "direction, response": "The clip as played (forward, backward) and the answer (F, B); "
    "answered arrow-of-time trials of people only.",
    "onset_method": "How the clip's onset was timed (e.g. element-timing, raf-next; "
    "'unknown' where not stored); a row per method only when the trials were timed by more "
    "than one, since methods differ by up to a display refresh.",
    "n": "Trials in the row.",
    "median_rt_ms, q25_rt_ms, q75_rt_ms": "Median and quartiles of the reaction time from "
    "clip onset, in ms, over the row's trials (medians: RTs are right-skewed).",
}
RT_ANSWER_SPEED = {
    "n_subjects": "Participants with both F and B answers (one row; with fewer than 2 the "
    "other columns are empty).",
    "median_rt_forward_ms, median_rt_backward_ms": "Median over participants of each one's "
    "median RT (ms) of F answers / of B answers.",
    "mean_difference_ms": "Mean over participants of (median B RT - median F RT), ms; > 0: "
    "forward answers are faster.",
    "t, p_t": "Paired t-test on the participants' log median RTs, B against F (two-sided).",
    "w, p_wilcoxon": "Wilcoxon signed-rank test of the per-participant differences "
    "(two-sided; zero differences dropped).",
}
RT_LMM = {
    "term": "A fixed effect of log RT (patsy names: Intercept, C(direction)[T.forward], "
    "C(response)[T.F], their interaction, C(onset_method)[...] when trials were timed more "
    "than one way), or a variance component: var(subject), var(clip), var(residual), "
    "crossed random intercepts fitted by REML.",
    "coef, se, z, p, ci_low, ci_high": "Estimate on log RT (ln ms; exp(coef) of a fixed "
    "effect is the ratio of RTs), its SE, Wald z, two-sided p and 95% Wald interval; for a "
    "variance component coef is the variance and the rest is empty.",
}
ACCURACY_GEE = {
    **FIT_COLUMNS,
    "se": "Empty, with the reason in metrics.json's warnings, where no valid "
    "participant-clustered SE exists (a term only one participant's trials inform)."}
ACCURACY_GLMM = {
    **FIT_COLUMNS,
    "term": FIT_COLUMNS["term"] + " Last rows sd(participant), sd(clip): the random-"
    "intercept SDs (log-odds; coef is the SD, the rest empty).",
    "fitted_on": "The trials the GLMM was fitted on: all of them, or, above "
    f"{GLMM_MAX_TRIALS:,} trials, a subsample (all trials of evenly spaced participants, "
    "named here), while the GEE uses every trial."}
HUMAN_MODEL_GAP = {
    "model": "A model observer, compared with the people.",
    GAPS + ", gap_d_prime, gap_criterion": "People minus the model: accuracy and F1 in "
    "percentage points, d' and c as they are; intervals from the same resamples for both "
    "(paired).",
    "subset": AOT_OVERALL["subset"],
}
CATEGORY_GAP = {
    "model": HUMAN_MODEL_GAP["model"],
    "human_accuracy, model_accuracy, human_f1_forward, model_f1_forward, human_f1_backward, "
    "model_f1_backward": "People's (pooled) and the model's accuracy and F1 of each label in "
    "the category, as in aot_by_category.",
    GAPS: "People minus the model in percentage points; intervals from the same resamples "
    "for both (paired).",
    "note": "Why a value is missing, else empty.",
}
ERROR_CONSISTENCY = {
    "observer": "A model observer, or 'human-human': every pair of people.",
    "n_pairs, median_shared_stimuli": "Pairs with a kappa (the model with each person; "
    "people with each other) and the median of stimuli (clip x direction) each pair shares.",
    "mean_kappa, sd_kappa": "Error consistency (Geirhos et al. 2020): Cohen's kappa of "
    "being right on the same stimuli, beyond what the two accuracies predict (0: "
    "independent errors, 1: identical), averaged over the pairs; repeated presentations "
    "averaged. Empty without shared stimuli.",
    "kappa_ci_low, kappa_ci_high": "Percentile interval of mean_kappa over a two-way "
    "bootstrap: whole clips (both directions) and, independently, people.",
    "human_ceiling_kappa, human_ceiling_ci_low, human_ceiling_ci_high": "The human-human "
    "row's kappa and interval beside each model: what a model as human as a person would "
    "reach.",
}
ITEM_CORRELATION = {
    "model": HUMAN_MODEL_GAP["model"],
    "n_items, n_clips": "Stimuli (a clip in one direction) both people and the model saw, "
    "and their clips.",
    "pearson_r, spearman_rho": "Correlation over items of people's accuracy with the "
    "model's (point-biserial where the model saw an item once).",
    "r_ci_low, r_ci_high, p_value": "Percentile interval of Pearson's r over resampled "
    "clips, and a permutation test that moves a model's answers to a clip (both "
    "directions together) to another clip: a clip's directions are not independent "
    "items.",
    "note": "Why r is undefined (either side constant, fewer than 4 items), else empty.",
    "p_holm": "p_value Holm-corrected over every test of the Tests section as one family.",
}
DIFFICULTY_CORRELATION = {
    "model": HUMAN_MODEL_GAP["model"],
    "n_categories": "Categories both people and the model have.",
    "pearson_r, pearson_p, spearman_rho, spearman_p": "Correlation over categories of "
    "people's (pooled) accuracy with the model's, and its two-sided p; empty below 3 "
    "categories or where either side is constant.",
}
TEXT_VS_LOGIT_ACCURACY = {
    "n_trials, n_answered": "The model's counted trials, and those with a readable F or B "
    "answer.",
    "text_accuracy": "Accuracy of the generated answers (non-responses as the policy "
    "says); empty where nothing was answered.",
    "n_scored, logit_accuracy": "Trials with label probabilities, and accuracy of the more "
    "probable label (P(F) > 0.5: F; a tie counts half); empty without logits.",
    "human_accuracy": "People's pooled accuracy on the same policy.",
    "gap_text_points, gap_logit_points": "People minus the model in percentage points.",
    "note": "Why a value is n/a, else empty.",
}
PER_STIMULUS_AGREEMENT = {
    "stimulus, source_clip_id, direction": "One stimulus ('<clip>/<direction>'), the clip "
    "it was made from, and the direction it played in.",
    "n_humans, human_accuracy": "People who saw it, and their mean correctness on it.",
    "model, model_correct": "A model observer (a row per stimulus and model) and its "
    "correctness (0-1), averaged over repeated presentations (e.g. both label orders).",
}
BINOMIAL_TESTS = {
    "n_trials, n_correct, accuracy": "Counted trials, those right, and their share.",
    "unit, n_units": "What the test treats as independent, and how many: 'participants x "
    "clips' (people; n_units counts participants) or 'items' (models: a clip in one "
    "direction, its presentations averaged).",
    "ci_low, ci_high, p_value": "People: the two-way (participant x clip) percentile "
    "bootstrap of accuracy (widened as in sdt_participant_summary) and the level at "
    "which it leaves out 0.5; empty below the minimum of participants the note names. "
    "Models: the exact sign test over items with its Clopper-Pearson interval.",
    "test, note": "The test in words; clips and resamples used, or why there is no test.",
    "p_holm": ITEM_CORRELATION["p_holm"],
}
MCNEMAR_TESTS = {
    "observer_a, observer_b": "Two model observers (every pair), on the items both answered "
    "(a clip in one direction; presentations averaged; a non-response is wrong).",
    "n_items, n_both_correct, n_only_a, n_only_b, n_both_wrong, n_tied_partial": "Shared "
    "items, and how they split: n_only_a where A did better than B (one presentation: only "
    "A right), n_tied_partial where both were equally, partly right.",
    "accuracy_a, accuracy_b": "Each observer's accuracy on the shared items.",
    "statistic, p_value, method": "McNemar's test of n_only_a (b) against n_only_b (c), "
    "two-sided: 'exact binomial' (statistic min(b, c)) below 25 discordant items, else "
    "'chi-square, corrected' ((|b - c| - 1)^2 / (b + c), 1 df).",
    "p_holm": ITEM_CORRELATION["p_holm"],
}
NONRESPONSE_SENSITIVITY = {
    "policy, main": "How a non-response (timeout, unparseable answer) counts: 'error' "
    "(wrong), 'excluded' (left out), 'chance' (half right); main: the policy of the "
    "report's other tables.",
    "n_subjects, n_trials, n_nonresponse": "People (the human row) or model runs analysed "
    "under the policy, their trials, and the non-responses among them.",
    "accuracy, f1_forward, f1_backward": "As in aot_overall, under the policy.",
    "gap_accuracy_points": "People's accuracy minus the observer's, in percentage points, "
    "both under the policy; empty for people.",
}
ORDERING_NONRESPONSE_SENSITIVITY = {
    "policy, main": NONRESPONSE_SENSITIVITY["policy, main"],
    "n_trials, n_invalid": "Frame-ordering trials, and those without a complete order of "
    "the frames (no answer, or not a permutation).",
    **ORDERING_METRICS,
}
ORDERING_BY_FACTOR = {
    "factor, level": "The one factor a condition varies from the original (frames, span, "
    "annotation, hints) and its value.",
    "condition, original": "The EGO-FLIGHT condition; True for the original (4 frames, "
    "medium span, brief annotation, no hints), repeated under every factor.",
    "n_trials, n_resampled": "Frame-ordering trials in the row, and the units resampled (participants for "
    "people, clips for a model).",
    "kendall_tau, exact_match": "Means over the scored trials, as in "
    "ordering_by_condition.",
}
ORDERING_BY_CONDITION = {"condition": "The frame-ordering condition (extra.condition).",
                         **ORDERING_COLUMNS}
ORDERING_ANCHORING = {"true_first_position": "Where the chronologically first frame was "
                      "shown (presented position, 1-based): does position anchor the answer?",
                      **ORDERING_COLUMNS}
ORDERING_BY_INVERSIONS = {"n_inversions": "Frame pairs shown out of their true order "
                          "(input disorder; EGO-FLIGHT Appendix, Figure 3).",
                          **ORDERING_COLUMNS}
