"""The report's intervals, mixed models and per-participant signal detection, end to end."""
import csv
import json

import numpy as np
import pytest

from analysis import bootstrap, loading, simulate
from analysis.report import build, output
from analysis.report import stats as report_stats
from bench import null_fpr

N_BOOT = 200


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    spec = simulate.StudySpec(n_participants=14, trials_per_participant=120, n_clips=60,
                              practice_gate_fail_rate=0.0,
                              models={"m-fwd": simulate.Observer(d_prime=0.6, criterion=1.0),
                                      "m-good": simulate.Observer(d_prime=1.8, criterion=0.0)})
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(3)))
    report = build.build_report(data, n_boot=N_BOOT)
    out = tmp_path_factory.mktemp("report")
    output.write_report(report, out)
    return data, report, out


def test_people_get_two_way_intervals_and_models_clip_intervals(built):
    data, report, _ = built
    full = report.tables["aot_overall"].query("subset == 'full'").set_index("observer")
    assert full.loc["human", "ci_method"] == "participant x clip (two-way)"
    assert full.loc["m-fwd", "ci_method"] == "clip" and (full["n_boot"] == N_BOOT).all()
    # The same people resampled by clip only give a narrower interval (the old method).
    people = loading.aot_trials(loading.included(data)).query("subject_kind == 'human'")
    clip_only = bootstrap.cluster_bootstrap_ci(people, scheme="item", n_boot=N_BOOT).iloc[0]
    two_way = full.loc["human"]
    assert (two_way.accuracy_ci_high - two_way.accuracy_ci_low) > \
        (clip_only.accuracy_ci_high - clip_only.accuracy_ci_low)


def test_every_human_model_gap_has_a_paired_interval(built):
    _, report, _ = built
    gap = report.tables["human_model_gap"]
    assert set(gap["model"]) == {"m-fwd", "m-good"} and set(gap["subset"]) == {"full",
                                                                                "benchmark"}
    for m in ("gap_accuracy_points", "gap_d_prime", "gap_criterion"):
        assert ((gap[f"{m}_ci_low"] <= gap[m]) & (gap[m] <= gap[f"{m}_ci_high"])).all()
    full = report.tables["aot_overall"].query("subset == 'full'").set_index("observer")
    row = gap.query("subset == 'full' and model == 'm-fwd'").iloc[0]
    assert row.gap_accuracy_points == pytest.approx(
        100 * (full.loc["human", "accuracy"] - full.loc["m-fwd", "accuracy"]))
    assert (gap["ci_method"] == "participant x clip (two-way)").all()
    cat = report.tables["category_gap"]
    assert {"gap_accuracy_points_ci_low", "gap_accuracy_points_ci_high"} <= set(cat.columns)


def test_method_and_resamples_are_stated_in_html_and_metrics(built):
    _, report, out = built
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["uncertainty"]["n_boot"] == N_BOOT
    assert "two-way" in metrics["uncertainty"]["people"]
    html = (out / "report.html").read_text()
    assert f"percentile bootstraps with {N_BOOT} resamples" in html
    assert "Hautus 1995" in html and "Hautus" in metrics["participant_sdt"]["correction"]
    # What each mixed model was fitted on, in the HTML itself.
    for name in ("rt_lmm", "accuracy_glmm"):
        assert metrics[name]["fitted_on"] in html.replace("&#39;", "'")
    assert "Accuracy GLMM" in html and "accuracy_glmm" in html


def test_per_participant_sdt_section(built):
    _, report, out = built
    summary = report.tables["sdt_participant_summary"].set_index("metric")
    per = report.tables["sdt_by_participant"]
    assert len(per) == 14
    assert summary.loc["d_prime", "mean"] == pytest.approx(per["d_prime"].mean())
    assert summary.loc["criterion", "p_value"] < 0.05  # the simulated forward bias, c = 0.5
    c = summary.loc["criterion"]
    assert c.ci_low < c["mean"] < c.ci_high
    assert "participants" in report.figures
    names = {trace.name for trace in report.figures["participants"].data}
    assert {"m-fwd", "m-good", "participants"} <= names
    assert "Per participant" in (out / "report.html").read_text()


def test_single_direction_cells_are_empty_and_the_codebook_says_why(built):
    _, report, out = built
    by_direction = report.tables["aot_by_direction"]
    assert by_direction[["d_prime", "criterion", "f1_forward", "f1_backward"]].isna().all().all()
    rows = list(csv.DictReader((out / "codebook.csv").open()))
    entry = next(r for r in rows
                 if r["columns"] == "d_prime, criterion" and r["table"] == "aot_by_direction")
    assert "one way" in entry["description"]


def test_two_people_get_a_banner_with_the_minimum_not_numbers(tmp_path):
    # With 2 people the report printed an accuracy interval of -0.29 to 2.10, a d' interval
    # of -11.5 to 16.8 and fitted every model over participants, without a word.
    spec = simulate.StudySpec(n_participants=2, trials_per_participant=60, n_clips=30,
                              practice_gate_fail_rate=0.0,
                              models={"m": simulate.Observer(d_prime=0.6, criterion=1.0)})
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(7)))
    report = build.build_report(data, n_boot=N_BOOT)
    output.write_report(report, tmp_path)
    fits = ("sdt_participant_summary", "rt_answer_speed", "rt_lmm", "accuracy_model",
            "accuracy_glmm")
    reason = "needs at least 5 participants (the study has 2)"
    for name in fits:
        assert name not in report.tables and report.failures[name].startswith(reason), name
    html = (tmp_path / "report.html").read_text()
    assert html.count(f"Not computed: {reason}") == len(fits)
    assert json.loads((tmp_path / "metrics.json").read_text())["rt_lmm"]["not_estimated"]
    people = report.tables["binomial_tests"].set_index("observer").loc["human"]
    assert np.isnan(people.p_value) and people.note.startswith("not estimated")
    # People's rows keep their point estimates, without intervals; the model's keep theirs.
    t = report.tables
    for table in (t["aot_overall"], t["aot_by_category"], t["human_model_gap"],
                  t["category_gap"], t["error_consistency"]):
        two_people = table["ci_method"] == f"not estimated: {reason}"
        cis = [c for c in table.columns if c.endswith(("_ci_low", "_ci_high"))]
        assert two_people.any() and table.loc[two_people, cis].isna().all().all()
    full = t["aot_overall"].set_index("observer")
    assert full.loc["m", "ci_method"].iloc[0] == "clip"
    assert full.loc["m", "accuracy_ci_low"].notna().all()


def test_every_accuracy_interval_lies_in_0_to_1(built):
    _, report, _ = built
    for name, table in report.tables.items():
        for col in [c for c in table.columns if c.startswith("accuracy") and
                    c.endswith(("_ci_low", "_ci_high"))]:
            assert table[col].dropna().between(0, 1).all(), (name, col)
    summary = report.tables["sdt_participant_summary"].set_index("metric")
    assert 0 <= summary.loc["accuracy", "ci_low"] <= summary.loc["accuracy", "ci_high"] <= 1


def test_few_people_all_right_get_no_interval_either():
    # Their draws have no spread, so the interval is an exact bound whose ci_method carries a
    # note; 3 people are still too few for it.
    trials = null_fpr.null_study(3, 10, 0.0, 0.0, np.random.default_rng(1), shift=30.0)
    table = bootstrap.percentile_table(bootstrap.bootstrap_draws(trials, n_boot=100))
    assert "exact (Clopper-Pearson)" in table.loc[0, "ci_method"]
    out = report_stats.few_people_intervals(table, trials)
    assert out.loc[0, "ci_method"] == ("not estimated: needs at least 5 participants "
                                       "(the study has 3)")
    assert np.isnan(out.loc[0, "accuracy_ci_low"]) and np.isnan(out.loc[0, "accuracy_ci_high"])
