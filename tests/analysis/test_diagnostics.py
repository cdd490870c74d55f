"""TOMATO ratios, TimeCausality swap consistency and logit calibration."""
import numpy as np
import pandas as pd
import pytest

from analysis import diagnostics, loading, simulate


def variant_rows(model, accuracies, n=1000):
    parts = []
    for variant, acc in accuracies.items():
        k = round(acc / 100 * n)
        parts.append(pd.DataFrame({"subject_id": model, "correct": [1.0] * k + [0.0] * (n - k),
                                   "extra": [{"task_variant": variant}] * n}))
    return pd.concat(parts, ignore_index=True)


def test_tomato_ratios_match_the_poster():
    # TOMATO poster: VITATECS 1 frame 70.7, 16 frames 87.2 -> kappa 23.4 (23.3 from the
    # rounded means); TOMATO 16[S] 28.5 / 16 37.8 -> tau 32.6 from means (34.1 is the mean of
    # per-model taus); TOMATO(200) 1[R] 21.8 / 1[H] 22.8 -> rho 4.6.
    rows = variant_rows("m", {"full": 87.2, "single_frame": 70.7, "shuffled": 84.5,
                              "handpicked_frame": 86.0})
    out = diagnostics.tomato_ratios(rows).iloc[0]
    assert out.kappa == pytest.approx(23.4, abs=0.1)
    assert out.tau == pytest.approx(3.2, abs=0.05)   # VITATECS tau 3.2
    assert out.rho == pytest.approx(21.6, abs=0.05)  # VITATECS rho 21.6
    tomato = diagnostics.tomato_ratios(variant_rows("t", {"single_frame": 21.8,
                                                         "handpicked_frame": 22.8})).iloc[0]
    assert tomato.rho == pytest.approx(4.6, abs=0.05)
    assert np.isnan(tomato.kappa)


def pair_rows(model, answers):
    """answers: {(pair_id, order): response}."""
    recs = []
    for (pid, order), resp in answers.items():
        correct_response = "A" if order == "AB" else "B"
        recs.append({"subject_id": model, "trial_type": "pair_order", "response": resp,
                     "correct_response": correct_response, "correct": float(resp == correct_response),
                     "extra": {"pair_order": order, "pair_id": pid}})
    return pd.DataFrame(recs)


def test_always_first_model_has_full_positional_bias_and_no_consistency():
    # TimeCausality appendix C: models assume the upper (first) image is earlier.
    answers = {(p, o): "A" for p in range(10) for o in ("AB", "BA")}
    out = diagnostics.swap_consistency(pair_rows("first", answers)).iloc[0]
    assert out.accuracy == 0.5 and out.accuracy_ab == 1.0 and out.accuracy_ba == 0.0
    assert out.positional_bias == 0.5 and out.swap_consistency == 0.0 and out.n_pairs == 10


def test_consistent_judge():
    answers = {(p, "AB"): "A" for p in range(5)} | {(p, "BA"): "B" for p in range(5)}
    out = diagnostics.swap_consistency(pair_rows("ok", answers)).iloc[0]
    assert out.swap_consistency == 1.0 and out.positional_bias == 0.0


def test_calibration_separates_position_effect_from_label_bias():
    spec = simulate.StudySpec(n_participants=1, trials_per_participant=2, n_clips=400,
                              models={"m": simulate.Observer(d_prime=1.0, criterion=0.6,
                                                             label_position_bias=0.8,
                                                             timeout_rate=0.0)})
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(2)))
    bins, summary = diagnostics.calibration(data[data.subject_kind == "model"])
    row = summary.iloc[0]
    # Simulated logit P(B) = 1.7 (x - c) + shift: label bias 1.7 * 0.6, position shift 0.8.
    assert row.position_effect == pytest.approx(0.8, abs=0.1)
    assert row.residual_bias == pytest.approx(1.7 * 0.6, abs=0.25)
    assert 0 <= row.ece <= 1 and bins.n.sum() == row.n


def test_pair_order_f1_as_in_timecausality():
    # TimeCausality appendix C adds F1 against positional bias. The always-first model is
    # AoT-PsyPhyBENCH's always-"F" Qwen2-VL-7B in another guise (Table 2: F1 66.7 / 0.0,
    # accuracy 50.0): F1_A = 2*10 / (2*10 + 10 + 0) and F1_B = 0.
    answers = {(p, o): "A" for p in range(10) for o in ("AB", "BA")}
    out = diagnostics.swap_consistency(pair_rows("first", answers)).iloc[0]
    assert out.f1_a == pytest.approx(2 / 3) and out.f1_b == 0.0
    assert out.macro_f1 == pytest.approx(1 / 3) and out.accuracy == 0.5


def test_pair_order_f1_counts_a_non_response_as_a_miss():
    answers = {(0, "AB"): "A", (1, "AB"): None, (2, "BA"): "B", (3, "BA"): "A"}
    out = diagnostics.swap_consistency(pair_rows("m", answers)).iloc[0]
    # F1 = 2TP / (2TP + FP + FN), by hand: A: TP 1, FP 1, FN 1 (the non-response);
    # B: TP 1, FP 0, FN 1.
    assert out.f1_a == pytest.approx(2 / 4) and out.f1_b == pytest.approx(2 / 3)


def test_diagnostics_keep_prompt_settings_apart():
    # Two settings of one model are two observers in every diagnostic table.
    zero = variant_rows("m", {"full": 60.0, "single_frame": 50.0}, n=100).assign(
        extra=lambda d: [{**e, "setting": "zero-shot"} for e in d.extra])
    few = variant_rows("m", {"full": 80.0, "single_frame": 50.0}, n=100).assign(
        extra=lambda d: [{**e, "setting": "few-shot-4"} for e in d.extra])
    tomato = diagnostics.tomato_ratios(pd.concat([zero, few], ignore_index=True))
    kappa = tomato.set_index("observer")["kappa"]
    # TOMATO's kappa = 100 (Acc(m) - Acc(1)) / Acc(1) per setting: 20% and 60%.
    assert kappa["m / zero-shot"] == pytest.approx(20.0) and \
        kappa["m / few-shot-4"] == pytest.approx(60.0)
    first = pair_rows("m", {(p, o): "A" for p in range(5) for o in ("AB", "BA")})
    fair = pair_rows("m", {(p, "AB"): "A" for p in range(5)} | {(p, "BA"): "B" for p in range(5)})
    first["extra"] = [{**e, "setting": "zero-shot"} for e in first.extra]
    fair["extra"] = [{**e, "setting": "few-shot-4"} for e in fair.extra]
    swap = diagnostics.swap_consistency(pd.concat([first, fair], ignore_index=True))
    swap = swap.set_index("observer")
    assert swap.loc["m / zero-shot", "swap_consistency"] == 0.0
    assert swap.loc["m / few-shot-4", "swap_consistency"] == 1.0


def test_calibration_keeps_prompt_settings_apart():
    spec = simulate.StudySpec(n_participants=1, trials_per_participant=2, n_clips=300, models={
        "a": simulate.Observer(d_prime=1.0, criterion=0.6, timeout_rate=0.0),
        "b": simulate.Observer(d_prime=1.0, criterion=-0.6, timeout_rate=0.0)})
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(2)))
    models = data[data.subject_kind == "model"].copy()
    few = models.subject_id == "b"
    models["extra"] = [{**e, "setting": "few-shot-4"} if f else e
                       for e, f in zip(models.extra, few)]
    models["subject_id"] = "m"
    _, summary = diagnostics.calibration(models)
    bias = summary.set_index("observer")["residual_bias"]
    # Simulated label bias 1.7 * c: +1.02 zero-shot, -1.02 few-shot; pooled it would be ~0.
    assert bias["m / zero-shot"] == pytest.approx(1.7 * 0.6, abs=0.3)
    assert bias["m / few-shot-4"] == pytest.approx(-1.7 * 0.6, abs=0.3)
