"""Arrow-of-time metrics against published figures, and their identities."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import aot


def trials_from_counts(ff, fb, bf, bb, fn=0, bn=0, **cols):
    """Trials with the given direction x response counts (n = no answer)."""
    correct = ["F"] * (ff + fb + fn) + ["B"] * (bf + bb + bn)
    response = ["F"] * ff + ["B"] * fb + [None] * fn + ["F"] * bf + ["B"] * bb + [None] * bn
    return pd.DataFrame({"correct_response": correct, "response": response,
                         "trial_type": "aot", **cols})


def test_always_forward_model_matches_qwen2_vl_row():
    # AoT-PsyPhyBENCH Table 2: Qwen2-VL-7B answers F on all 424 items (212 F, 212 B)
    # -> F1_F 66.7, F1_B 0.0, acc 50.0.
    m = aot.aot_metrics(trials_from_counts(ff=212, fb=0, bf=212, bb=0)).iloc[0]
    assert round(100 * m.f1_forward, 1) == 66.7
    assert round(100 * m.f1_backward, 1) == 0.0
    assert round(100 * m.accuracy, 1) == 50.0
    assert m.forward_share == 1.0


def test_gpt4o_counts_reproduce_table2_and_label_bias():
    # AoT-PsyPhyBENCH Table 2: GPT-4o F1_F 65.4, F1_B 24.9, acc 52.6; sec. 6.2: "predicted
    # 87% of clips as Forward". On 212+212 items these are 190 F->F and 33 B->B.
    m = aot.aot_metrics(trials_from_counts(ff=190, fb=22, bf=179, bb=33)).iloc[0]
    assert 100 * m.f1_forward == pytest.approx(65.4, abs=0.3)
    assert 100 * m.f1_backward == pytest.approx(24.9, abs=0.3)
    assert 100 * m.accuracy == pytest.approx(52.6, abs=0.1)
    assert round(100 * m.forward_share) == 87


def test_hanyu_d_prime_and_criterion_by_hand():
    # Hanyu et al. (2023), quoted in AoT-PsyPhyBENCH sec. 3: 9% errors forward, 39% on
    # reversed. "Reversed" as signal: H = 0.61, FA = 0.09;
    # d' = z(.61) - z(.09) = 0.2793 + 1.3408 = 1.62; c = -(0.2793 - 1.3408)/2 = +0.53.
    d, c = aot.sdt_from_rates(0.61, 0.09)
    assert d == pytest.approx(1.62, abs=0.005)
    assert c == pytest.approx(0.53, abs=0.005)
    m = aot.aot_metrics(trials_from_counts(ff=91, fb=9, bf=39, bb=61),
                        correction="none").iloc[0]
    assert (m.d_prime, m.criterion) == pytest.approx((d, c))


def test_loglinear_correction_keeps_perfect_rates_finite():
    m = aot.aot_metrics(trials_from_counts(ff=50, fb=0, bf=0, bb=50)).iloc[0]
    # Hautus (1995): H = 50.5/51, FA = 0.5/51.
    assert m.hit_rate == pytest.approx(50.5 / 51)
    assert np.isfinite(m.d_prime) and m.criterion == pytest.approx(0.0)
    raw = aot.aot_metrics(trials_from_counts(ff=50, fb=0, bf=0, bb=50), correction="none")
    assert np.isinf(raw.d_prime.iloc[0])


def test_timeouts_are_errors_and_not_answers():
    m = aot.aot_metrics(trials_from_counts(ff=8, fb=0, bf=0, bb=8, fn=2, bn=2)).iloc[0]
    assert m.accuracy == pytest.approx(16 / 20)
    assert m.n_answered == 16 and m.forward_share == 0.5


def test_groups_and_multilabel_categories():
    df = trials_from_counts(ff=2, fb=0, bf=1, bb=1, subject_id=["a", "a", "b", "b"],
                            categories=[["Fall", "Diffusion"], ["Fall"], ["Put"], ["Fall"]])
    by_cat = aot.aot_metrics(df, by="category").set_index("category")
    assert by_cat.loc["Fall", "n_trials"] == 3 and by_cat.loc["Diffusion", "n_trials"] == 1
    assert list(aot.aot_metrics(df, by="subject_id").accuracy) == [1.0, 0.5]


def test_unknown_correction_is_a_value_error():
    with pytest.raises(ValueError, match="correction"):
        aot.aot_metrics(trials_from_counts(1, 1, 1, 1), correction="clamp")
    with pytest.raises(ValueError, match="between 0 and 1"):
        aot.sdt_from_rates(1.0, 0.2)


counts = st.integers(min_value=0, max_value=60)


@settings(max_examples=60, deadline=None)
@given(ff=counts, fb=counts, bf=counts, bb=counts)
def test_accuracy_is_weighted_mean_of_class_recalls(ff, fb, bf, bb):
    if ff + fb == 0 or bf + bb == 0:
        return
    m = aot.aot_metrics(trials_from_counts(ff, fb, bf, bb)).iloc[0]
    recall_f, recall_b = ff / (ff + fb), bb / (bf + bb)
    n_f, n_b = ff + fb, bf + bb
    assert m.accuracy == pytest.approx((n_f * recall_f + n_b * recall_b) / (n_f + n_b))
    for f1 in (m.f1_forward, m.f1_backward):
        assert np.isnan(f1) or 0.0 <= f1 <= 1.0
    # F1 is at most 2 * recall / (1 + recall) (precision <= 1).
    assert m.f1_forward <= 2 * recall_f / (1 + recall_f) + 1e-12


@settings(max_examples=60, deadline=None)
@given(ff=counts, fb=counts, bf=counts, bb=counts)
def test_swapping_labels_keeps_d_prime_and_flips_c(ff, fb, bf, bb):
    # Relabel every forward clip as backward and every "F" answer as "B" (and back).
    m = aot.aot_metrics(trials_from_counts(ff, fb, bf, bb)).iloc[0]
    swapped = aot.aot_metrics(trials_from_counts(ff=bb, fb=bf, bf=fb, bb=ff)).iloc[0]
    # Empty (NaN) on both sides when a direction has no clips.
    assert swapped.d_prime == pytest.approx(m.d_prime, nan_ok=True)
    assert swapped.criterion == pytest.approx(-m.criterion, nan_ok=True)
    assert swapped.accuracy == pytest.approx(m.accuracy, nan_ok=True)
    assert swapped.f1_forward == pytest.approx(m.f1_backward, nan_ok=True)


def test_single_direction_rows_leave_two_direction_metrics_empty():
    # A by-direction row has clips of one direction: F1 (precision needs the other
    # direction's answers), d' and c are undefined there, so they are left empty.
    df = trials_from_counts(ff=40, fb=10, bf=20, bb=30)
    df["direction"] = df["correct_response"].map({"F": "forward", "B": "backward"})
    rows = aot.aot_metrics(df, by="direction").set_index("direction")
    for col in ("f1_forward", "f1_backward", "d_prime", "criterion"):
        assert rows[col].isna().all(), col
    assert np.isnan(rows.loc["forward", "hit_rate"]) and np.isnan(rows.loc["backward",
                                                                       "false_alarm_rate"])
    assert rows.loc["forward", "accuracy"] == 0.8 and rows.loc["backward", "accuracy"] == 0.6
    both = aot.aot_metrics(df).iloc[0]
    assert np.isfinite(both.d_prime) and np.isfinite(both.f1_forward)
