"""Adaptive (QUEST+) sessions in the TRA-sweep report: fitted by the same fit as fixed
levels, beside the models, with each participant's trial sequence and posterior."""
import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis import loading
from analysis.report import build
from analysis.report import registry as R
from experiments import adaptive
from tests.analysis.test_report_tra import TRUE, _levels, _p_correct, _row, _vlm

TRIALS = 60  # a sweep, per participant


def _adaptive_people(rng, n_people=6, trials=TRIALS):
    rows = []
    levels = _levels()
    for person in range(n_people):
        index = 0
        for scenario, part in levels.groupby("scenario"):
            grid = adaptive.parameter_grid(part["parameter_value"])
            answers = []
            for slot in range(trials):
                level, posterior = adaptive.next_level(grid, answers)
                clip = part.loc[np.isclose(part["parameter_value"], level), "source_clip_id"].iloc[0]
                right = bool(rng.random() < _p_correct(level, TRUE[scenario]))
                direction = C.FORWARD if slot % 2 else C.BACKWARD
                rows.append(_row(f"a{person:02d}", C.HUMAN, clip, direction, right, index, {
                    "adaptive": {"sweep": scenario, "slot": slot, "level": level,
                                 "posterior": posterior}}))
                answers.append((level, right))
                index += 1
    return rows


@pytest.fixture(scope="module")
def built():
    rng = np.random.default_rng(3)
    trials = loading.normalize_trials(pd.DataFrame(_adaptive_people(rng) + _vlm()))
    return build.build_report(trials, n_boot=100, sweep_levels=_levels())


def test_adaptive_people_are_fitted_beside_the_models(built):
    fits = built.tables[R.TRA_SWEEP_FITS]
    for scenario, true in TRUE.items():
        mine = fits[(fits["scenario"] == scenario) & (fits["source"] == "measured")]
        assert {"people", "vlm"} <= set(mine["observer_kind"])
        people = mine[mine["observer_kind"] == "people"].iloc[0]
        step = 0.1 if scenario == "bouncing_ball" else 0.5
        assert abs(people["location"] - true["threshold"]) <= step, (scenario, people["location"])
    participants = built.tables[R.TRA_SWEEP_PARTICIPANTS]
    assert (participants.groupby("scenario")["n_rows"].max() == TRIALS).all()


def test_each_participant_s_sequence_and_posterior_is_tabled_and_drawn(built):
    sequence = built.tables[R.TRA_ADAPTIVE_SEQUENCE]
    assert len(sequence) == 6 * 2 * TRIALS
    first = sequence[sequence["slot"] == 0]
    assert (first["n_answers"] == 0).all()
    last = sequence[sequence["slot"] == TRIALS - 1]
    # the posterior narrows as answers come in
    assert (last["halfwidth_steps"].median() < first["halfwidth_steps"].median())
    assert sequence["correct"].isin([True, False, 1.0, 0.0]).all()
    assert "tra_adaptive_sequences" in built.figures


def test_a_fixed_design_report_has_no_sequence_table():
    rng = np.random.default_rng(1)
    rows = [r for r in _adaptive_people(rng, 1)]
    for r in rows:
        r["extra"] = {}
    tables = build.build_report(loading.normalize_trials(pd.DataFrame(rows)), n_boot=50,
                                sweep_levels=_levels()).tables
    assert R.TRA_ADAPTIVE_SEQUENCE not in tables
