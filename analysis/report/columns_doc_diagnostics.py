"""What the columns of the diagnostics, TRA-sweep and benchmark tables mean (the model
diagnostics, the TRA files, the sweeps and the published AoT-PsyPhyBENCH figures); the other
tables' and the shared columns are :mod:`analysis.report.columns_doc`, read the same way.
"""
from __future__ import annotations

from analysis.sweep_fits import STEP_BETWEEN_LEVELS, WIDTH_UPPER_ONLY

TRA_BY = {
    "model, context_frames": "The self-supervised video model and the context frames it "
    "predicted from (rows of the --tra file).",
}
TRA_PCT = ("TRA in percent, as the TRA paper prints it: 100 (L(reversed) - L(forward)) / "
           "L(forward), L the model's prediction loss on the clip; > 0: the forward clip is "
           "more predictable")
NO_ROWS = "; empty (NaN) without clips of that kind"
TOMATO = {
    "acc_full, acc_shuffled, acc_single_frame, acc_handpicked_frame": "Accuracy in percent "
    "under each TOMATO frame condition (all frames; shuffled; one random frame; one "
    "hand-picked frame); empty where the model did not run it.",
    "kappa, tau, rho": "TOMATO's ratios in percent: multi-frame gain (full - single) / "
    "single, frame-order sensitivity (full - shuffled) / shuffled, frame-information "
    "disparity (hand-picked - random single) / random single; empty where a condition is "
    "missing.",
}
SWAP_CONSISTENCY = {
    "n_trials, accuracy": "Ordered image-pair (pair_order) trials, and the share right.",
    "f1_a, f1_b, macro_f1": "F1 of the A and B answers (a non-response is a miss) and "
    "their mean (TimeCausality): an always-first model has 0.667, 0 and 0.333.",
    "accuracy_ab, accuracy_ba": "Accuracy when the earlier image was shown first (AB) / "
    "second (BA).",
    "first_choice_share, positional_bias": "Share of answers naming the image shown first "
    "as earlier, and that share - 0.5.",
    "n_pairs, swap_consistency": "Pairs answered in both orders, and the share where the "
    "same image was judged earlier in both.",
}
MODEL_LEDGER = {
    "n_items, n_correct": "Items with a stored ledger, and those answered right.",
    "n_cut_off": "Items whose reasoning never ended (thinking budget or token limit): no "
    "answer, never parsed from a half thought.",
    "tokens_in_per_item, tokens_out_per_item, tokens_reasoning_per_item": "Mean tokens per "
    "item over all its calls (a generated answer and a logit score): in (prompt and frames), "
    "out (reasoning included) and of reasoning, as the server's usage or the local processor "
    "counted them.",
    "model_s_per_item": "Mean seconds of the model per item (its share of a batched call).",
    "tokens_per_item, tokens_per_correct": "Tokens in and out per item, and per correct "
    "answer (empty with none). Costs need the user's price file: run-models --prices shows "
    "them, never a guess.",
}
CALIBRATION = {
    "n": "Trials with label probabilities (model answers with logits).",
    "brier, ece": "Brier score mean (P(F) - [forward])^2, and expected calibration error "
    "over 10 equal-width bins of P(F) (calibration_bins).",
    "mean_logit_fb, mean_logit_bf": "Mean logit P(F) when F was named first (FB) / second "
    "(BF); empty without trials in that label order.",
    "position_effect, residual_bias": "(FB - BF) / 2: preference for the label named first; "
    "(FB + BF) / 2: the bias toward F left once the order is balanced (0: unbiased).",
    "forward_share_swapped": "Share of stimuli whose logit P(F), averaged over their "
    "presentations (both label orders), is > 0: answered F once the order is balanced.",
}
CALIBRATION_BINS = {
    "bin, n": "Bin 0-9 of P(F) in tenths, and its trials.",
    "mean_p_forward, observed_forward": "Mean P(F) in the bin, and the share of its clips "
    "truly forward (equal if calibrated).",
}
TRA_PROCESS = {
    **TRA_BY,
    "n_low, n_dissipative": "Clips of low-dissipation and of dissipative processes.",
    "tra_low_pct, tra_dissipative_pct, difference_pct": "Mean TRA of each (" + TRA_PCT
    + ") and dissipative minus low (> 0: physically grounded time)" + NO_ROWS + ".",
    "t, p, cohens_d": "Welch's t-test, dissipative against low, and Cohen's d (pooled SD); "
    "infinite where neither group varies but the means differ, empty where undefined.",
}
TRA_SCENARIO = {
    **TRA_BY,
    "scenario, process": "The simulated scene and its process kind (low-dissipation or "
    "dissipative).",
    "n, tra_pct": "Clips, and their mean TRA (" + TRA_PCT + ").",
    "t, p": "One-sample t-test of TRA against 0 (infinite t where every clip has the same "
    "nonzero TRA).",
}
TRA_PARAMETER = {
    **TRA_BY,
    "scenario, parameter, parameter_value": "The sweep: scene, physical parameter "
    "(restitution, damping) and its value.",
    "n, tra_pct": TRA_SCENARIO["n, tra_pct"],
    "is_peak": "True at the value of largest mean TRA within the scenario and parameter.",
}
SWEEP_STATUS = ("'ok'; 'at bound' (the fit lies on a fitting limit the truth may lie "
                "beyond, the widest curve or a threshold beyond the sweep: no interval); "
                f"'{STEP_BETWEEN_LEVELS}' (the narrowest curve, one level step wide, with its "
                "threshold inside the sweep: the answers switch between two adjacent levels; "
                "no interval: on simulated participants the profile interval covered 69 of "
                "91 true thresholds, 0.76); 'at limit: <ends>' (an interval end or the "
                "lapse rate on a limit: the truth may lie beyond); "
                f"'{WIDTH_UPPER_ONLY}' (width_lo is the level step, the design's resolution); "
                "'flat' (no threshold); 'not above chance' (a "
                "participant whose analysed trials of the sweep are not above chance, one-sided "
                "binomial test at alpha 0.05: no interval, the threshold is not one); 'median "
                "of participants' (people's row of an adaptive sweep: the median of "
                "participants' thresholds, those not above chance counted past the easiest "
                "level, with its order-statistic interval over participants; no width: each "
                "participant's levels sat around their own threshold, so the pooled trials' "
                "curve is flatter than any of theirs and not a population estimate); 'median "
                "beyond the sweep' (half of them or more not above chance); 'no participant "
                "with a threshold'; else why the fit failed")
SWEEP_FIT = {
    "scenario, parameter": TRA_PARAMETER["scenario, parameter, parameter_value"],
    "width, width_lo, width_hi": "Psychometric 5%-95% width of the curve in parameter "
    "units, with its interval (people and VLMs).",
    "direction": "Sign of the curve's slope over the parameter (1 rising, -1 falling).",
    "guess, lapse, asymptotes": "Lower asymptote and lapse rate (1 - upper asymptote): "
    "people's guess fixed at chance, 0.5 (each clip is shown both ways), lapse estimated in "
    "[0, 0.06]; a VLM's both estimated by least squares; asymptotes says which, in words.",
    "at_bound, at_step, ends_at_limit": "True where the fit lies on a fitting limit other "
    "than a step; True where it is a step between two adjacent levels inside the sweep; "
    "the interval ends (and 'lapse') that sit on a limit, ';'-separated, empty where none.",
    "interval": "How the intervals were computed, or 'not estimated: ...' with too few "
    "participants.",
    "status": SWEEP_STATUS + ".",
}
TRA_SWEEP_FITS = {
    **SWEEP_FIT,
    "source, reference": "'measured' here, or 'published' (the TRA paper's peaks, not "
    "measured), with the table cited.",
    "observer_kind, observer": "people (one pooled fit), vlm (a model observer, per-clip "
    "P(correct) from its logits, least squares, both asymptotes free) or self_supervised (a "
    "video model's TRA).",
    "context_frames": "A self-supervised model's context frames; empty otherwise.",
    "n, n_clusters, n_label_orders": "Trials (people), clips (VLM, TRA); participants of "
    "the pooled fit; label orders a VLM's clips were all scored in (1: the fit carries the "
    "label's position bias).",
    "location, location_lo, location_hi": "Threshold (parameter value at the curve's "
    "midpoint) for people and VLMs, peak location of the TRA bump for self-supervised "
    "models, with its interval.",
    "peak_height_pct, peak_height_pct_lo, peak_height_pct_hi, peak_tra_pct, peak_tra_pct_lo, "
    "peak_tra_pct_hi": "Self-supervised rows: TRA bump b + h exp(-(x - mu)^2 / 2 sigma^2): height h above the "
    "baseline and the TRA at the peak b + h, in percent, with percentile intervals over "
    "clips resampled within each level.",
    "level_p, distinguishable": "One-way F test that the TRA level means are all 0 (of the "
    "data, not the bump), and whether p < 0.05; only such a curve is drawn off 0.",
    "relation": "A published peak: 'equals' (printed) or 'below' (only a bound printed).",
}
P_ABOVE_CHANCE = ("One-sided binomial p value of the participant's correct answers among "
                  "their analysed trials of the sweep against chance (0.5); 0.05 or more: "
                  "status 'not above chance'. Empty for other rows.")
TRA_SWEEP_PARTICIPANTS = {
    **SWEEP_FIT,
    "n_levels, n_rows, n_clusters": "Sweep levels, trials, and clusters (empty: a "
    "participant's fit is over trials).",
    "threshold, threshold_lo, threshold_hi": "Parameter value at the curve's midpoint, "
    "with its 95% profile likelihood interval.",
    "boot_at_bound, n_boot": "Refits on a bound, and resamples (0: profile intervals, no "
    "bootstrap).",
    "level_min, level_max, curve_min, curve_max": "The sweep's lowest and highest level, "
    "and the fitted P(correct) at them.",
    "sigmoid, flat": "The cdf F of P(x) = guess + (1 - guess - lapse) F((x - threshold) / s) "
    "('norm' or logistic), and True for a curve without a threshold.",
    "chance, ci": "Chance P(correct) (0.5), and the intervals' coverage.",
    "p_above_chance": P_ABOVE_CHANCE,
}
TRA_SWEEP_CURVES = {
    "observer_kind, observer, subject_id": "Whose curve: people ('pooled' or a participant), "
    "a VLM, a self-supervised model (at the context nearest 12 frames).",
    "scenario, parameter, context_frames": "The sweep, and a self-supervised model's "
    "context frames (empty otherwise).",
    "level, value": "A point of the drawn curve: parameter value, and fitted P(correct) "
    "(people, VLMs) or TRA level mean in percent (self-supervised).",
    "value_normalised, normalisation": "On the figures' shared axis, and the rule in words: "
    "2 P(correct) - 1 (0 chance, 1 always right), or TRA / the largest |level mean| on the "
    "sweep of any model distinguishable from 0.",
    "note": "'one label order', a flat or not-distinguishable curve, else empty.",
    "band_lo, band_hi": "Pooled people's pointwise 95% jackknife t band over participants, "
    "normalised; empty for other curves.",
}
TRA_SWEEP_LEVEL_MEANS = {
    "observer_kind, observer, subject_id": "People pooled ('pooled') or a VLM (subject_id "
    "empty).",
    "scenario, parameter, level": TRA_PARAMETER["scenario, parameter, parameter_value"],
    "p_correct, n": "Mean correctness at the level, over trials (people) or clips (a VLM's "
    "per-clip P(correct)), and how many.",
    "value_normalised": "2 p_correct - 1, the curves' shared axis.",
}
TRA_ADAPTIVE_SEQUENCE = {
    "subject_id, session_id": "The participant and session.",
    "scenario": "The sweep (bouncing_ball, pendulum).",
    "slot, trial_index": "The trial's place among the sweep's adaptive trials (0 first) and "
    "in the session.",
    "level": "The sweep level QUEST+ chose for it (restitution, damping).",
    "correct": "Whether it was answered right; empty without an answer (no update).",
    "threshold_mean, threshold_lo, threshold_hi": "The posterior of the sweep's threshold "
    "when this level was chosen, from the answers before it: mean and equal-tailed 95% "
    "credible interval (the report's thresholds are fitted, not these).",
    "halfwidth_steps": "Half that interval's width, in level steps.",
    "width_mean, lapse_mean": "Posterior means of the 5%-95% width and the lapse rate.",
    "n_answers": "Answers on the sweep the choice was made from.",
}
LENGTH_THRESHOLDS = {
    "observer_kind, observer, subject_id": "Whose fit: people ('pooled' over participants, or "
    "one participant's) or a model (subject_id empty).",
    "n, n_levels": "Trials (people) or scored cuts (models) fitted, and the lengths among them.",
    "threshold_frames, threshold_lo, threshold_hi": "Frames shown (around the clip's middle) at the "
    "curve's midpoint, with its 95% interval (people: profile likelihood, pooled: jackknife "
    "over participants; models: bootstrap over source clips).",
    "width_frames": "Frames between the curve's 5% and 95% points.",
    "guess, lapse, curve_min, curve_max": "The curve's asymptotes, P(correct) = guess + (1 - "
    "guess - lapse) F(...): people's guess fixed at chance (0.5), a model's both estimated, so "
    "a model may level off far below 1; and the fitted P(correct) at the shortest and longest "
    "length. A threshold is the midpoint between the asymptotes: compare thresholds only "
    "where curve_max is alike (a model that never exceeds 0.62 has one too).",
    "direction": "+1 where accuracy rises with more frames (people's always do: more frames "
    "never hide the earlier ones; a model's may fall).",
    "n_label_orders": "A model's label orders per cut (1: fitted from one order only).",
    "status, interval": "The fit's state (" + SWEEP_STATUS + ") and how its interval was "
    "made (or why there is none).",
    "p_above_chance": P_ABOVE_CHANCE,
}
LENGTH_LEVEL_MEANS = {
    **TRA_SWEEP_LEVEL_MEANS,
    "scenario, parameter": "The sweep ('length') and its level ('n_frames').",
    "level": "Frames shown, around the clip's middle.",
}
LENGTH_CURVES = {
    **TRA_SWEEP_CURVES,
    "scenario, parameter, context_frames": "The sweep ('length', 'n_frames'); context_frames "
    "is empty (no self-supervised models here).",
    "level, value": "A point of the drawn curve: frames shown, and fitted P(correct).",
}
LENGTH_SEQUENCE = {
    **TRA_ADAPTIVE_SEQUENCE,
    "scenario": "The sweep ('length').",
    "level": "The number of frames QUEST+ chose for the trial.",
}
BENCHMARK_REFERENCE = {
    "source, label": "'measured' (our runs) or 'published' ('published, not measured': "
    "transcribed from the paper or a later one).",
    "observer": "Our model observer on a measured row; empty on published rows.",
    "table, citation, note": "The paper's table number (empty for later papers), the "
    "citation, and transcription notes.",
    "setting, group, model, model_key, shots, effort, cot, train_size, fps": "The run as the "
    "paper lists it: prompt setting (zero-shot, few-shot-N, simple-cot, multi-step-cot, "
    "sft), the paper's model group (e.g. Open reasoning, Proprietary, Baselines), model name "
    "and its normalised key (which matches our model ids), few-shot examples, reasoning "
    "effort, chain of thought (none, simple, multi-step), fine-tuning set size, frames per "
    "second; empty where not printed.",
    "category, n_clips": "A per-category row's category and clips (Table 1); empty "
    "otherwise.",
    "f1_forward_pct, f1_backward_pct, accuracy_pct": "Forward / Backward F1 and accuracy, in "
    "percent (unparseable answers as errors); empty where the paper prints a dash.",
    "n_trials": "Our trials on benchmark items; empty on published rows.",
}
