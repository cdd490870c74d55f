"""The figures of the report and the study page: their numbers and their axes."""
import numpy as np
import pandas as pd
import pytest

from analysis import aot, exclusions, figures, loading, simulate


def test_the_rt_axis_labels_only_round_milliseconds():
    data = pd.DataFrame({"response": ["F", "B"] * 50, "direction": ["forward", "backward"] * 50,
                         "rt_ms": np.linspace(250, 2600, 100)})
    axis = figures.rt_figure(data).layout.yaxis
    assert axis.type == "log"
    assert list(axis.tickvals) == [200, 300, 500, 700, 1000, 1500, 2000, 3000]
    assert list(axis.ticktext) == ["200", "300", "500", "700", "1,000", "1,500", "2,000", "3,000"]


def test_one_trial_gets_an_rt_axis_of_round_values_around_it():
    """A single RT of 1,806.2 ms once drew an axis of 1,805.8-1,806.6 ms."""
    data = pd.DataFrame({"response": ["F"], "direction": ["forward"], "rt_ms": [1806.2]})
    fig = figures.rt_figure(data)
    low, high = (10 ** end for end in fig.layout.yaxis.range)
    assert low == pytest.approx(1806.2 / 1.5) and high == pytest.approx(1806.2 * 1.5)
    assert list(fig.layout.yaxis.tickvals) == [1500, 2000]
    assert [list(trace.y) for trace in fig.data] == [[1806.2]]


def test_without_an_answered_trial_the_rt_axis_spans_300_ms_to_3_s():
    data = pd.DataFrame({"response": [None], "direction": ["forward"], "rt_ms": [np.nan]})
    fig = figures.rt_figure(data)
    assert not fig.data
    assert [10 ** end for end in fig.layout.yaxis.range] == pytest.approx([300, 3000])
    assert fig.layout.annotations[0].text == "no answered trials"


def test_answered_frame_orderings_are_one_violin_beside_the_arrow_of_time_answers():
    data = pd.DataFrame({"trial_type": ["aot", "aot", "frame_order", "frame_order"],
                         "direction": ["forward", "backward", None, None],
                         "response": ["F", None, "[2, 1, 3]", None],
                         "rt_ms": [700.0, 900.0, 4000.0, np.nan]})
    fig = figures.rt_figure(data)
    assert {trace.name: list(trace.y) for trace in fig.data} == {
        "forward / answered F": [700.0], "frame order": [4000.0]}


def test_rts_are_drawn_by_category_and_by_participant():
    spec = simulate.StudySpec(n_participants=6, trials_per_participant=60, n_clips=20)
    humans = loading.included(loading.normalize_trials(
        simulate.simulate_study(spec, np.random.default_rng(3))))
    humans = humans[humans.subject_kind == "human"]
    fig = figures.rt_breakdown_figure(humans)
    answered = humans[humans.response.isin(["F", "B"]) & (humans.rt_ms > 0)]
    by_person = fig.data[-1]
    medians = answered.groupby(answered.subject_id.astype(str)).rt_ms.median()
    assert list(by_person.x) == list(medians.sort_values().index)
    assert np.allclose(by_person.y, medians.sort_values().to_numpy())
    fall = answered[answered.categories.map(lambda c: "Fall" in c)
                    & (answered.direction == "forward")]
    forward = next(t for t in fig.data if t.name == "forward")
    assert forward.y[list(forward.x).index("Fall")] == pytest.approx(fall.rt_ms.median())


def _trials(**columns) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    base = {"subject_id": [f"s{i % 2}" for i in range(n)], "subject_kind": "human",
            "trial_type": "aot", "categories": [["Put"]] * n}
    return loading.normalize_trials(pd.DataFrame({**base, **columns}))


def test_accuracy_bars_are_the_metrics_table_per_direction():
    trials = _trials(source_clip_id=["c1", "c1", "c2", "c2"],
                     direction=["forward", "backward", "forward", "forward"],
                     correct_response=["F", "B", "F", "F"], response=["F", "F", "F", "B"])
    table = aot.aot_metrics(trials, by=["source_clip_id", "direction"])
    fig = figures.accuracy_figure(table, "source_clip_id", "Accuracy per clip")
    bars = {(t.name, x): (y, n) for t in fig.data for x, y, n in zip(t.x, t.y, t.customdata)}
    # By hand: c1 forward 1/1, c1 backward 0/1, c2 forward 1/2.
    assert bars == {("forward", "c1"): (1.0, 1), ("backward", "c1"): (0.0, 1),
                    ("forward", "c2"): (0.5, 2)}
    assert [shape.y0 for shape in fig.layout.shapes] == [0.5]  # chance for two choices
    assert list(fig.layout.yaxis.range) == [0, 1]


def test_frame_ordering_accuracy_has_no_chance_line_and_says_what_it_counts():
    table = pd.DataFrame({"clip": ["c1"], "direction": [figures.FRAME_ORDER_LABEL],
                          "accuracy": [0.5], "n_trials": [2]})
    fig = figures.accuracy_figure(table, "clip", "Accuracy per clip")
    assert not fig.layout.shapes
    assert fig.layout.title.text == "Accuracy per clip (frame ordering: exact order)"


def test_the_flow_draws_a_panel_per_count_it_holds():
    trials = _trials(direction=["forward"] * 4, correct_response=["F"] * 4,
                     response=["F"] * 4, excluded=[True, True, False, False],
                     exclusion_reasons=[["practice_gate"]] * 2 + [[]] * 2)
    flow = exclusions.trial_exclusion_flow(trials)
    fig = figures.flow_figure(flow)
    assert [list(trace.y) for trace in fig.data] == [
        flow["n_participants_remaining"].tolist(), flow["n_trials_remaining"].tolist()]
    assert fig.layout.yaxis.dtick == 1  # two participants: whole numbers on the axis
    people = flow.drop(columns=["n_trials_removed", "n_trials_remaining"])
    assert len(figures.flow_figure(people).data) == 1
