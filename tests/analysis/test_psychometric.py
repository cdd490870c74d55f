"""Psychometric and TRA-peak fits (analysis/psychometric.py) on simulated observers.

Bootstrap resamples are fewer here than the module's default of 2,000 (50 to 300) to keep
the file under ~30 s on a loaded 2-core machine.
"""
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from analysis import psychometric as P

LEVELS = np.round(np.linspace(0.1, 1.0, 10), 2)  # the TRA paper's restitution sweep


def simulate(rng, threshold=0.55, width=0.4, guess=0.0, n_per_level=30, direction=1,
             levels=LEVELS, sigmoid="norm"):
    """Binary trials of an observer with known psychometric parameters."""
    x = np.repeat(levels, n_per_level)
    p = P._psychometric_values(threshold, width, direction, x, sigmoid, guess, 0.0)
    return pd.DataFrame({"level": x, "correct": (rng.random(x.size) < p).astype(float)})


@pytest.mark.parametrize("sigmoid,link", [("norm", sm.families.links.Probit()),
                                          ("logistic", sm.families.links.Logit())])
def test_fit_equals_statsmodels_binomial_glm(sigmoid, link):
    # Independent computation: with no guess or lapse rate the model is a binomial GLM,
    # threshold = -b0/b1 and width = (F^-1(.95) - F^-1(.05)) / b1.
    data = simulate(np.random.default_rng(3), sigmoid=sigmoid)
    k = data.groupby("level")["correct"].sum().to_numpy()
    n = data.groupby("level")["correct"].size().to_numpy()
    glm = sm.GLM(np.c_[k, n - k], sm.add_constant(LEVELS), family=sm.families.Binomial(link)).fit()
    b0, b1 = glm.params
    quantile = P.SIGMOIDS[sigmoid][2]
    fit = P.fit_counts(LEVELS, k, n, sigmoid=sigmoid)
    assert fit["threshold"][0] == pytest.approx(-b0 / b1, abs=1e-6)
    assert fit["width"][0] == pytest.approx((quantile(0.95) - quantile(0.05)) / b1, rel=1e-6)


def test_falling_two_choice_observer_recovered_within_cis():
    # P(correct) with chance 0.5 that falls as restitution rises towards elastic.
    rng = np.random.default_rng(11)
    data = simulate(rng, threshold=0.6, width=0.3, guess=0.5, n_per_level=60, direction=-1)
    fit = P.fit_psychometric(data, "level", rng=rng, guess=0.5, n_boot=200)
    assert fit["direction"] == -1 and not fit["at_bound"]
    assert fit["threshold_lo"] < 0.6 < fit["threshold_hi"]
    assert fit["width_lo"] < 0.3 < fit["width_hi"]
    assert fit["curve_min"] == pytest.approx(0.5, abs=0.01)


def test_threshold_ci_coverage_over_200_simulated_observers():
    # Measured with 200 resamples per data set: threshold 0.925 (seed 2026) and 0.945
    # (seed 1); width 0.895 both: the percentile interval of the width undercovers a little
    # (its ML estimate is biased low at 30 trials a level). With 100 resamples the threshold
    # fell to 0.91-0.92, too near the 0.90 floor. 200 data sets: binomial SE 0.015.
    rng = np.random.default_rng(2026)
    hits = np.array([[fit["threshold_lo"] <= 0.55 <= fit["threshold_hi"],
                      fit["width_lo"] <= 0.4 <= fit["width_hi"]]
                     for fit in (P.fit_psychometric(simulate(rng), "level", rng=rng, n_boot=200)
                                 for _ in range(200))])
    assert 0.90 <= hits[:, 0].mean() <= 0.99
    assert 0.85 <= hits[:, 1].mean() <= 0.99


def test_pooled_fit_resamples_participants():
    rng = np.random.default_rng(5)
    parts = [simulate(rng, threshold=0.55 + rng.normal(0, 0.08), n_per_level=10).assign(subject_id=s)
             for s in range(16)]
    data = pd.concat(parts, ignore_index=True).assign(observer="people")
    table = P.psychometric_table(data, "level", by=("observer",), subject="subject_id",
                                 rng=rng, n_boot=200)
    assert len(table) == 17 and list(table["subject_id"])[-1] == "pooled"
    pooled, naive = table.iloc[-1], P.fit_psychometric(data, "level", rng=rng, n_boot=200)
    assert pooled["n_clusters"] == 16 and pooled["threshold"] == naive["threshold"]
    # participants differ, so the cluster interval is wider than the trial-resampling one
    assert pooled["threshold_hi"] - pooled["threshold_lo"] > naive["threshold_hi"] - naive["threshold_lo"]
    assert pooled["threshold_lo"] < 0.55 < pooled["threshold_hi"]


def test_participant_at_ceiling_gets_a_status_not_a_number():
    rng = np.random.default_rng(6)
    good = simulate(rng).assign(subject_id="a")
    ceiling = good.assign(subject_id="b", correct=1.0)
    table = P.psychometric_table(pd.concat([good, ceiling]), "level", by=(), subject="subject_id",
                                 rng=rng, n_boot=50)
    row = table.set_index("subject_id").loc["b"]
    assert "does not vary" in row["status"] and np.isnan(row["threshold"])


def test_vlm_label_orders_averaged_and_fitted_as_fractions():
    rng = np.random.default_rng(8)
    clips = pd.DataFrame({"stimulus_id": np.arange(200), "parameter_value": np.tile(LEVELS, 20),
                          "direction": np.repeat(["forward", "backward"], 100)})
    p_true = P._psychometric_values(0.5, 0.4, -1, clips["parameter_value"], "norm", 0.5, 0.0)
    p_fwd = np.where(clips["direction"] == "forward", p_true, 1 - p_true)
    shift = 0.2 * np.minimum(p_fwd, 1 - p_fwd)  # a label-order bias that averages out
    rows = pd.concat([clips.assign(label_order=o, p_forward=p_fwd + d)
                      for o, d in (("FB", shift), ("BF", -shift))]).assign(observer="vlm")
    per_clip = P.vlm_clip_correct(rows)
    assert (per_clip["n_label_orders"] == 2).all()
    assert np.allclose(per_clip.sort_values("stimulus_id")["p_correct"], p_true, atol=1e-9)
    fit = P.psychometric_table(per_clip, "parameter_value", "p_correct", rng=rng, guess=0.5,
                               n_boot=200).iloc[0]
    assert fit["threshold"] == pytest.approx(0.5, abs=1e-4)  # noiseless: exact recovery


def bump_clips(rng, height=0.0027, location=0.5, sigma=0.15, sd=0.001, per_level=11):
    x = np.repeat(LEVELS, per_level)
    return x, 0.0001 + height * np.exp(-0.5 * ((x - location) / sigma) ** 2) + rng.normal(0, sd, x.size)


def test_tra_peak_location_recovered():
    # Shaped like the TRA paper's restitution sweep (peak +0.27% at 0.5, Table 9).
    rng = np.random.default_rng(9)
    x, tra = bump_clips(rng)
    fit = P.fit_tra_peak(tra, x, rng=rng, n_boot=300)
    assert fit["peak_location_lo"] < 0.5 < fit["peak_location_hi"]
    assert abs(fit["peak_location"] - 0.5) < 0.05
    assert fit["peak_height_pct_lo"] < 0.27 < fit["peak_height_pct_hi"]


def test_flat_random_model_peak_height_ci_includes_zero():
    # A random-init V-JEPA 2 is flat (< 0.01% everywhere, TRA paper Appendix F).
    rng = np.random.default_rng(10)
    x, tra = bump_clips(rng, height=0.0, sd=0.0001)
    data = pd.DataFrame({"model": "random", "scenario": "bouncing_ball",
                         "parameter": "restitution", "parameter_value": x, "tra": tra})
    table = P.tra_peak_table(data, rng=rng, n_boot=300)
    row = table.iloc[0]
    assert row["peak_height_pct_lo"] <= 0 <= row["peak_height_pct_hi"]
    curves = P.normalised_curves(table, keys=("model",))
    assert curves["value_normalised"].isna().all()  # noise is not stretched into a peak


def test_normalised_psychometric_curve_spans_zero_to_one():
    rng = np.random.default_rng(12)
    table = P.psychometric_table(simulate(rng).assign(observer="p1"), "level", rng=rng, n_boot=50)
    curves = P.normalised_curves(table)
    assert curves["value_normalised"].min() == 0 and curves["value_normalised"].max() == 1
    assert (curves["normalisation"] == P.NORMALISATION).all()


@pytest.mark.parametrize("change,message", [
    (lambda d: d.assign(level=0.5), "at least 3 levels"),
    (lambda d: d.assign(correct=1.0), "does not vary"),
    (lambda d: d.assign(correct=d["correct"].where(d.index != 3)), "NaN"),
    (lambda d: d.assign(correct=d["correct"] * 2), r"\[0, 1\]"),
])
def test_bad_psychometric_input_raises(change, message):
    data = change(simulate(np.random.default_rng(1)))
    with pytest.raises(ValueError, match=message):
        P.fit_psychometric(data, "level", rng=np.random.default_rng(0), n_boot=10)


def test_complete_separation_is_flagged_with_no_interval():
    data = pd.DataFrame({"level": np.repeat(LEVELS, 10)})
    data["correct"] = (data["level"] > 0.5).astype(float)
    fit = P.fit_psychometric(data, "level", rng=np.random.default_rng(0), n_boot=50)
    assert fit["at_bound"] and 0.5 < fit["threshold"] < 0.6
    assert np.isnan(fit["threshold_lo"]) and np.isnan(fit["width_hi"])


def test_bad_tra_input_raises():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="at least 4 levels"):
        P.fit_tra_peak(np.zeros(9), np.repeat([0.1, 0.5, 1.0], 3), rng=rng)
    with pytest.raises(ValueError, match="NaN"):
        P.fit_tra_peak(np.r_[np.nan, np.zeros(9)], np.repeat(LEVELS[:5], 2), rng=rng)


def test_published_peaks_are_labelled_published():
    # TRA paper Table 9 (context 12) and Appendix F.
    table = P.published_tra_peaks().set_index("parameter")
    assert (table["source"] == "published").all()
    assert table.loc["restitution", "peak_location"] == 0.5
    assert table.loc["restitution", "peak_tra_pct"] == 0.27
    assert table.loc["damping", ["peak_location", "peak_tra_pct"]].tolist() == [2.0, 0.68]
    assert table.loc["all", ["relation", "peak_tra_pct"]].tolist() == ["<", 0.01]
