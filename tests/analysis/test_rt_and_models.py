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


def _two_onset_methods(humans, late_ms: float = 16.7):
    """Every other trial timed one refresh late (raf-next, e.g. two sessions in two browsers)."""
    data = humans.copy()
    is_late = np.arange(len(data)) % 2 == 1
    data["onset_method"] = np.where(is_late, "raf-next", "element-timing")
    data.loc[is_late, "rt_ms"] = data.loc[is_late, "rt_ms"] + late_ms
    return data


def test_median_rts_are_never_pooled_across_onset_methods(humans):
    data = _two_onset_methods(humans)
    table = rt.median_rt(data, by=["direction", "response"])
    assert "onset_method" in table.columns and set(table.onset_method) == {
        "raf-next", "element-timing"}
    answered = data[data.response.isin(["F", "B"]) & (data.rt_ms > 0)]
    for (method, direction, response), rows in answered.groupby(
            ["onset_method", "direction", "response"]):
        row = table[(table.onset_method == method) & (table.direction == direction)
                    & (table.response == response)]
        assert row.median_rt_ms.iloc[0] == pytest.approx(rows.rt_ms.median())
    # One method: the table keeps its shape.
    assert "onset_method" not in rt.median_rt(humans, by=["direction", "response"]).columns


def test_the_rt_model_takes_onset_method_as_a_covariate(humans):
    import statsmodels.formula.api as smf

    data = _two_onset_methods(humans, late_ms=40.0)
    table, info = rt.rt_mixed_model(data, max_subjects=24, max_clips=40)
    assert info["formula"].endswith("+ C(onset_method)")
    assert set(info["onset_methods"]) == {"raf-next", "element-timing"}
    coef = table.set_index("term")["coef"]
    assert coef["C(onset_method)[T.raf-next]"] > 0
    # The same fixed effects as statsmodels fits directly on the same trials.
    answered = data[data.response.isin(["F", "B"]) & (data.rt_ms > 0)]
    frame = pd.DataFrame({"log_rt": np.log(answered.rt_ms.astype(float)),
                          "direction": answered.direction.astype(str),
                          "response": answered.response.astype(str),
                          "onset_method": answered.onset_method,
                          "subject": answered.subject_id.astype(str),
                          "clip": answered.source_clip_id.astype(str), "all": 1})
    direct = smf.mixedlm("log_rt ~ C(direction) * C(response) + C(onset_method)", frame,
                         groups="all", vc_formula={"subject": "0 + C(subject)",
                                                   "clip": "0 + C(clip)"}).fit(
        method=["lbfgs"], reml=True)
    for term, value in direct.fe_params.items():
        assert coef[term] == pytest.approx(value, rel=1e-4, abs=1e-6)


def test_the_report_says_when_rts_come_from_several_onset_methods(humans):
    from analysis import reports

    report = reports.build_report(_two_onset_methods(humans), n_boot=20)
    assert any("onset_method as a covariate" in note for note in report.notes)
    assert "onset_method" in report.tables["rt_median"].columns
    assert not any("onset" in note for note in reports.build_report(humans, n_boot=20).notes)
