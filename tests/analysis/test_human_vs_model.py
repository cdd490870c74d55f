"""Error consistency, per-stimulus agreement and the per-category gap."""
import numpy as np
import pandas as pd
import pytest

from analysis import human_vs_model as hm


def rows(subject, kind, correct, clips=None):
    clips = clips or [f"c{i}" for i in range(len(correct))]
    return pd.DataFrame({"subject_id": subject, "subject_kind": kind, "trial_type": "aot",
                         "source_clip_id": clips, "stimulus_id": clips, "direction": "forward",
                         "categories": [["Fall"]] * len(correct), "correct_response": "F",
                         "response": ["F" if c else "B" for c in correct],
                         "correct": np.array(correct, float)})


def test_kappa_by_hand():
    # Geirhos et al. (2020): c_obs = 3/4 agree; p1 = 0.5, p2 = 0.75 -> c_exp = 0.5;
    # kappa = (0.75 - 0.5) / (1 - 0.5) = 0.5.
    data = pd.concat([rows("h1", "human", [1, 1, 0, 0]), rows("m", "model", [1, 1, 1, 0])])
    out = hm.error_consistency(data).set_index("observer")
    assert out.loc["m", "mean_kappa"] == pytest.approx(0.5)


def test_identical_errors_give_kappa_one_and_shared_stimuli_only():
    data = pd.concat([rows("h1", "human", [1, 0, 1, 0]), rows("h2", "human", [1, 0, 1, 0]),
                      rows("m", "model", [1, 0, 1, 0, 1], clips=["c0", "c1", "c2", "c3", "x"])])
    out = hm.error_consistency(data).set_index("observer")
    assert out.loc["m", "mean_kappa"] == pytest.approx(1.0)
    assert out.loc["m", "median_shared_stimuli"] == 4
    assert out.loc["human-human", "mean_kappa"] == pytest.approx(1.0)


def test_per_stimulus_agreement_and_gap():
    data = pd.concat([rows("h1", "human", [1, 1, 0, 1]), rows("h2", "human", [1, 0, 0, 1]),
                      rows("m", "model", [0, 0, 0, 1])])
    agree = hm.per_stimulus_agreement(data).set_index("stimulus")
    assert agree.loc["c1", "human_accuracy"] == 0.5 and agree.loc["c1", "model_correct"] == 0.0
    gap = hm.category_gap(data).iloc[0]
    assert gap.category == "Fall"
    assert gap.gap_accuracy_points == pytest.approx(100 * (5 / 8 - 1 / 4))
