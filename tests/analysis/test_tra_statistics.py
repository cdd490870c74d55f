"""TRA statistics in the shape of the TRA paper's tables."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import tra


def test_tra_definition():
    # TRA paper eq. 1: (L(reversed) - L(forward)) / L(forward).
    assert tra.tra_values([2.0], [2.01])[0] == pytest.approx(0.005)
    with pytest.raises(ValueError):
        tra.tra_values([0.0], [1.0])


def test_process_table_is_welch_t_test():
    rng = np.random.default_rng(0)
    low, dis = rng.normal(0.0003, 0.001, 80), rng.normal(0.0022, 0.001, 80)
    data = pd.DataFrame({"model": "vjepa2", "context_frames": 8, "tra": np.r_[low, dis],
                         "process": ["low_dissipation"] * 80 + ["dissipative"] * 80,
                         "scenario": ["ball"] * 40 + ["pendulum"] * 40 + ["falling"] * 40
                         + ["dominos"] * 40})
    row = tra.tra_process_table(data).iloc[0]
    t, p = stats.ttest_ind(dis, low, equal_var=False)
    assert row.t == pytest.approx(t) and row.p == pytest.approx(p)
    assert row.difference_pct == pytest.approx(100 * (dis.mean() - low.mean()))
    scen = tra.tra_scenario_table(data)
    assert len(scen) == 4 and set(scen.columns) >= {"scenario", "tra_pct", "t", "p"}


def test_parameter_table_marks_the_paper_peaks():
    # TRA paper Table 9: ball peaks at restitution 0.5 (+0.27%), pendulum at damping 2.0.
    ball = {0.1: 0.17, 0.3: 0.19, 0.5: 0.27, 0.7: 0.12, 0.9: 0.03, 1.0: 0.01}
    pend = {0.0: 0.05, 0.5: 0.18, 1.0: 0.31, 2.0: 0.68, 5.0: 0.42}
    rows = [("ball", "restitution", k, v / 100) for k, v in ball.items()] + \
        [("pendulum", "damping", k, v / 100) for k, v in pend.items()]
    data = pd.DataFrame(rows, columns=["scenario", "parameter", "parameter_value", "tra"])
    out = tra.tra_parameter_table(data)
    peaks = out[out.is_peak].set_index("scenario").parameter_value
    assert peaks["ball"] == 0.5 and peaks["pendulum"] == 2.0


def test_unknown_process_is_rejected():
    with pytest.raises(ValueError, match="process"):
        tra.tra_process_table(pd.DataFrame({"process": ["elastic"], "tra": [0.1]}))


def test_zero_variance_scenario_prints_infinite_t_as_the_paper():
    # TRA paper Table 8: dominos, TRA +0.47%, t = inf, p < 0.001 (every clip the same TRA).
    data = pd.DataFrame({"model": "vjepa2", "context_frames": 12, "scenario": "dominos",
                         "process": "dissipative", "tra": [0.0047] * 40})
    row = tra.tra_scenario_table(data).iloc[0]
    assert row.t == np.inf and row.p == 0.0 and row.tra_pct == pytest.approx(0.47)
    negative = tra.tra_scenario_table(data.assign(tra=-0.0047)).iloc[0]
    assert negative.t == -np.inf and negative.p == 0.0
    assert np.isnan(tra.tra_scenario_table(data.assign(tra=0.0)).iloc[0].t)  # 0 / 0
    # Where values vary, the test is scipy's one-sample t-test against 0.
    varied = data.assign(tra=np.linspace(0.001, 0.009, 40))
    t, p = stats.ttest_1samp(varied.tra, 0.0)
    row = tra.tra_scenario_table(varied).iloc[0]
    assert row.t == pytest.approx(t) and row.p == pytest.approx(p)


def test_welch_with_two_constant_groups_is_infinite():
    data = pd.DataFrame({"model": "m", "tra": [0.0022] * 10 + [0.0003] * 10,
                         "process": ["dissipative"] * 10 + ["low_dissipation"] * 10})
    row = tra.tra_process_table(data).iloc[0]
    assert row.t == np.inf and row.p == 0.0 and row.cohens_d == np.inf


def test_report_shows_infinity_as_the_paper_prints_it():
    from analysis.report import output

    assert output._number(np.inf) == "∞" and output._number(-np.inf) == "−∞"
    assert output._number(0.12345) == "0.123"
