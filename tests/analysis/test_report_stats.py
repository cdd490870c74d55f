"""The report's intervals, mixed models and per-participant signal detection, end to end."""
import csv
import json

import numpy as np
import pytest

from analysis import bootstrap, loading, report_output, reports, simulate

N_BOOT = 200


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    spec = simulate.StudySpec(n_participants=14, trials_per_participant=120, n_clips=60,
                              practice_gate_fail_rate=0.0,
                              models={"m-fwd": simulate.Observer(d_prime=0.6, criterion=1.0),
                                      "m-good": simulate.Observer(d_prime=1.8, criterion=0.0)})
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(3)))
    report = reports.build_report(data, n_boot=N_BOOT)
    out = tmp_path_factory.mktemp("report")
    report_output.write_report(report, out)
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
    assert summary.loc["criterion", "p_t"] < 0.05  # the simulated forward bias (c = 0.5)
    c = summary.loc["criterion"]
    assert c.boot_ci_low < c["mean"] < c.boot_ci_high
    assert "participants" in report.figures
    names = {trace.name for trace in report.figures["participants"].data}
    assert {"m-fwd", "m-good", "participants"} <= names
    assert "Per participant" in (out / "report.html").read_text()


def test_single_direction_cells_are_empty_and_the_codebook_says_why(built):
    _, report, out = built
    by_direction = report.tables["aot_by_direction"]
    assert by_direction[["d_prime", "criterion", "f1_forward", "f1_backward"]].isna().all().all()
    rows = list(csv.DictReader((out / "codebook.csv").open()))
    entry = next(r for r in rows if r["columns"] == "d_prime, criterion")
    assert "aot_by_direction" in entry["tables"] and "one way" in entry["description"]
