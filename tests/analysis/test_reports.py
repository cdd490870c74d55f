"""The full report on a simulated study with built-in biases that it must recover."""
import json
import re

import numpy as np
import pytest

from analysis import loading, report_output, reports, simulate

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
    report = reports.build_report(data, n_boot=200)
    out = tmp_path_factory.mktemp("report")
    paths = report_output.write_report(report, out)
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
    assert metrics["rt_lmm"]["n_subjects"] <= 20 and "subsample" in metrics["rt_lmm"]
    assert any("subsample" in note for note in metrics["notes"])


def test_html_is_self_contained(built):
    _, paths, _ = built
    html = paths["html"].read_text()
    # No script is fetched from anywhere (the bundle only mentions its CDN for geo maps).
    assert not re.search(r"<script[^>]*\bsrc=", html)
    assert html.count("plotly.js v") == 1  # the library is embedded once
    for title in ("Per-category performance", "Exclusion flow", "Reaction times",
                  "Frame ordering", "People vs models"):
        assert title in html


def test_model_selection(built):
    data = loading.normalize_trials(simulate.simulate_study(
        simulate.StudySpec(n_participants=3, trials_per_participant=10, models=MODELS),
        np.random.default_rng(0)))
    kept = reports.select_models(data, ["fwd-model"])
    assert set(kept.loc[kept.subject_kind == "model", "subject_id"]) == {"fwd-model"}
    with pytest.raises(ValueError, match="no trials for model"):
        reports.select_models(data, ["gpt-9"])


def test_importing_analysis_stays_light():
    import subprocess
    import sys

    code = ("import sys, analysis, analysis.reports, analysis.columns; "
            "print(sorted(m for m in ('torch', 'plotly', 'statsmodels') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_dashboard_entry_points_take_canonical_trials():
    data = loading.normalize_trials(simulate.simulate_study(
        simulate.StudySpec(n_participants=8, trials_per_participant=40, models=MODELS),
        np.random.default_rng(1)))
    fig = reports.category_figure(data, n_boot=50)
    assert {t.name for t in fig.data} == {"human", "fwd-model", "bwd-model"}
    assert len(reports.bias_figure(data).data[0].x) == 3
    assert reports.exclusion_flow_figure(data).data


def test_model_settings_and_frame_conditions_are_separate_observers():
    data = loading.normalize_trials(simulate.simulate_study(
        simulate.StudySpec(n_participants=2, trials_per_participant=4,
                           models={"m": simulate.Observer()}), np.random.default_rng(0)))
    models = data.subject_kind == "model"
    half = models & (data.index % 2 == 0)
    data.loc[half, "extra"] = [{**e, "setting": "few-shot-4"} for e in data.loc[half, "extra"]]
    observers = set(reports.with_observer(data).observer)
    assert observers == {"human", "m / zero-shot", "m / few-shot-4"}
