"""What fits over participants may claim (an outside psychophysicist's review, /tmp/psy
pooled.py, pooled2.py, misdir.py): adaptive sweeps report the median of participants'
thresholds, not the pooled trials' curve; a participant at chance has no threshold."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import loading
from analysis import participant_thresholds as T
from analysis.report import registry as R
from analysis.report import tra
from experiments import adaptive
from tests.analysis.test_report_tra import _levels, _row

BALL = _levels()[lambda d: d["scenario"] == "bouncing_ball"]
THRESHOLDS = np.linspace(0.3, 0.8, 8)  # the ball's curve falls: easy at low restitution
WIDTH = 0.5


def _p(level, threshold):
    s = WIDTH / (2 * stats.norm.ppf(0.95))
    return 0.5 + 0.48 * stats.norm.cdf(-(level - threshold) / s)


def _people(adaptive_levels: bool, rng, trials=60):
    rows, x = [], BALL["parameter_value"].to_numpy()
    grid = adaptive.parameter_grid(x, -1)
    for person, threshold in enumerate([*THRESHOLDS, None]):
        log_post = np.zeros(grid.threshold.size)
        for slot in range(trials):
            level, said = adaptive.choose(grid, adaptive.normalised(log_post), slot) \
                if adaptive_levels else (x[slot % x.size], None)
            # the last one at chance: right on half the trials, of either direction
            right = bool(rng.random() < _p(level, threshold)) if threshold is not None \
                else slot // 2 % 2 == 0
            log_post = adaptive.updated(grid, log_post, level, right)
            clip = BALL.loc[np.isclose(BALL["parameter_value"], level), "source_clip_id"].iloc[0]
            extra = {"adaptive": {"sweep": "bouncing_ball", "slot": slot, "level": level,
                                  "posterior": said}} if adaptive_levels else {}
            rows.append(_row(f"p{person}", "human", clip, "forward" if slot % 2 else "backward",
                             right, slot, extra))
    trials = loading.normalize_trials(pd.DataFrame(rows))
    return tra.sweep_tables(trials, levels=BALL, n_boot=0, rng=np.random.default_rng(0))


@pytest.fixture(scope="module")
def adaptive_tables():
    return _people(True, np.random.default_rng(5))


def test_an_adaptive_sweep_reports_the_median_of_participants_not_the_pooled_trials(
        adaptive_tables):
    pooled = adaptive_tables[R.TRA_SWEEP_FITS].query("observer_kind == 'people'").iloc[0]
    # the pooled trials' curve of these people was 70 wide, its threshold off the sweep
    assert pooled["status"] == T.MEDIAN and np.isnan(pooled["width"])
    assert "not a population estimate" in pooled["interval"]
    people = adaptive_tables[R.TRA_SWEEP_PARTICIPANTS]
    fitted = people[people["status"] != T.NOT_ABOVE_CHANCE]["threshold"]
    # the one at chance counts as past the easiest level: the median moves one rank down
    assert pooled["location"] == np.median([*fitted, -np.inf])
    assert pooled["location_lo"] <= pooled["location"] <= pooled["location_hi"] or \
        np.isnan(pooled["location_lo"])
    assert abs(pooled["location"] - np.median(THRESHOLDS)) < 0.2
    # no pooled curve is drawn for it
    curves = adaptive_tables[R.TRA_SWEEP_CURVES]
    assert not (curves["subject_id"] == tra.POOLED).any()


def test_a_participant_at_chance_has_no_threshold_in_either_design(adaptive_tables):
    fixed = _people(False, np.random.default_rng(5))
    for tables in (adaptive_tables, fixed):
        people = tables[R.TRA_SWEEP_PARTICIPANTS].set_index("subject_id")
        assert people.loc["p8", "status"] == T.NOT_ABOVE_CHANCE
        assert people.loc["p8", "p_above_chance"] >= T.ALPHA
        assert people.loc["p8", ["threshold_lo", "threshold_hi"]].isna().all()
        assert (people.drop("p8")["status"] != T.NOT_ABOVE_CHANCE).all()
    # the fixed design keeps its pooled fit
    pooled = fixed[R.TRA_SWEEP_FITS].query("observer_kind == 'people'").iloc[0]
    assert pooled["status"] != T.MEDIAN and np.isfinite(pooled["width"])


def test_the_median_s_interval_is_the_order_statistic_one():
    assert np.isnan(T.median_interval(np.arange(5.0))[1])  # 5 values cannot reach 95%
    assert T.median_interval(np.arange(6.0)) == (2.5, 0.0, 5.0)  # 1 - 2/64 = 0.97
    assert T.median_interval(np.arange(20.0))[1:] == (5.0, 14.0)  # binomial(20): j = 6
