"""Curves of people, VLMs and self-supervised models on one normalised axis
(analysis/shared_axis.py)."""
import numpy as np
import pandas as pd
import pytest

from analysis import probability_curve as V
from analysis import psychometric as P
from analysis import shared_axis as A
from analysis import sweep_fits as S
from analysis import tra_peak as T
from tests.analysis.test_psychometric import simulate
from tests.analysis.test_tra_peak import LEVELS, bump_clips, tra_table


def test_flat_random_model_is_drawn_flat_and_labelled():
    # A random-init V-JEPA 2 is flat (|TRA| < 0.01%, TRA paper Appendix F, Table 5): pure
    # clip noise around 0 is not distinguishable from 0 and not stretched into a peak.
    rng = np.random.default_rng(11)
    x, tra = bump_clips(rng, height=0.0, sd=0.001)
    table = tra_table(rng, {"random": (x, tra - 0.0001)}, n_boot=300)
    row = table.iloc[0]
    assert row["peak_height_pct_lo"] <= 0 <= row["peak_height_pct_hi"]
    assert not row["distinguishable"] and row["level_p"] > 0.05
    curves = A.normalised_curves(table, keys=("model",))
    assert (curves["value_normalised"] == 0).all()
    assert (curves["note"] == "not distinguishable from 0").all()
    assert (curves["normalisation"] == A.NORMALISATIONS["tra"]).all()
    assert "no asymmetry" not in A.NORMALISATIONS["tra"]


def test_constant_tra_is_drawn_not_flattened():
    # Reviewer (tra_null.py): a constant TRA of -0.4% on every level, clip sd 0.1%, has no
    # bump, so the old rule (peak-height interval excludes 0) drew it flat at 0 although its
    # peak-TRA interval excludes 0. Its level means are the curve: all at -1 of the scale.
    rng = np.random.default_rng(1)
    x = np.repeat(LEVELS, 11)
    table = tra_table(rng, {"constant": (x, -0.004 + rng.normal(0, 0.001, x.size))})
    assert table.iloc[0]["distinguishable"]
    curves = A.normalised_curves(table, keys=("model",))
    assert curves["value_normalised"].max() < -0.5  # drawn where it is, below 0
    assert curves["value_normalised"].min() == pytest.approx(-1.0)
    assert list(curves["value"]) == pytest.approx(list(table.iloc[0]["level_means_pct"]))


def test_paper_ball_profile_is_drawn_in_most_noisy_sets():
    # Reviewer (tra_bimodal.py / tra_power.py): the TRA paper's ball profile (Table 9:
    # 0.17, 0.19, 0.27, 0.12, 0.03, 0.01% at restitution 0.1 ... 1.0, interpolated at the 10
    # levels) with clip sd 0.1% and 11 clips a level. The old rule drew it in 18% of sets.
    rng = np.random.default_rng(2)
    points = {0.1: .17, 0.3: .19, 0.5: .27, 0.7: .12, 0.9: .03, 1.0: .01}
    profile = np.interp(LEVELS, list(points), list(points.values())) / 100
    x = np.repeat(LEVELS, 11)
    drawn = []
    for _ in range(20):
        table = tra_table(rng, {"ball": (x, np.repeat(profile, 11) + rng.normal(0, 0.001, x.size))},
                          n_boot=20)
        curve = A.normalised_curves(table, keys=("model",))["value_normalised"]
        drawn.append(curve.abs().max() == pytest.approx(1.0))
    assert np.mean(drawn) >= 0.9


def test_tra_curves_share_the_largest_clear_peak_as_scale():
    rng = np.random.default_rng(13)
    parts = []
    for model, height in (("big", 0.0027), ("small", 0.0009), ("flat", 0.0)):
        x, tra = bump_clips(rng, height=height, sd=0.0001)
        parts.append(pd.DataFrame({"model": model, "scenario": "bouncing_ball",
                                   "parameter": "restitution", "parameter_value": x, "tra": tra}))
    table = T.tra_peak_table(pd.concat(parts), rng=rng, n_boot=200)
    peak = A.normalised_curves(table, keys=("model",)).groupby("model")["value_normalised"].max()
    assert peak["big"] == pytest.approx(1.0)
    # sizes kept relative: level means at the level nearest the peak (0.5)
    assert peak["small"] == pytest.approx(0.0010 / 0.0028, abs=0.08)
    # "flat" still has bump_clips' constant +0.01%, which 110 clips at sd 0.01% resolve
    assert peak["flat"] == pytest.approx(0.0001 / 0.0028, abs=0.02)


def test_normalised_psychometric_curve_spans_zero_to_one():
    rng = np.random.default_rng(12)
    table = P.psychometric_table(simulate(rng).assign(observer="p1"), "level", rng=rng, n_boot=50)
    curves = A.normalised_curves(table)
    assert curves["value_normalised"].min() < 0.01 and curves["value_normalised"].max() > 0.99
    assert (curves["normalisation"] == A.NORMALISATIONS["psychometric"]).all()


def test_near_chance_observer_is_not_stretched():
    # P(correct) 0.503-0.530 (a tiny random VLM on the TRA sweeps): min-max rescaling drew
    # it from 0 to 1; above-chance accuracy 2 P - 1 keeps it within 0.06 of chance.
    rng = np.random.default_rng(14)
    clips = pd.DataFrame({"level": np.repeat(LEVELS, 8), "observer": "vlm"})
    clips["p_correct"] = 0.503 + 0.027 * (clips["level"] - 0.1) / 0.9 + rng.normal(0, 0.003, len(clips))
    table = P.psychometric_table(clips, "level", "p_correct", rng=rng,
                                 fit=V.fit_probability_curve, n_boot=50)
    drawn = A.normalised_curves(table)["value_normalised"]
    assert drawn.min() >= -0.01 and drawn.max() < 0.1


@pytest.mark.parametrize("low,high", [(0.3, 0.7), (0.35, 0.15), (0.5, 0.7)])
def test_vlm_curve_is_drawn_where_it_is(low, high):
    # Reviewer: with the lower asymptote fixed at chance, a VLM rising from 0.3 to 0.7 was
    # drawn from 0 (chance) and one below chance everywhere was drawn at chance; one that
    # levels off at 0.7 was drawn rising to 1. Both asymptotes are now free.
    rng = np.random.default_rng(21)
    clips = pd.DataFrame({"level": np.repeat(LEVELS, 8), "observer": "vlm"})
    clips["p_correct"] = low + (high - low) * S.psychometric_values(
        0.55, 0.3, 1, clips["level"], "norm", 0.0, 0.0) + rng.normal(0, 0.01, len(clips))
    table = P.psychometric_table(clips, "level", "p_correct", rng=rng,
                                 fit=V.fit_probability_curve, n_boot=50)
    drawn = A.normalised_curves(table).set_index("level")["value_normalised"]
    assert drawn.iloc[0] == pytest.approx(2 * low - 1, abs=0.04)
    assert drawn.iloc[-1] == pytest.approx(2 * high - 1, abs=0.04)


def test_a_flat_vlm_is_drawn_at_its_level_without_a_threshold():
    # Reviewer 1: a VLM at P(correct) 0.7 everywhere was refused as "does not vary", so it was
    # never drawn. Reviewer 2: its row then showed a "lapse" of 0.3 and a bootstrap interval.
    rng = np.random.default_rng(22)
    clips = pd.DataFrame({"level": np.repeat(LEVELS, 8), "observer": "vlm"})
    clips["p_correct"] = 0.7 + rng.normal(0, 0.03, len(clips))
    table = P.psychometric_table(clips, "level", "p_correct", rng=rng,
                                 fit=V.fit_probability_curve, n_boot=200)
    row = table.iloc[0]
    assert row["status"] == "flat" and row["interval"] == "none: flat"
    assert row[["threshold", "width", "guess", "lapse"]].isna().all()
    curves = A.normalised_curves(table)
    assert curves["value_normalised"].to_numpy() == pytest.approx(0.4, abs=0.02)
    assert (curves["note"] == A.FLAT_NOTE).all()


def test_a_shallow_but_clear_vlm_curve_is_not_called_flat():
    # Reviewer 2: a hard cut at a span of 0.05 called a step from 0.50 to 0.54, measured on
    # 20 clips a level to +-0.001, "flat"; flatness now comes from the rise's interval.
    rng = np.random.default_rng(23)
    clips = pd.DataFrame({"level": np.repeat(LEVELS, 20), "observer": "vlm"})
    clips["p_correct"] = 0.5 + 0.04 * (clips["level"] > 0.55) + rng.normal(0, 0.005, len(clips))
    row = P.psychometric_table(clips, "level", "p_correct", rng=rng,
                               fit=V.fit_probability_curve, n_boot=200).iloc[0]
    assert row["status"] != "flat" and 0.5 <= row["threshold"] <= 0.6
