"""Reaction-time summaries, the log-RT mixed model and the accuracy model."""
import warnings

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


def _rt_frame(trials):
    answered = trials[trials.response.isin(["F", "B"]) & (trials.rt_ms > 0)]
    return pd.DataFrame({"log_rt": np.log(answered.rt_ms.astype(float)),
                         "direction": answered.direction.astype(str),
                         "response": answered.response.astype(str),
                         "onset_method": answered.onset_method.astype(str),
                         "subject": answered.subject_id.astype(str),
                         "clip": answered.source_clip_id.astype(str), "all": 1})


def test_mixed_model_fits_every_trial_as_statsmodels_does(humans):
    import statsmodels.formula.api as smf

    table, info = rt.rt_mixed_model(humans)
    frame = _rt_frame(loading.aot_trials(humans))
    assert info["n_obs"] == len(frame) and info["all_data"]
    assert info["n_subjects"] == 24 and info["n_clips"] == 40
    assert f"all {len(frame):,} trials of 24 participants and 40 clips" == info["fitted_on"]
    # statsmodels' REML fit of the same crossed model on the same (all) trials.
    direct = smf.mixedlm(rt.LMM_FORMULA, frame, groups="all",
                         vc_formula={"subject": "0 + C(subject)", "clip": "0 + C(clip)"},
                         use_sparse=True).fit(method=["lbfgs"], reml=True)
    coef = table.set_index("term")
    for term, value in direct.fe_params.items():
        assert coef.loc[term, "coef"] == pytest.approx(value, rel=1e-4, abs=1e-6)
        assert coef.loc[term, "se"] == pytest.approx(direct.bse_fe[term], rel=2e-3)
    # statsmodels names variance components in sorted order: clip, subject.
    assert [coef.loc["var(clip)", "coef"], coef.loc["var(subject)", "coef"]] == \
        pytest.approx(direct.vcomp, rel=1e-2)
    assert coef.loc["var(residual)", "coef"] == pytest.approx(direct.scale, rel=1e-3)
    # Simulated: subject SD 0.2 (var 0.04), clip SD 0.1 (var 0.01), residual SD ~0.25.
    assert 0.01 < coef.loc["var(subject)", "coef"] < 0.12


def test_a_subsample_is_whole_participants_and_says_so(humans):
    table, info = rt.rt_mixed_model(humans, max_subjects=16)
    assert info["n_subjects"] == 16 and not info["all_data"]
    assert "16 of 24 participants" in info["fitted_on"] and "because" in info["fitted_on"]
    # The subsample depends only on the ids, not on row order.
    shuffled = humans.sample(frac=1.0, random_state=0)
    a = rt.deterministic_subsample(humans, "subject_id", 16)
    b = rt.deterministic_subsample(shuffled, "subject_id", 16)
    assert set(a.subject_id) == set(b.subject_id) and len(a) == len(b)


def _gee_design(trials, terms):
    cats = [c for c in terms if ":" not in c]
    x = pd.DataFrame({c: trials.categories.map(lambda cs, c=c: float(c in cs)) for c in cats})
    back = (trials.direction == "backward").to_numpy(float)
    for c in cats:
        x[f"{c}:backward"] = x[c] * back
    return x


def test_accuracy_model_equals_trial_level_gee_with_small_sample_correction(humans):
    import statsmodels.api as sm

    table, info = accuracy_model.accuracy_model(humans)
    assert info["n_subjects"] == 24 and "CR1" in info["method"]
    coef = table.set_index("term")
    # Reciprocal clips are simulated with a quarter of the sensitivity.
    assert coef.loc["Reciprocal", "coef"] < coef.loc["Fall", "coef"]
    trials = loading.aot_trials(humans)
    x = _gee_design(trials, coef.index)
    groups = pd.factorize(trials.subject_id)[0]
    gee = sm.GEE(trials.correct.to_numpy(float), x, groups=groups,
                 family=sm.families.Binomial(), cov_struct=sm.cov_struct.Independence()).fit()
    assert coef.loc[x.columns, "coef"].to_numpy() == pytest.approx(gee.params.to_numpy(), abs=1e-6)
    # statsmodels' cluster-robust errors with its small-sample correction (use_correction:
    # G/(G-1) (N-1)/(N-K)) and t(G - 1) inference, fitted on every trial.
    glm = sm.GLM(trials.correct.to_numpy(float), x, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": True}, use_t=True)
    assert coef.loc[x.columns, "se"].to_numpy() == pytest.approx(glm.bse.to_numpy(), rel=1e-6)
    assert coef.loc[x.columns, "p"].to_numpy() == pytest.approx(glm.pvalues.to_numpy(), rel=1e-5)
    assert coef.loc[x.columns, "ci_low"].to_numpy() == pytest.approx(
        glm.conf_int()[0].to_numpy(), rel=1e-6)
    assert not coef["separated"].any()


def test_separation_is_a_warning_and_an_empty_row_not_an_odds_ratio_of_1e8(humans):
    import statsmodels.api as sm

    data = humans.copy()
    fall_forward = data.categories.map(lambda cs: "Fall" in cs) & (data.direction == "forward")
    data.loc[fall_forward, "response"] = "F"
    data.loc[fall_forward, "correct"] = 1.0
    with pytest.warns(accuracy_model.SeparationWarning, match="Fall"):
        table, info = accuracy_model.accuracy_model(data)
    coef = table.set_index("term")
    # Every forward Fall clip answered right: the plain fit runs off to infinity.
    trials = loading.aot_trials(data)
    x = _gee_design(trials, coef.index)
    plain = sm.GLM(trials.correct.to_numpy(float), x, family=sm.families.Binomial()).fit()
    assert np.exp(plain.params["Fall"]) > 1e6
    assert coef.loc["Fall", "separated"] and np.isnan(coef.loc["Fall", "odds_ratio"])
    assert coef.loc["Fall:backward", "separated"]
    assert any("separation" in w for w in info["warnings"])
    assert not coef.loc["Put", "separated"] and np.isfinite(coef.loc["Put", "odds_ratio"])
    glmm, glmm_info = accuracy_model.crossed_accuracy_model(data)
    assert glmm.set_index("term").loc["Fall", "separated"]
    assert any("separation" in w for w in glmm_info["warnings"])


def test_crossed_glmm_fits_every_trial_up_to_its_cap(humans):
    table, info = accuracy_model.crossed_accuracy_model(humans)
    assert info["all_data"] and info["n_subjects"] == 24 and info["n_clips"] == 40
    coef = table.set_index("term")
    # Conditional (GLMM) and marginal (GEE) log-odds differ by a factor of about
    # sqrt(1 + 0.35 sd^2) (Zeger et al. 1988): close here, with SDs near 0.3.
    gee = accuracy_model.accuracy_model(humans)[0].set_index("term")
    assert coef.loc["Fall", "coef"] == pytest.approx(gee.loc["Fall", "coef"], abs=0.3)
    assert 0.05 < coef.loc["sd(participant)", "coef"] < 1.0
    capped, capped_info = accuracy_model.crossed_accuracy_model(humans, max_trials=1000)
    assert not capped_info["all_data"] and capped_info["n_subjects"] < 24
    assert "participants (evenly spaced by id)" in capped_info["fitted_on"]


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
    table, info = rt.rt_mixed_model(data)
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
    from analysis.report import build

    report = build.build_report(_two_onset_methods(humans), n_boot=20)
    assert any("onset_method as a covariate" in note for note in report.notes)
    assert "onset_method" in report.tables["rt_median"].columns
    assert not any("onset" in note for note in build.build_report(humans, n_boot=20).notes)


def test_glmm_on_a_study_without_errors_says_so(humans):
    # The report once gave "ValueError: zero-size array to reduction ..." as the reason.
    data = humans.assign(response=humans.correct_response, correct=1.0)
    n = len(loading.aot_trials(data))  # every arrow-of-time trial has a category here
    with pytest.raises(accuracy_model.SeparationError,
                       match=rf"no errors: all {n:,} trials were answered correctly, so no "
                             r"log-odds has a finite estimate \(complete separation\)"):
        accuracy_model.crossed_accuracy_model(data)


def test_glmm_method_says_what_the_fit_does(humans):
    # lme4: nAGQ = 1 is the Laplace fit, nAGQ = 0 optimises theta only with beta in PIRLS.
    method = accuracy_model.crossed_accuracy_model(humans, max_trials=1000)[1]["method"]
    assert "nAGQ=0" in method and "PIRLS" in method
    assert "Laplace approximation (lme4 glmer nAGQ=0" not in method


def test_gee_gives_no_standard_error_where_one_participant_informs_a_term(humans):
    # Only the first participant's clips are "Fall": that term's score is 0 in every
    # participant at the estimate, so its clustered variance is 0 up to rounding (the old
    # table: SE 0.009, z = 189, p = 3e-38; the TRA end-to-end study: sqrt of a negative).
    first = humans["subject_id"].iloc[0]
    others = humans["subject_id"] != first
    data = humans.copy()
    data.loc[others, "categories"] = data.loc[others, "categories"].map(
        lambda cats: ["Put" if c == "Fall" else c for c in cats])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", accuracy_model.SeparationWarning)
        table, info = accuracy_model.accuracy_model(data)
    fall = table.set_index("term").loc["Fall"]
    assert np.isfinite(fall["coef"]) and not fall["separated"]
    assert fall[["se", "z", "p", "ci_low", "ci_high"]].isna().all()
    assert "no standard error for Fall: one participant's trials alone inform it" in \
        "; ".join(info["warnings"])
    rest = table[~table["separated"] & (table["term"] != "Fall")]
    assert (rest["se"] > 0.05).all()


def test_a_glmm_that_did_not_converge_reports_why_and_no_numbers(humans):
    # The old fit said "converged" from the optimiser alone and printed what it stopped at.
    from analysis.report import build, output
    from analysis.report import sections as report_sections

    with pytest.raises(accuracy_model.ConvergenceError,
                       match=r"the GLMM did not converge \(optimizer: STOP: TOTAL NO\. OF "
                             r"F,G EVALUATIONS EXCEEDS LIMIT.*\), so no estimate is reported"):
        accuracy_model.crossed_accuracy_model(humans, max_evaluations=2)
    report = build.Report()
    report_sections.fit(report, "accuracy_glmm", accuracy_model.crossed_accuracy_model, humans,
                        max_evaluations=2)
    assert "accuracy_glmm" not in report.tables
    assert report.fit_info["accuracy_glmm"]["failed"].startswith("ConvergenceError: the GLMM "
                                                                 "did not converge")
    html = output.render_html(report, "t")
    section = html[html.index('<section id="accuracy_model">'):]
    assert "Not computed: ConvergenceError: the GLMM did not converge" in section


def test_a_capped_glmm_names_its_subsample_in_its_table(humans):
    table = accuracy_model.crossed_accuracy_model(humans, max_trials=1000)[0]
    fitted_on = table["fitted_on"].unique()
    assert len(fitted_on) == 1 and "of 24 participants (evenly spaced by id)" in fitted_on[0]
    from analysis.report.codebook import codebook_table

    entry = codebook_table().query("columns == 'fitted_on'")["description"].iloc[0]
    assert f"above {accuracy_model.GLMM_MAX_TRIALS:,} trials, a subsample" in entry
    whole = accuracy_model.crossed_accuracy_model(humans)[0]
    assert (whole["fitted_on"] == f"all {len(loading.aot_trials(humans)):,} trials of 24 "
                                  "participants and 40 clips").all()
