"""Per-participant d' and c, their mean and the forward-bias test, against scipy by hand."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import intervals, participant_sdt


def _person(subject, ff, fb, bf, bb):
    """One participant's trials with these direction x answer counts."""
    correct = ["F"] * (ff + fb) + ["B"] * (bf + bb)
    response = ["F"] * ff + ["B"] * fb + ["F"] * bf + ["B"] * bb
    return pd.DataFrame({"subject_id": subject, "correct_response": correct,
                         "response": response, "trial_type": "aot"})


@pytest.fixture(scope="module")
def people():
    # Hanyu et al. (2023): 9% errors on forward clips, 39% on reversed ones (H = .61,
    # FA = .09 -> d' 1.62, c +0.53); the others vary around it, one with a perfect block.
    counts = [(91, 9, 39, 61), (80, 20, 30, 70), (95, 5, 50, 50), (70, 30, 20, 80),
              (100, 0, 45, 55), (85, 15, 35, 65)]
    return pd.concat([_person(f"p{i}", *c) for i, c in enumerate(counts)], ignore_index=True)


def test_each_participant_by_hand(people):
    table = participant_sdt.participant_sdt(people).set_index("subject_id")
    hanyu = table.loc["p0"]
    # Uncorrected: d' = z(.61) - z(.09) = 1.62, c = +0.53 (AoT-PsyPhyBENCH sec. 3).
    assert hanyu.d_prime_uncorrected == pytest.approx(1.62, abs=0.005)
    assert hanyu.criterion_uncorrected == pytest.approx(0.53, abs=0.005)
    # Log-linear (Hautus 1995): H = (61 + .5) / (100 + 1), FA = (9 + .5) / (100 + 1).
    z_h, z_f = stats.norm.ppf(61.5 / 101), stats.norm.ppf(9.5 / 101)
    assert hanyu.d_prime == pytest.approx(z_h - z_f)
    assert hanyu.criterion == pytest.approx(-(z_h + z_f) / 2)
    perfect = table.loc["p4"]  # no false alarm: FA = 0, so the uncorrected d' is infinite
    assert perfect.extreme and np.isnan(perfect.d_prime_uncorrected)
    assert perfect.d_prime == pytest.approx(stats.norm.ppf(55.5 / 101) - stats.norm.ppf(0.5 / 101))
    assert not table.drop(index="p4")["extreme"].any()


def test_summary_intervals_and_tests_come_from_the_two_way_draws(people):
    # The t interval of two people's accuracy once read -0.29 to 2.10; the interval is now
    # the draws' percentiles (inside the metric's range) and the test inverts it.
    table = participant_sdt.participant_sdt(people)
    draws = {"accuracy": np.linspace(0.55, 0.95, 99), "criterion": np.linspace(-0.1, 0.9, 99)}
    summary = participant_sdt.participant_summary(table, draws=draws,
                                                  pooled={"d_prime": 1.5}).set_index("metric")
    c = summary.loc["criterion"]
    values = table["criterion"].to_numpy()
    assert (c["mean"], c["sd"]) == pytest.approx((values.mean(), values.std(ddof=1)))
    assert (c["ci_low"], c["ci_high"]) == pytest.approx(
        tuple(np.percentile(draws["criterion"], [2.5, 97.5])))
    below_null = (draws["criterion"] <= 0).sum()  # 10 of 99 draws at or below c = 0
    assert c["p_value"] == pytest.approx(2 * (below_null + 1) / 100)
    assert c["ci_method"] == "participant x clip (two-way)"
    acc = summary.loc["accuracy"]
    assert acc["null"] == 0.5 and 0 <= acc["ci_low"] < acc["ci_high"] <= 1
    assert acc["p_value"] == pytest.approx(2 / 100)  # no draw at or below 0.5
    # No draws, no interval or test: the uncorrected values are descriptive.
    unc = summary.loc["d_prime_uncorrected"]
    assert unc["n_participants"] == 5 and np.isnan(unc["ci_low"]) and np.isnan(unc["p_value"])
    assert summary.loc["d_prime", "pooled"] == 1.5


def test_summary_widens_interval_and_test_for_few_units(people):
    # 5 participants: the draws' spread is a z interval with the sample's SD, too narrow;
    # the interval takes t quantiles (df 4) and undoes the (n - 1) / n of a resample.
    table = participant_sdt.participant_sdt(people)
    draws = {"criterion": np.linspace(-0.1, 0.9, 999)}
    few = intervals.FewUnits(df=4.0, shrink=np.sqrt(0.8))
    c = participant_sdt.participant_summary(table, draws=draws, few=few).set_index(
        "metric").loc["criterion"]
    tail = stats.norm.cdf(-stats.t.ppf(0.975, 4) / np.sqrt(0.8))
    assert (c["ci_low"], c["ci_high"]) == pytest.approx(
        tuple(np.percentile(draws["criterion"], [100 * tail, 100 * (1 - tail)])))
    z = stats.norm.isf((2 * ((draws["criterion"] <= 0).sum() + 1) / 1000) / 2)
    assert c["p_value"] == pytest.approx(2 * stats.t.sf(z * np.sqrt(0.8), 4))
    plain = participant_sdt.participant_summary(table, draws=draws).set_index("metric")
    assert c["ci_low"] < plain.loc["criterion", "ci_low"]
    assert c["p_value"] > plain.loc["criterion", "p_value"]
