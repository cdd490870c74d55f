"""Frame-ordering metrics against scipy and brute force, and EGO-FLIGHT's conventions."""
import json
from itertools import permutations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from analysis import ordering, simulate


def lcs(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


def levenshtein(a, b):
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


perms = st.integers(min_value=2, max_value=8).flatmap(
    lambda n: st.tuples(st.permutations(list(range(1, n + 1))),
                        st.permutations(list(range(1, n + 1)))))


@settings(max_examples=80, deadline=None)
@given(perms)
def test_metrics_match_scipy_and_brute_force(pair):
    true, pred = pair
    s = ordering.score_orders(np.array([true]), np.array([pred])).iloc[0]
    true_pos = [true.index(x) for x in pred]
    # Kendall tau-b is checked against scipy.stats.kendalltau (EGO-FLIGHT uses tau-b).
    assert s.kendall_tau == pytest.approx(kendalltau(true_pos, range(len(pred))).statistic)
    assert s.pairwise_accuracy == pytest.approx((s.kendall_tau + 1) / 2)
    assert s.lcs_ratio == pytest.approx(lcs(true, pred) / len(true))
    assert s.edit_distance == levenshtein(true, pred)
    assert s.mean_abs_distance == pytest.approx(np.mean([abs(p - i) for i, p in enumerate(true_pos)]))
    assert (s.lcs_ratio == 1.0) == (s.exact_match == 1.0) == (list(true) == list(pred))


def test_identity_and_reversal():
    s = ordering.score_orders(np.array([[1, 2, 3, 4]] * 2), np.array([[1, 2, 3, 4], [4, 3, 2, 1]]))
    assert list(s.kendall_tau) == [1.0, -1.0]
    assert list(s.exact_match) == [1.0, 0.0]


def test_invalid_prediction_scores_nan():
    s = ordering.score_orders(np.array([[1, 2, 3]]), np.array([[1, 1, 3]])).iloc[0]
    assert not s.valid and np.isnan(s.kendall_tau)


def test_two_frame_identities_match_ego_flight_tables():
    # EGO-FLIGHT Tables 3-7, "2 Frames", GPT-4o: exact match 0.65 -> MAD 0.35, edit 0.71,
    # LCS 0.82. With two frames a wrong answer is one swap: MAD 1, edit 2, LCS 1/2.
    rows = pd.DataFrame({"trial_type": "frame_order", "extra": [{}] * 100,
                         "correct_response": ["[1, 2]"] * 100,
                         "response": ["[1, 2]"] * 65 + ["[2, 1]"] * 35})
    m = ordering.ordering_metrics(rows).iloc[0]
    assert m.exact_match == pytest.approx(0.65)
    assert m.mean_abs_distance == pytest.approx(0.35)
    assert m.edit_distance == pytest.approx(0.71, abs=0.015)  # table values are rounded
    assert m.lcs_ratio == pytest.approx(0.82, abs=0.015)
    assert m.pairwise_accuracy == pytest.approx(m.exact_match)


def test_hint_frames_are_not_scored():
    # EGO-FLIGHT sec. 4: with hints, "metric evaluation was performed only on the two
    # unsorted frames". Hints at true positions 1 and 3 (presented labels 3 and 1).
    row = pd.DataFrame({"trial_type": ["frame_order"], "extra": [{"hint_frames": [3, 1]}],
                        "correct_response": [json.dumps([3, 2, 1, 4])],
                        "response": [json.dumps([3, 4, 1, 2])]})
    s = ordering.ordering_trial_scores(row).iloc[0]
    assert s.n_frames == 4 and s.n_scored == 2
    assert s.kendall_tau == -1.0 and s.exact_match == 0.0


def test_presentation_features():
    row = pd.DataFrame({"trial_type": ["frame_order"], "extra": [{}],
                        "correct_response": ["[3, 1, 4, 2]"], "response": ["[1, 2, 3, 4]"]})
    s = ordering.ordering_trial_scores(row).iloc[0]
    assert s.true_first_position == 3 and s.true_last_position == 2
    assert s.n_inversions == 3  # (3,1), (3,2), (4,2)


def test_anchoring_and_disorder_are_recovered_from_a_biased_observer():
    spec = simulate.StudySpec(n_participants=40, trials_per_participant=50, ordering_share=1.0)
    data = simulate.simulate_study(spec, np.random.default_rng(3))
    by_first = ordering.ordering_metrics(data, by="true_first_position").set_index(
        "true_first_position")
    # The simulated observer pulls the first-shown frame to the start (EGO-FLIGHT Fig. 3).
    assert by_first.loc[1, "kendall_tau"] > by_first.loc[[2, 3, 4], "kendall_tau"].max() + 0.1
    by_inv = ordering.ordering_metrics(data, by="n_inversions")
    assert by_inv["kendall_tau"].iloc[0] > by_inv["kendall_tau"].iloc[-1]


def test_all_permutations_of_four_average_to_zero_tau():
    perms4 = list(permutations([1, 2, 3, 4]))
    s = ordering.score_orders(np.array([[1, 2, 3, 4]] * 24), np.array(perms4))
    assert s.kendall_tau.mean() == pytest.approx(0.0)


def brute_force_chance(n):
    """Mean Kendall tau, exact match and LCS over every order of n frames (scipy + loops)."""
    truth = list(range(1, n + 1))
    orders = list(permutations(truth))
    tau = np.mean([kendalltau(range(n), [truth.index(x) for x in o]).statistic for o in orders])
    exact = np.mean([list(o) == truth for o in orders])
    lcs_ratio = np.mean([lcs(truth, o) / n for o in orders])
    return tau, exact, lcs_ratio


def test_invalid_orders_follow_the_non_response_policy():
    # One right order, one order with a repeated frame, one timeout (no answer): AoT counts
    # such answers as errors, and so does ordering by default; "excluded" is the old mean.
    rows = pd.DataFrame({"trial_type": "frame_order", "extra": [{}] * 3,
                         "correct_response": ["[1, 2, 3, 4]"] * 3,
                         "response": ["[1, 2, 3, 4]", "[1, 1, 3, 4]", None]})
    error = ordering.ordering_metrics(rows).iloc[0]
    assert error.n_trials == 3 and error.n_valid == 1
    # Error = scored as the reversed order: tau -1 (scipy), no exact match, LCS 1/4.
    rev = kendalltau([3, 2, 1, 0], range(4)).statistic
    assert error.kendall_tau == pytest.approx((1 + 2 * rev) / 3)
    assert error.exact_match == pytest.approx(1 / 3)
    assert error.lcs_ratio == pytest.approx((1 + 2 * lcs([1, 2, 3, 4], [4, 3, 2, 1]) / 4) / 3)
    excluded = ordering.ordering_metrics(rows, policy="excluded").iloc[0]
    assert excluded.kendall_tau == 1.0 and excluded.exact_match == 1.0
    tau, exact, lcs_ratio = brute_force_chance(4)
    chance = ordering.ordering_metrics(rows, policy="chance").iloc[0]
    assert chance.kendall_tau == pytest.approx((1 + 2 * tau) / 3)
    assert chance.exact_match == pytest.approx((1 + 2 * exact) / 3)  # 1/24 each
    assert chance.lcs_ratio == pytest.approx((1 + 2 * lcs_ratio) / 3)


def test_ordering_sensitivity_rows_per_policy():
    spec = simulate.StudySpec(n_participants=6, trials_per_participant=20, ordering_share=1.0)
    data = simulate.simulate_study(spec, np.random.default_rng(1))
    data["observer"] = "human"
    data.loc[:5, "response"] = None  # timeouts the exclusion rules set aside
    data.loc[:5, "excluded"] = True
    data.loc[:5, "exclusion_reasons"] = pd.Series([["timeout"]] * 6)
    data["excluded"] = data["excluded"].astype(bool)
    out = ordering.ordering_sensitivity(data).set_index("policy")
    assert list(out.index) == ["error", "excluded", "chance"]
    kept = data[~data.excluded]
    assert out.loc["excluded", "n_trials"] == len(kept)
    assert out.loc["error", "n_trials"] == len(kept) + 6 and out.loc["error", "n_invalid"] == 6
    assert out.loc["error", "main"] and not out.loc["chance", "main"]
    assert out.loc["error", "kendall_tau"] < out.loc["chance", "kendall_tau"] \
        < out.loc["excluded", "kendall_tau"]
