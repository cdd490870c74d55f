"""One observer key for every table: (model, revision, setting, label order)."""
import doctest
import importlib

import pandas as pd
import pytest

from analysis import comparisons, diagnostics, human_vs_model, observers, ordering
from analysis.report import build


def model_rows(n=8, **extra):
    """Arrow-of-time rows of model "m" (one session unless ``session_id`` is given)."""
    session = extra.pop("session_id", "run-1")
    orders = extra.pop("label_orders", ["FB"] * n)
    return pd.DataFrame({"subject_id": "m", "subject_kind": "model", "trial_type": "aot",
                         "session_id": session, "correct_response": "F",
                         "extra": [{**extra, "label_order": o} for o in orders]})


def test_settings_revisions_and_label_designs_are_separate_observers():
    data = pd.concat([
        model_rows(setting="zero-shot", label_orders=["FB", "BF"] * 4),  # balanced run
        model_rows(setting="few-shot-4", session_id="run-2"),             # FB only
        model_rows(setting="few-shot-4", session_id="run-3", label_orders=["BF"] * 8),
        model_rows(setting="zero-shot", revision="abc", session_id="run-4",
                   label_orders=["FB", "BF"] * 4),
    ], ignore_index=True)
    keys = observers.observer_keys(data)
    assert keys.loc[0, "label_order"] == "FB+BF"  # a balanced run stays one observer
    # A part is named once it is needed to tell two observers apart, for all of them.
    assert list(observers.observer_ids(data).unique()) == [
        "m / zero-shot / labels FB+BF", "m / few-shot-4 / labels FB",
        "m / few-shot-4 / labels BF", "m / rev abc / zero-shot / labels FB+BF"]
    # Parts that do not tell observers apart are left out of the name.
    one = model_rows(setting="zero-shot")
    assert set(observers.observer_ids(one)) == {"m"}


def test_names_are_minimal_and_people_are_pooled():
    people = pd.DataFrame({"subject_id": ["p1", "p2"], "subject_kind": "human",
                           "trial_type": "aot", "correct_response": "F", "extra": [{}, {}]})
    data = pd.concat([people, model_rows(setting="zero-shot"),
                      model_rows(setting="few-shot-4", session_id="run-2")], ignore_index=True)
    assert list(observers.observer_ids(data)) == \
        ["human", "human"] + ["m / zero-shot"] * 8 + ["m / few-shot-4"] * 8


def test_frame_condition_is_shown_only_where_asked():
    data = pd.concat([model_rows(task_variant="full"),
                      model_rows(task_variant="shuffled")], ignore_index=True)
    assert set(observers.observer_ids(data)) == {"m"}
    assert set(observers.observer_ids(data, frame_condition=True)) == {"m", "m / shuffled"}


def test_people_beside_a_model_with_a_frame_condition_stay_human():
    # Beside model rows with task_variant "full", people's missing variant came back from
    # pandas 3 as NaN and was shown as a condition: "human / nan"; a pair-order run
    # without one read "m / nan".
    people = pd.DataFrame({"subject_id": ["p1", "p2"], "subject_kind": "human",
                           "trial_type": "aot", "correct_response": "F", "extra": [{}, {}]})
    pairs = model_rows(2, setting="zero-shot").assign(trial_type="pair_order")
    data = pd.concat([people, model_rows(setting="zero-shot", task_variant="full"), pairs],
                     ignore_index=True)
    assert set(observers.observer_ids(data, frame_condition=True)) == {"human", "m"}
    table = observers.observer_table(data)
    assert set(table["observer"]) == {"human", "m"}
    assert set(table["label"]) == {"human", "m, zero-shot"}
    assert table["task_variant"].map(lambda v: v is None or v == "full").all()
    assert observers.display_label("m", float("nan"), float("nan")) == "m"


@pytest.mark.parametrize("model, label", [
    ("Qwen/Qwen2.5-VL-7B-Instruct", "Qwen2.5-VL 7B, zero-shot"),
    ("/srv/models/Qwen2-VL-72B-Instruct", "Qwen2-VL 72B, zero-shot"),
    ("C:\\models\\cosmos-reason1-7b\\", "cosmos-reason1 7B, zero-shot"),
    ("gpt-4.1-2025-04-14", "gpt-4.1, zero-shot"),
])
def test_display_label_has_family_size_setting_and_no_folder(model, label):
    out = observers.display_label(model, "zero-shot")
    assert out == label
    assert "/" not in out and "\\" not in out


def test_observer_table_labels():
    data = pd.concat([model_rows(setting="zero-shot"),
                      model_rows(setting="few-shot-4", session_id="run-2")], ignore_index=True)
    data["subject_id"] = "/home/me/ckpt/Qwen2.5-VL-3B-Instruct"
    table = observers.observer_table(data).set_index("setting")
    assert table.loc["few-shot-4", "label"] == "Qwen2.5-VL 3B, few-shot-4"
    assert table.loc["zero-shot", "observer"].endswith(" / zero-shot")


def test_every_grouping_uses_the_one_key():
    # The functions that group observers call analysis.observers, and reports delegate to it.
    data = pd.concat([model_rows(setting="zero-shot"),
                      model_rows(setting="few-shot-4", session_id="run-2")], ignore_index=True)
    data = data.assign(response="F", correct=1.0, source_clip_id="c", stimulus_id="c",
                       direction="forward", categories=[["Fall"]] * 16, block="main",
                       excluded=False, exclusion_reasons=[[]] * 16)
    assert set(build.with_observer(data).observer) == {"m / zero-shot", "m / few-shot-4"}
    assert len(diagnostics.tomato_ratios(data.assign(
        extra=[{**e, "task_variant": "full"} for e in data.extra]))) == 2
    assert set(comparisons.binomial_tests(build.with_observer(data)).observer) == \
        {"m / zero-shot", "m / few-shot-4"}
    assert human_vs_model.per_stimulus_agreement(data).empty  # no people: nothing to pair
    assert ordering.ordering_metrics(data).n_trials.sum() == 0


@pytest.mark.parametrize("name", ["observers", "nonresponse", "comparisons"])
def test_examples(name):
    module = importlib.import_module(f"analysis.{name}")
    assert doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0


def test_a_model_thinking_and_not_thinking_are_two_observers_side_by_side():
    from analysis import aot, pairs

    def run(thinking, session, answer_backward):
        rows = model_rows(n=8, setting="zero-shot", session_id=session, thinking=thinking,
                          tokens_in=100, tokens_out=40 if thinking == "on" else 1,
                          tokens_reasoning=39 if thinking == "on" else 0, model_s=0.5)
        backward = [False, True] * 4
        return rows.assign(
            direction=["backward" if b else "forward" for b in backward],
            correct_response=["B" if b else "F" for b in backward],
            response=["B" if b and answer_backward else "F" for b in backward],
            source_clip_id=[f"c{i // 2}" for i in range(8)],
            stimulus_id=[f"s{i}" for i in range(8)])

    data = pd.concat([run("on", "run-1", False), run("off", "run-2", True)],
                     ignore_index=True)
    data["correct"] = data["response"] == data["correct_response"]
    named = build.with_observer(data)
    assert set(named.observer) == {"m / thinking on", "m / thinking off"}
    metrics = aot.aot_metrics(named, by="observer").set_index("observer")
    assert metrics.loc["m / thinking on", "forward_share"] == 1.0  # deliberation: all F
    assert metrics.loc["m / thinking off", "f1_backward"] == 1.0
    paired = pairs.pair_metrics(named, n_boot=10).set_index("observer")
    assert paired.loc["m / thinking off", "pair_accuracy"] == 1.0
    assert paired.loc["m / thinking on", "pair_accuracy"] == 0.0
    table = observers.observer_table(data).set_index("thinking")
    assert table.loc["on", "label"] == "m, zero-shot, thinking on"
    ledger = diagnostics.ledger_table(named).set_index("observer")
    assert ledger.loc["m / thinking on", "tokens_per_item"] == 140
    assert ledger.loc["m / thinking on", "tokens_per_correct"] == 140 * 8 / 4
    assert ledger.loc["m / thinking off", "tokens_reasoning_per_item"] == 0


def test_a_model_asked_in_another_language_is_an_observer_of_its_own():
    """An English and a Japanese run of one model were one pooled observer, though the docs
    call them two runs the report can compare (outside review)."""
    data = pd.concat([model_rows(setting="zero-shot"),
                      model_rows(setting="zero-shot", session_id="run-2", prompt_language="ja")],
                     ignore_index=True)
    assert set(build.with_observer(data).observer) == {"m", "m / prompts ja"}
    labels = observers.observer_table(data).set_index("observer")["label"]
    assert labels["m / prompts ja"].endswith(", prompts ja") and "prompts" not in labels["m"]


def test_runs_differing_in_any_answer_setting_are_observers_named_by_it():
    """Observers were keyed by a hand list (model, revision, setting, label order, thinking,
    prompt language), so runs at another fps, seed or scoring were pooled (outside review):
    the rest of each run's identity (``extra.run``) is part of the key."""
    run = {"task": "aot", "setting": "zero-shot", "fps": 2.0, "seed": 0, "scoring": "both",
           "task_variant": "full", "build": "ab12"}
    data = pd.concat([
        model_rows(setting="zero-shot", run=run, session_id="a"),
        model_rows(setting="zero-shot", run={**run, "fps": 4.0}, session_id="b"),
        model_rows(setting="zero-shot", run={**run, "seed": 7, "scoring": "logits"},
                   session_id="c"),
        # The frame condition is compared within one observer, not a key part.
        model_rows(setting="zero-shot", run={**run, "task_variant": "shuffled"},
                   session_id="d", task_variant="shuffled"),
    ], ignore_index=True)
    names = observers.observer_ids(data).groupby(data["session_id"]).first().to_dict()
    assert names == {"a": "m / fps 2, scoring both, seed 0", "b": "m / fps 4, scoring both, "
                     "seed 0", "c": "m / fps 2, scoring logits, seed 7",
                     "d": "m / fps 2, scoring both, seed 0"}
    # Rows stored before runs carried their identity take their session's.
    old = model_rows(setting="zero-shot", session_id="b")
    mixed = pd.concat([data, old], ignore_index=True)
    assert observers.observer_ids(mixed).iloc[-1] == names["b"]
