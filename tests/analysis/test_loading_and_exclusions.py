"""Loading the exported CSV, category views and the exclusion flow."""
import numpy as np
import pytest

from analysis import exclusions, loading, simulate


@pytest.fixture(scope="module")
def study():
    spec = simulate.StudySpec(n_participants=30, trials_per_participant=40,
                              practice_gate_fail_rate=0.2, fast_trial_rate=0.05,
                              ordering_share=0.25, models={"m": simulate.Observer()})
    return simulate.simulate_study(spec, np.random.default_rng(4))


def test_csv_round_trip(study, tmp_path):
    path = tmp_path / "trials.csv"
    loading.write_trials_csv(study, path)
    back = loading.read_trials(path)
    direct = loading.normalize_trials(study)
    assert back["categories"].tolist() == direct["categories"].tolist()
    assert back["extra"].tolist() == direct["extra"].tolist()
    assert back["correct"].equals(direct["correct"])
    assert back["response"].astype(object).tolist() == direct["response"].astype(object).tolist()


@pytest.mark.parametrize("text, message", [
    ("subject_id,response\n1,F\n", "lacks required"),
    ("", "not a readable"),
])
def test_bad_files_are_value_errors(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        loading.read_trials(path)
    with pytest.raises(ValueError, match="not found"):
        loading.read_trials(tmp_path / "missing.csv")


def test_bad_json_cell_is_a_value_error(study):
    broken = study.head(3).copy()
    broken["extra"] = ["{}", "{oops", "{}"]
    with pytest.raises(ValueError, match="invalid JSON"):
        loading.normalize_trials(broken)


def test_explode_and_benchmark_subset(study):
    data = loading.normalize_trials(study)
    exploded = loading.explode_categories(data)
    assert len(exploded) == data["categories"].map(len).sum()
    assert (exploded.groupby(level=0)["category"].apply(list) == data["categories"]).all()
    bench = loading.benchmark_subset(data)
    assert not bench["categories"].map(lambda c: "Reciprocal" in c).any()


def test_exclusion_flow_adds_up(study):
    data = loading.normalize_trials(study)
    flow = exclusions.trial_exclusion_flow(data).set_index("step")
    humans = data[data.subject_kind == "human"]
    assert flow.loc["entered", "n_trials_remaining"] == len(humans)
    assert flow.loc["remaining", "n_trials_remaining"] == (~humans.excluded).sum()
    removed = flow.drop(index=["entered", "remaining"])["n_trials_removed"].sum()
    assert removed == humans.excluded.sum()
    gate = humans[humans.exclusion_reasons.map(lambda r: "practice_gate" in r)]
    assert flow.loc["practice_gate", "n_participants_removed"] == gate.subject_id.nunique()
    assert list(flow.index[:2]) == ["entered", "practice_gate"]
