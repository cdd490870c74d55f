"""Reaction-time summaries, the log-RT mixed model and the accuracy model."""
import numpy as np
import pandas as pd
import pytest

from analysis import accuracy_model, loading, rt, simulate


@pytest.fixture(scope="module")
def humans():
    spec = simulate.StudySpec(n_participants=24, trials_per_participant=120, n_clips=40,
                              practice_gate_fail_rate=0.0)
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(11)))
    return loading.included(data)


def test_median_rt_by_category_direction_response(humans):
    table = rt.median_rt(humans)
    assert list(table.columns[:3]) == ["category", "direction", "response"]
    one = humans[(humans.direction == "forward") & (humans.response == "F")]
    one = one[one.categories.map(lambda c: "Fall" in c)]
    row = table[(table.category == "Fall") & (table.direction == "forward") & (table.response == "F")]
    assert row.median_rt_ms.iloc[0] == pytest.approx(one.rt_ms.median())


def test_forward_answers_are_faster_as_simulated():
    # Built-in effect: "F" answers 20% faster in log RT (Observer.rt_forward_speedup).
    spec = simulate.StudySpec(n_participants=20, trials_per_participant=100,
                              human=simulate.Observer(rt_forward_speedup=0.2))
    data = loading.included(loading.normalize_trials(
        simulate.simulate_study(spec, np.random.default_rng(1))))
    speed = rt.answer_speed(data).iloc[0]
    assert speed.mean_difference_ms > 50 and speed.p_t < 0.01 and speed.p_wilcoxon < 0.01


def test_mixed_model_uses_documented_subsample_and_recovers_variances(humans):
    table, info = rt.rt_mixed_model(humans, max_subjects=16, max_clips=30)
    assert info["n_subjects"] == 16 and info["n_clips"] == 30
    assert "16 of 24 subjects" in info["subsample"]
    var = table.set_index("term")["coef"]
    # Simulated: subject SD 0.2 (var 0.04), clip SD 0.1 (var 0.01), residual SD ~0.25.
    assert 0.01 < var["var(subject)"] < 0.12
    assert var["var(clip)"] < 0.05
    # The subsample depends only on the ids, not on row order.
    shuffled = humans.sample(frac=1.0, random_state=0)
    a = rt.deterministic_subsample(humans, "subject_id", 16)
    b = rt.deterministic_subsample(shuffled, "subject_id", 16)
    assert set(a.subject_id) == set(b.subject_id) and len(a) == len(b)


def test_accuracy_model_equals_trial_level_gee(humans):
    import statsmodels.api as sm

    table, info = accuracy_model.accuracy_model(humans)
    assert info["n_subjects"] == 24
    coef = table.set_index("term")
    # Reciprocal clips are simulated with a quarter of the sensitivity.
    assert coef.loc["Reciprocal", "coef"] < coef.loc["Fall", "coef"]
    trials = loading.aot_trials(humans)
    cats = [c for c in coef.index if ":" not in c]
    x = pd.DataFrame({c: trials.categories.map(lambda cs, c=c: float(c in cs)) for c in cats})
    back = (trials.direction == "backward").to_numpy(float)
    for c in cats:
        x[f"{c}:backward"] = x[c] * back
    gee = sm.GEE(trials.correct.to_numpy(float), x, groups=pd.factorize(trials.subject_id)[0],
                 family=sm.families.Binomial(), cov_struct=sm.cov_struct.Independence()).fit()
    assert coef.loc[x.columns, "coef"].to_numpy() == pytest.approx(gee.params.to_numpy(), abs=1e-6)
    assert coef.loc[x.columns, "se"].to_numpy() == pytest.approx(gee.bse.to_numpy(), rel=1e-3)
