"""The full report on a simulated study with built-in biases that it must recover."""
import json
import re

import numpy as np
import pytest

from analysis import loading, simulate
from analysis.report import build, output

MODELS = {
    # Forward-biased like most VLMs in AoT-PsyPhyBENCH Table 2 (GPT-4o: 87% Forward).
    "fwd-model": simulate.Observer(d_prime=0.4, criterion=1.2, label_position_bias=0.6),
    # Backward-biased like Cosmos-Reason1 (sec. 6.2).
    "bwd-model": simulate.Observer(d_prime=0.8, criterion=-0.8),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    spec = simulate.StudySpec(n_participants=40, trials_per_participant=150, n_clips=80,
                              ordering_share=0.1, models=MODELS, practice_gate_fail_rate=0.15,
                              human=simulate.Observer(d_prime=1.6, criterion=0.5))
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(7)))
    report = build.build_report(data, n_boot=200)
    out = tmp_path_factory.mktemp("report")
    paths = output.write_report(report, out)
    return report, paths, out


def test_recovers_built_in_biases(built):
    report, _, _ = built
    overall = report.tables["aot_overall"]
    bench = overall[overall.subset == "benchmark"].set_index("observer")
    # People: c = +0.5 built in (Hanyu et al. 2023 report c ~ +0.53).
    assert bench.loc["human", "criterion"] == pytest.approx(0.5, abs=0.12)
    assert bench.loc["human", "d_prime"] == pytest.approx(1.6, abs=0.3)
    assert bench.loc["fwd-model", "forward_share"] > 0.8
    assert bench.loc["bwd-model", "forward_share"] < 0.35
    assert bench.loc["fwd-model", "f1_backward"] < bench.loc["fwd-model", "f1_forward"]
    for obs in bench.index:  # CIs bracket the estimate
        assert bench.loc[obs, "accuracy_ci_low"] <= bench.loc[obs, "accuracy"] \
            <= bench.loc[obs, "accuracy_ci_high"]


def test_recovers_category_effects_and_gap(built):
    report, _, _ = built
    cats = report.tables["aot_by_category"]
    human = cats[cats.observer == "human"].set_index("category")
    # Reciprocal clips are simulated with a quarter of the sensitivity (cf. Table 1: 61.1%
    # vs 81.3-85.1% for the other categories).
    assert human.loc["Reciprocal", "accuracy"] < human.drop("Reciprocal")["accuracy"].min() - 0.05
    gap = report.tables["category_gap"]
    fwd = gap[(gap.model == "fwd-model") & (gap.category != "Reciprocal")]
    assert (fwd.gap_accuracy_points > 5).all()


def test_tables_files_and_metrics(built):
    report, paths, out = built
    for name in ("exclusion_flow", "aot_overall", "aot_by_category", "rt_median", "rt_lmm",
                 "accuracy_model", "error_consistency", "ordering_anchoring", "calibration"):
        assert (out / "tables" / f"{name}.csv").is_file(), name
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n_participants_included"] < metrics["n_participants_entered"]
    assert set(metrics["observers"]) == {"human", "fwd-model", "bwd-model"}
    # The log-RT model is fitted on every trial, and says so.
    assert metrics["rt_lmm"]["all_data"] and "fitted_on" in metrics["rt_lmm"]
    assert any(note.startswith("Log-RT mixed model") for note in metrics["notes"])


def test_html_is_self_contained(built):
    _, paths, _ = built
    html = paths["html"].read_text()
    # No script is fetched from anywhere (the bundle only mentions its CDN for geo maps).
    assert not re.search(r"<script[^>]*\bsrc=", html)
    assert html.count("plotly.js v") == 1  # the library is embedded once
    for title in ("Per-category performance", "Exclusion flow", "Reaction times",
                  "Accuracy by direction of play", "Frame ordering", "People vs models"):
        assert title in html


def test_model_selection(built):
    data = loading.normalize_trials(simulate.simulate_study(
        simulate.StudySpec(n_participants=3, trials_per_participant=10, models=MODELS),
        np.random.default_rng(0)))
    kept = build.select_models(data, ["fwd-model"])
    assert set(kept.loc[kept.subject_kind == "model", "subject_id"]) == {"fwd-model"}
    with pytest.raises(ValueError, match="no trials for model"):
        build.select_models(data, ["gpt-9"])


def test_importing_analysis_stays_light():
    import subprocess
    import sys

    code = ("import sys, analysis, analysis.report.build, analysis.columns; "
            "print(sorted(m for m in ('torch', 'plotly', 'statsmodels') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_model_settings_and_frame_conditions_are_separate_observers():
    data = loading.normalize_trials(simulate.simulate_study(
        simulate.StudySpec(n_participants=2, trials_per_participant=4,
                           models={"m": simulate.Observer()}), np.random.default_rng(0)))
    models = data.subject_kind == "model"
    half = models & (data.index % 2 == 0)
    data.loc[half, "extra"] = [{**e, "setting": "few-shot-4"} for e in data.loc[half, "extra"]]
    observers = set(build.with_observer(data).observer)
    assert observers == {"human", "m / zero-shot", "m / few-shot-4"}


def _small_study(models=None, ordering_share=0.0, seed=5, **spec):
    return simulate.simulate_study(simulate.StudySpec(
        n_participants=6, trials_per_participant=40, n_clips=20, models=models or {},
        ordering_share=ordering_share, practice_gate_fail_rate=0.0, fast_trial_rate=0.0,
        **spec),
        np.random.default_rng(seed))


def test_reported_n_is_the_analysed_n():
    """The flow said 1,558 remaining where 1,414 trials were analysed: practice and catch
    trials were counted (and metrics.json's n_trials_included held 48 catch trials)."""
    data = _small_study(models={"m": simulate.Observer()})
    people = data["subject_kind"] == "human"
    first = people & (data["trial_index"] < 4)
    data.loc[first, "block"] = "practice"
    catch = people & (data["trial_index"].isin([10, 20]))
    data.loc[catch, "trial_type"] = "catch"
    data.loc[people & (data["subject_id"] == "p00005"), "session_status"] = "in_progress"
    report = build.build_report(loading.normalize_trials(data), n_boot=20)

    flow = report.tables["exclusion_flow"]
    overall = report.tables["aot_overall"].set_index(["subset", "observer"])
    analysed = overall.loc[("full", "human"), "n_trials"]
    assert flow["n_trials_remaining"].iloc[-1] == analysed == report.metrics["n_trials_included"]
    assert report.metrics["n_trials_entered"] == people.sum()
    assert list(flow["step"].iloc[-4:]) == ["session_not_completed", "practice_trials",
                                            "catch_trials", "remaining"]
    steps = flow.set_index("step")
    assert steps.loc["session_not_completed", "n_trials_removed"] == 40
    assert steps.loc["catch_trials", "n_trials_removed"] == 2 * 5  # left-out session charged
    assert report.metrics["n_participants_included"] == 5


def test_observers_are_labelled_by_short_name_never_a_local_path(tmp_path):
    local = "/home/alice/checkpoints/Qwen2.5-VL-7B-Instruct"
    data = _small_study(models={local: simulate.Observer(), "gpt-4o-2024-11-20":
                                simulate.Observer(d_prime=0.3)})
    report = build.build_report(loading.normalize_trials(data), n_boot=20)
    paths = output.write_report(report, tmp_path)
    observers = set(report.tables["aot_overall"]["observer"])
    assert observers == {"human", "Qwen2.5-VL 7B", "gpt-4o"}
    assert report.metrics["models"] == ["Qwen2.5-VL 7B", "gpt-4o"]
    for path in [paths["html"], paths["metrics"], *paths["tables"]]:
        assert "/home/alice" not in path.read_text(encoding="utf-8"), path.name


def test_models_whose_short_names_clash_keep_the_parts_that_differ():
    data = _small_study(models={"/runs/a/checkpoint-500": simulate.Observer(),
                                "/runs/b/checkpoint-500": simulate.Observer()})
    report = build.build_report(loading.normalize_trials(data), n_boot=20)
    assert set(report.tables["aot_by_subject"]["subject_id"]) >= {"a/checkpoint-500",
                                                                  "b/checkpoint-500"}


def test_the_subset_column_comes_first():
    report = build.build_report(loading.normalize_trials(_small_study()), n_boot=20)
    overall = report.tables["aot_overall"]
    assert overall.columns[0] == "subset" and set(overall["subset"]) == {"full", "benchmark"}


def test_a_frame_ordering_report_has_no_arrow_of_time_section(tmp_path):
    data = _small_study(ordering_share=1.0, models={})
    assert set(data["trial_type"]) == {"frame_order"}
    report = build.build_report(loading.normalize_trials(data), n_boot=20)
    assert not [name for name in report.tables if name.startswith("aot_")]
    for name, table in report.tables.items():
        assert not {"f1_forward", "f1_backward", "forward_share"} & set(table.columns), name
    html = output.write_report(report, tmp_path)["html"].read_text()
    assert "Arrow of time: accuracy" not in html and 'id="subjects"' not in html
    assert "Frame ordering" in html
    # The notes speak of what the report has: no d'/c, no arrow-of-time sensitivity table.
    notes = " ".join(report.notes)
    assert "d'" not in notes and "d′" not in notes
    assert "nonresponse_sensitivity" not in report.tables
    assert "ordering_nonresponse_sensitivity give" in notes
    assert " nonresponse_sensitivity" not in notes


def test_the_sections_built_in_a_second_process_give_the_same_report():
    """Large studies build the sections that draw nothing from the report's generator in a
    forked process (build.PARALLEL_FROM_TRIALS); the report must not depend on it."""
    import pandas as pd

    spec = simulate.StudySpec(n_participants=12, trials_per_participant=60, n_clips=30,
                              ordering_share=0.2, models=MODELS)
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(3)))
    alone, forked = (build.build_report(data, n_boot=50, parallel=p) for p in (False, True))
    assert list(alone.tables) == list(forked.tables)
    for name, table in alone.tables.items():
        pd.testing.assert_frame_equal(table, forked.tables[name], obj=name)
    assert alone.notes == forked.notes and alone.failures == forked.failures
    assert json.dumps(alone.fit_info, default=str) == json.dumps(forked.fit_info, default=str)


def test_a_section_failing_in_the_second_process_is_raised_not_lost(monkeypatch):
    from analysis.report import pairs

    def broken(*args, **kwargs):
        raise KeyError("a column the pair metrics need")

    monkeypatch.setattr(pairs, "add_pair_tables", broken)
    data = loading.normalize_trials(_small_study())
    with pytest.raises(RuntimeError, match="a column the pair metrics need"):
        build.build_report(data, n_boot=20, parallel=True)


def test_a_multi_day_study_has_a_table_by_session_number():
    # Issue 28: a two-session study's report had no table by session number.
    data = _small_study()
    people = data["subject_kind"] == "human"
    second = people & (data["trial_index"] >= 20)
    data.loc[second, "session_number"] = 2
    data.loc[second, "session_id"] = data.loc[second, "subject_id"] + "-s2"
    report = build.build_report(loading.normalize_trials(data), n_boot=20)
    table = report.tables["aot_by_session_number"].set_index(["observer", "session_number"])
    assert list(table.index) == [("human", 1), ("human", 2)]
    assert table["n_trials"].sum() == report.tables["aot_overall"].set_index(
        ["subset", "observer"]).loc[("full", "human"), "n_trials"]
    assert (table.loc[("human", 2), "n_trials"]
            == (data.loc[second, "block"] == "main").sum())


def test_a_failure_beside_the_second_process_stops_it(monkeypatch):
    """A section of the main process that raises left the forked one running, blocked on a
    pipe nobody would read (outside review): it is stopped, and the error raised."""
    import multiprocessing

    def broken(*args, **kwargs):
        raise KeyError("a column the comparisons need")

    monkeypatch.setattr(build, "add_comparison_tables", broken)
    data = loading.normalize_trials(_small_study())
    with pytest.raises(KeyError, match="a column the comparisons need"):
        build.build_report(data, n_boot=20, parallel=True)
    assert multiprocessing.active_children() == []
