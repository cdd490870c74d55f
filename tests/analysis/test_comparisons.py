"""Binomial tests, McNemar, per-item correlation and Holm, each against scipy/statsmodels."""
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from analysis import bootstrap, comparisons, loading, simulate
from analysis.report import build, output
from bench import null_fpr


def aot_rows(observer, correct, kind="model", items=None, label_order="FB"):
    n = len(correct)
    items = items or [f"c{i}" for i in range(n)]
    return pd.DataFrame({"observer": observer, "subject_id": observer, "subject_kind": kind,
                         "trial_type": "aot", "source_clip_id": items, "stimulus_id": items,
                         "direction": "forward", "correct_response": "F",
                         "response": ["F" if c else "B" for c in correct],
                         "extra": [{"label_order": label_order}] * n})


def test_binomial_test_and_interval_against_scipy_and_statsmodels():
    kept = pd.concat([aot_rows("a", [1] * 31 + [0] * 19), aot_rows("b", [1] * 12 + [0] * 8)])
    out = comparisons.binomial_tests(kept).set_index("observer")
    # Two-sided exact p of a symmetric binomial: 2 P(K >= 31), K ~ Bin(50, 0.5).
    assert out.loc["a", "p_value"] == pytest.approx(2 * stats.binom.sf(30, 50, 0.5))
    low, high = proportion_confint(31, 50, alpha=0.05, method="beta")  # Clopper-Pearson
    assert out.loc["a", "ci_low"] == pytest.approx(low)
    assert out.loc["a", "ci_high"] == pytest.approx(high)
    assert out.loc["b", "accuracy"] == 0.6 and out.loc["b", "n_trials"] == 20


def test_people_are_tested_by_the_two_way_bootstrap():
    # Reference: the two-way draws of analysis.bootstrap from the same generator, and the
    # p-value that inverts their equal-tailed percentile interval.
    trials = null_fpr.null_study(8, 12, 1.0, 0.5, np.random.default_rng(5), shift=0.4)
    row = comparisons.binomial_tests(trials, n_boot=300, rng=np.random.default_rng(1)).iloc[0]
    draws = bootstrap.bootstrap_draws(trials, n_boot=300, rng=np.random.default_rng(1))
    boot = draws.boot["accuracy"][0]
    assert row.observer == "human" and row.unit == "participants x clips" and row.n_units == 8
    # Widened for 8 participants and 12 clips: Welch-Satterthwaite df of the participants'
    # and clips' variance parts, and the bootstrap's (n - 1) / n variance undone.
    right = (trials.response == trials.correct_response).astype(float)
    parts = [(m.var() / len(m), len(m)) for m in
             (right.groupby(trials[c]).mean() for c in ("subject_id", "source_clip_id"))]
    total = sum(v for v, _ in parts)
    df = total ** 2 / sum(v * v / (n - 1) for v, n in parts)
    shrink = np.sqrt(sum(v * (n - 1) / n for v, n in parts) / total)
    tail_q = stats.norm.cdf(-stats.t.ppf(0.975, df) / shrink)
    assert (row.ci_low, row.ci_high) == pytest.approx(
        tuple(np.percentile(boot, [100 * tail_q, 100 * (1 - tail_q)])))
    tail = min((boot <= 0.5).sum(), (boot >= 0.5).sum())
    z = stats.norm.isf(min(1, 2 * (tail + 1) / 301) / 2)
    assert row.p_value == pytest.approx(2 * stats.t.sf(z * shrink, df))
    few = comparisons.binomial_tests(trials[trials.subject_id < "p004"]).iloc[0]
    assert np.isnan(few.p_value) and np.isnan(few.ci_low)
    assert few.note == "not estimated: needs at least 5 participants (the study has 4)"


def test_people_against_chance_hold_their_level_when_clips_vary():
    # A true null with clip SD 1 logit: the t-test over participants (the report's test
    # before) rejected ~20% at alpha 0.05; the full rate table is bench/null_fpr.py.
    rng = np.random.default_rng(0)
    n_sims, rejected, t_rejected = 300, 0, 0
    for _ in range(n_sims):
        trials = null_fpr.null_study(20, 30, 1.0, 0.5, rng)
        p = comparisons.binomial_tests(trials, n_boot=300, rng=rng)["p_value"].iloc[0]
        rejected += p < 0.05
        t_rejected += null_fpr.t_test_p(trials) < 0.05
    rate = stats.binomtest(rejected, n_sims)
    assert rate.proportion_ci().high < 0.09, rejected  # a 5% test, within sampling error
    assert stats.binomtest(t_rejected, n_sims).proportion_ci().low > 0.09  # it was not
    power = [comparisons.binomial_tests(null_fpr.null_study(20, 30, 1.0, 0.5, rng, shift=1.0),
                                        n_boot=300, rng=rng)["p_value"].iloc[0]
             for _ in range(20)]
    assert np.mean(np.array(power) < 0.05) >= 0.8  # and a real effect is still found


def test_people_against_chance_hold_their_level_with_few_people_or_few_clips():
    # The plain percentile bootstrap is a z-test with the sample's SD: 5 people who differ
    # by 1.5 logits, or 6 clips that do, made it reject a true 50% 13-14% of the time.
    rng = np.random.default_rng(3)
    rejected = 0
    for people, clips, person_sd, clip_sd in ((5, 40, 1.5, 0.0), (30, 6, 0.1, 1.5)):
        for _ in range(200):
            trials = null_fpr.null_study(people, clips, clip_sd, person_sd, rng)
            rejected += comparisons.binomial_tests(trials, n_boot=400, rng=rng)[
                "p_value"].iloc[0] < 0.05
    assert rejected / 400 <= 0.08, rejected


def test_a_large_effect_survives_holm_in_a_family_of_50_and_nulls_keep_their_level():
    # With 1000 resamples the count alone cannot show p < 2/1001 (0.011 at df ~10), so Holm
    # over 50 tests (a 0.001 threshold for the smallest) dropped even a huge effect.
    rng = np.random.default_rng(11)
    test = lambda t: comparisons.binomial_tests(t, n_boot=1000, rng=rng)[  # noqa: E731
        "p_value"].iloc[0]
    nulls = np.array([test(null_fpr.null_study(10, 12, 1.0, 0.5, rng)) for _ in range(120)])
    assert stats.binomtest(int((nulls < 0.05).sum()), 120).proportion_ci().high < 0.11
    assert (nulls < 0.002).sum() <= 1  # the extrapolated tail is not handed to nulls
    for _ in range(3):
        effect = test(null_fpr.null_study(10, 12, 1.0, 0.5, rng, shift=2.5))
        family = comparisons.holm(np.r_[effect, nulls[:49]])
        assert family[0] < 0.05, (effect, family[0])
        assert (family[1:] < 0.05).sum() == 0


def test_people_all_right_get_an_exact_bound_not_a_point():
    trials = null_fpr.null_study(6, 10, 0.0, 0.0, np.random.default_rng(2), shift=30.0)
    row = comparisons.binomial_tests(trials, n_boot=300).iloc[0]
    assert row.accuracy == 1 and row.ci_high == 1  # [1, 1] before
    assert row.ci_low == pytest.approx(0.05 ** (1 / 6))  # one-sided, 6 participants
    assert row.note.endswith("exact (Clopper-Pearson) bound over the fewer units (6)")


def _both_label_orders(observer, fb, bf):
    return pd.concat([aot_rows(observer, fb, label_order="FB"),
                      aot_rows(observer, bf, label_order="BF")])


def test_a_models_items_are_clips_not_label_orders():
    # Two label orders of one clip are one item (averaged), not two independent items.
    rng = np.random.default_rng(8)
    fb, bf = rng.random(30) < 0.7, rng.random(30) < 0.65
    kept = _both_label_orders("m", fb, bf)
    row = comparisons.binomial_tests(kept).set_index("observer").loc["m"]
    item = (fb.astype(float) + bf) / 2  # reference: per-item accuracy by hand
    decided = item[item != 0.5]
    ref = stats.binomtest(int((decided > 0.5).sum()), len(decided), 0.5)
    assert row.unit == "items" and row.n_units == 30 and row.n_trials == 60
    assert row.p_value == pytest.approx(ref.pvalue)
    other_fb, other_bf = rng.random(30) < 0.5, rng.random(30) < 0.5
    kept = pd.concat([kept, _both_label_orders("o", other_fb, other_bf)])
    pair = comparisons.mcnemar_tests(kept).iloc[0]
    mine, other = item, (other_fb.astype(float) + other_bf) / 2
    better, worse = int((mine > other).sum()), int((mine < other).sum())
    assert pair.n_items == 30 and (pair.n_only_a, pair.n_only_b) == (better, worse)
    exact = better + worse < comparisons.EXACT_BELOW
    ref = sm_mcnemar([[0, better], [worse, 0]], exact=exact, correction=True)
    assert pair.p_value == pytest.approx(ref.pvalue)


@pytest.mark.parametrize("only_a, only_b", [(10, 2), (3, 0), (0, 0), (30, 14), (40, 41)])
def test_mcnemar_against_statsmodels(only_a, only_b):
    statistic, p, method = comparisons.mcnemar(only_a, only_b)
    table = [[5, only_a], [only_b, 7]]
    exact = only_a + only_b < comparisons.EXACT_BELOW
    ref = sm_mcnemar(table, exact=exact, correction=True)
    assert p == pytest.approx(ref.pvalue) and statistic == pytest.approx(ref.statistic)
    assert method.startswith("exact") == exact


def test_mcnemar_pairs_models_and_settings_on_the_same_items():
    rng = np.random.default_rng(3)
    a, b = rng.random(40) < 0.7, rng.random(40) < 0.45
    kept = pd.concat([aot_rows("m / zero-shot", a), aot_rows("m / few-shot-4", b),
                      aot_rows("other", rng.random(30) < 0.5)])  # shares 30 items
    out = comparisons.mcnemar_tests(kept).set_index(["observer_a", "observer_b"])
    row = out.loc[("m / few-shot-4", "m / zero-shot")]
    assert row.n_items == 40 and row.n_only_a == np.sum(b & ~a) and row.n_only_b == np.sum(a & ~b)
    table = pd.crosstab(b, a).reindex(index=[True, False], columns=[True, False]).to_numpy()
    exact = row.n_only_a + row.n_only_b < comparisons.EXACT_BELOW
    assert row.p_value == pytest.approx(sm_mcnemar(table, exact=exact).pvalue)
    assert out.loc[("m / zero-shot", "other"), "n_items"] == 30


def test_item_correlation_resamples_and_permutes_whole_clips():
    rng = np.random.default_rng(9)
    human = rng.uniform(0.3, 1.0, 120)
    model = (rng.random(120) < human).astype(float)
    clips = np.repeat([f"c{k:02d}" for k in range(60)], 2)
    agreement = pd.DataFrame({"model": "m", "human_accuracy": human, "model_correct": model,
                              "source_clip_id": clips, "direction": ["forward", "backward"] * 60})
    row = comparisons.item_correlations(agreement, n_boot=200,
                                        rng=np.random.default_rng(1)).iloc[0]
    assert row.pearson_r == pytest.approx(stats.pearsonr(human, model).statistic)
    assert (row.n_items, row.n_clips) == (120, 60)
    # Reference: the same clip draws (sorted ids), r recomputed by numpy per resample.
    draws = np.random.default_rng(1).integers(0, 60, (200, 60))
    boot = [np.corrcoef(human.reshape(60, 2)[d].ravel(), model.reshape(60, 2)[d].ravel())[0, 1]
            for d in draws]
    assert (row.r_ci_low, row.r_ci_high) == pytest.approx(tuple(np.percentile(boot, [2.5, 97.5])))
    # The test: the model's answers to each clip (both directions) moved to another clip.
    gen = np.random.default_rng(1)
    gen.integers(0, 60, (200, 60))  # the bootstrap's draws come first
    perms = np.argsort(gen.random((200, 60)), axis=1)
    r = stats.pearsonr(human, model).statistic
    moved = [np.corrcoef(human, model.reshape(60, 2)[perm].ravel())[0, 1] for perm in perms]
    assert row.p_value == pytest.approx((1 + np.sum(np.abs(moved) >= abs(r))) / 201)
    constant = agreement.assign(model_correct=1.0)
    assert "n/a" in comparisons.item_correlations(constant).iloc[0].note


def test_item_correlation_holds_its_level_when_a_clips_directions_are_alike():
    # People and a model unrelated, but each finds a clip's two directions alike (clip SDs
    # 1.5 and 2 logits): the t-test over items took them as independent and rejected ~10%.
    rng = np.random.default_rng(4)
    rejected, n_clips = 0, 100
    for _ in range(300):
        v, w = rng.normal(0, 1.5, n_clips), rng.normal(0, 2.0, n_clips)
        human = rng.binomial(20, 1 / (1 + np.exp(-np.repeat(v, 2)))) / 20
        model = (rng.random(2 * n_clips) < 1 / (1 + np.exp(-np.repeat(w, 2)))).astype(float)
        agreement = pd.DataFrame({"model": "m", "human_accuracy": human,
                                  "model_correct": model,
                                  "source_clip_id": np.repeat(np.arange(n_clips), 2),
                                  "direction": ["forward", "backward"] * n_clips})
        rejected += comparisons.item_correlations(agreement, n_boot=400, rng=rng)[
            "p_value"].iloc[0] < 0.05
    assert rejected / 300 <= 0.075, rejected


def test_holm_against_statsmodels():
    p = np.array([0.01, 0.04, 0.03, 0.005, np.nan, 0.5, 0.2])
    ok = np.isfinite(p)
    out = comparisons.holm(p)
    assert out[ok] == pytest.approx(multipletests(p[ok], method="holm")[1])
    assert np.isnan(out[~ok]).all()


def test_holm_family_spans_tables():
    tables = {"a": pd.DataFrame({"p_value": [0.01, 0.04]}),
              "b": pd.DataFrame({"p_value": [0.03, np.nan]})}
    out, size = comparisons.holm_family(tables)
    expected = multipletests([0.01, 0.04, 0.03], method="holm")[1]
    assert size == 3
    assert list(out["a"].p_holm) + [out["b"].p_holm[0]] == pytest.approx(expected)


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    models = {"good": simulate.Observer(d_prime=1.2, criterion=0.2),
              "chance": simulate.Observer(d_prime=0.0, criterion=0.0)}
    spec = simulate.StudySpec(n_participants=12, trials_per_participant=80, n_clips=40,
                              models=models)
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(11)))
    report = build.build_report(data, n_boot=50)
    out = tmp_path_factory.mktemp("report")
    output.write_report(report, out)
    return report, out


def test_report_has_the_comparisons_with_holm_stated(report_dir):
    report, out = report_dir
    t = report.tables
    for name in ("binomial_tests", "mcnemar_tests", "item_correlation",
                 "text_vs_logit_accuracy", "nonresponse_sensitivity"):
        assert "p_holm" in t[name] or name in ("text_vs_logit_accuracy",
                                               "nonresponse_sensitivity"), name
        assert (out / "tables" / f"{name}.csv").is_file()
    family = [t[n].p_value for n in ("binomial_tests", "mcnemar_tests", "item_correlation")]
    pooled = pd.concat(family).to_numpy(float)
    expected = multipletests(pooled[np.isfinite(pooled)], method="holm")[1]
    holm = pd.concat([t[n].p_holm for n in ("binomial_tests", "mcnemar_tests",
                                            "item_correlation")]).to_numpy(float)
    assert holm[np.isfinite(pooled)] == pytest.approx(expected)
    assert any(f"Holm correction across the family of {len(expected)} tests" in n
               for n in report.notes)
    ec = t["error_consistency"].set_index("observer")
    assert {"kappa_ci_low", "human_ceiling_kappa"} <= set(ec.columns)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["holm"]["family_size"] == len(expected)
    assert {r["observer"] for r in metrics["binomial_tests"]} == {"human", "good", "chance"}
    html = (out / "report.html").read_text()
    assert "Per item: people" in html and "mcnemar_tests" in html
    scatter = report.figures["item_scatter"]
    assert {trace.name for trace in scatter.data if trace.name} == {"good", "chance"}


def test_comparison_tables_show_labels_not_folders():
    models = {"/data/ckpt/Qwen2.5-VL-7B-Instruct": simulate.Observer(),
              "/data/ckpt/Qwen2-VL-2B-Instruct": simulate.Observer(d_prime=0.2)}
    spec = simulate.StudySpec(n_participants=4, trials_per_participant=40, n_clips=30,
                              models=models)
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(2)))
    report = build.build_report(data, n_boot=20)
    pair = report.tables["mcnemar_tests"].iloc[0]
    assert {pair.observer_a, pair.observer_b} == {"Qwen2.5-VL 7B", "Qwen2-VL 2B"}
    for name in ("binomial_tests", "item_correlation", "text_vs_logit_accuracy"):
        shown = report.tables[name].iloc[:, 0].astype(str)
        assert not shown.str.contains("/data").any(), name
