"""The report's AoT-PsyPhyBENCH table: our model rows beside the published ones."""
import pandas as pd
import pytest

from analysis.benchmark_reference import benchmark_reference_table
from analysis.report.output import report_to_folder
from experiments.benchmarks import protocol

QWEN2 = "Qwen/Qwen2-VL-7B-Instruct"


def _model_rows(model: str, setting: str, answer) -> pd.DataFrame:
    """A run of ``model`` over a setting's items, answering ``answer(item)``."""
    items = protocol.setting_items(setting)
    return pd.DataFrame({
        "subject_id": model, "subject_kind": "model", "session_id": f"{model}:{setting}",
        "trial_index": range(len(items)), "trial_type": "aot",
        "stimulus_id": [str(i) for i in range(len(items))],
        "source_clip_id": [item.clip_id for item in items],
        "categories": [["Fall"]] * len(items), "direction": [item.direction for item in items],
        "correct_response": [item.answer for item in items],
        "response": [answer(item) for item in items], "excluded": False,
        "extra": [{"item_id": item.item_id, "setting": setting} for item in items]})


def _trials() -> pd.DataFrame:
    always_forward = _model_rows(QWEN2, "zero-shot", lambda item: "F")
    perfect = _model_rows("gpt-4.1", "few-shot-4", lambda item: item.answer)
    # A run on other stimuli (no benchmark item id) stays out of the benchmark table.
    elsewhere = always_forward.head(10).assign(
        subject_id="other-model", extra=[{"setting": "zero-shot"}] * 10)
    return pd.concat([always_forward, perfect, elsewhere], ignore_index=True)


def test_measured_rows_sit_beside_the_published_rows():
    table = benchmark_reference_table(_trials())
    measured = table[table["source"] == "measured"].set_index("model")
    assert set(measured.index) == {QWEN2, "gpt-4.1"}
    # AoT-PsyPhyBENCH Table 2: an always-F model -> F1_F 66.7, F1_B 0.0, acc 50.0, like
    # the published Qwen2-VL-7B row that it is listed beside.
    qwen = measured.loc[QWEN2]
    assert (round(qwen.f1_forward_pct, 1), qwen.f1_backward_pct, qwen.accuracy_pct) \
        == (66.7, 0.0, 50.0)
    assert (qwen.setting, qwen.n_trials) == ("zero-shot", 424)
    assert measured.loc["gpt-4.1", "setting"] == "few-shot-4"
    assert measured.loc["gpt-4.1", "n_trials"] == 420
    neighbours = table[table["model_key"] == "qwen2-vl-7b"]
    assert list(neighbours["label"]) == ["published, not measured", "measured"]
    assert neighbours.iloc[0][["f1_forward_pct", "f1_backward_pct", "accuracy_pct"]].tolist() \
        == [66.7, 0.0, 50.0]


def test_no_benchmark_runs_means_no_table():
    trials = _trials()
    assert benchmark_reference_table(trials[trials["subject_id"] == "other-model"]).empty


def test_the_report_shows_the_table_labelled_published_not_measured(tmp_path):
    paths = report_to_folder(_trials(), tmp_path / "report", n_boot=20)
    html = paths["html"].read_text(encoding="utf-8")
    assert "AoT-PsyPhyBENCH: our runs beside the paper (published, not measured)" in html
    table = pd.read_csv(tmp_path / "report" / "tables" / "benchmark_reference.csv")
    assert set(table["label"]) == {"published, not measured", "measured"}
    published = table[table["label"] == "published, not measured"]
    assert published.loc[published["table"].notna(), "citation"].str.contains("Matta").all()
    # The newest anchor, from a later paper, with its own citation (arXiv:2605.07568).
    later = published[published["table"].isna()].set_index("model_key")
    assert later.loc["han-2026-video-llm", "accuracy_pct"] == 98.1
    assert "2605.07568" in later.loc["han-2026-video-llm", "citation"]


def _two_runs(extra_a: dict, extra_b: dict) -> pd.DataFrame:
    """One model over the zero-shot items twice: run a always right, run b always "F"."""
    right = _model_rows(QWEN2, "zero-shot", lambda item: item.answer)
    forward = _model_rows(QWEN2, "zero-shot", lambda item: "F").assign(
        session_id=f"{QWEN2}:b")
    right["extra"] = [{**e, **extra_a} for e in right["extra"]]
    forward["extra"] = [{**e, **extra_b} for e in forward["extra"]]
    return pd.concat([right, forward], ignore_index=True)


@pytest.mark.parametrize("extra_a, extra_b, names", [
    # two prompt settings of one model
    ({"setting": "zero-shot"}, {"setting": "simple-cot"},
     {"zero-shot": f"{QWEN2} / zero-shot", "simple-cot": f"{QWEN2} / simple-cot"}),
    # one setting, two weights revisions: two observers, though model and setting agree
    ({"setting": "zero-shot", "revision": "aaa"}, {"setting": "zero-shot", "revision": "bbb"},
     {"aaa": f"{QWEN2} / rev aaa", "bbb": f"{QWEN2} / rev bbb"}),
])
def test_runs_of_one_model_are_never_merged(extra_a, extra_b, names):
    table = benchmark_reference_table(_two_runs(extra_a, extra_b))
    measured = table[table["source"] == "measured"]
    assert len(measured) == 2
    assert set(measured["observer"]) == set(names.values())
    by_observer = measured.set_index("observer")
    right, forward = (names[extra_a.get("revision", extra_a["setting"])],
                      names[extra_b.get("revision", extra_b["setting"])])
    # Computed by hand: always right -> 100%; always "F" on 212 F + 212 B items -> 50%,
    # F1_F = 2*212 / (2*212 + 212) = 66.7 (AoT-PsyPhyBENCH Table 2's always-F row).
    assert by_observer.loc[right, "accuracy_pct"] == 100.0
    assert by_observer.loc[forward, "accuracy_pct"] == 50.0
    assert round(by_observer.loc[forward, "f1_forward_pct"], 1) == 66.7
    assert (by_observer["n_trials"] == 424).all()
    assert table.loc[table["source"] == "published", "observer"].isna().all()
