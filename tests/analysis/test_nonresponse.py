"""One non-response policy for people and models, its sensitivity table, logit accuracy."""
import numpy as np
import pandas as pd
import pytest

from analysis import loading, nonresponse, observers
from analysis.report import build


def trials(subject, kind, responses, truth=None, reasons=None, extra=None):
    n = len(responses)
    truth = truth or ["F", "B"] * (n // 2) + ["F"] * (n % 2)
    reasons = reasons or [[] for _ in range(n)]
    return pd.DataFrame({
        "subject_id": subject, "subject_kind": kind, "trial_type": "aot", "block": "main",
        "session_id": f"{subject}-s1", "session_status": "completed",
        "source_clip_id": [f"c{i}" for i in range(n)],
        "stimulus_id": [f"c{i}/{t}" for i, t in enumerate(truth)],
        "direction": ["forward" if t == "F" else "backward" for t in truth],
        "categories": [["Fall"]] * n, "correct_response": truth, "response": responses,
        "excluded": [bool(r) for r in reasons], "exclusion_reasons": reasons,
        "extra": extra or [{} for _ in range(n)]})


@pytest.fixture
def study():
    # A person with 2 timeouts that the default exclusion rules set aside, one trial lost
    # to a technical failure (never held against them), and a model with 2 unparseable
    # answers: 8 trials each, 5 of the person's answered trials and 4 of the model's right.
    person = trials("p1", "human", ["F", "B", "F", "B", "B", None, None, None],
                    reasons=[[]] * 5 + [["timeout"], ["timeout"], ["technical"]])
    model = trials("m", "model", ["F", "B", "F", "F", "F", "F", None, None])
    return loading.normalize_trials(pd.concat([person, model], ignore_index=True))


def accuracy(study, policy):
    table = nonresponse.policy_metrics(observers.with_observer(study), policy)
    return table.set_index("observer")["accuracy"]


def test_people_and_models_follow_the_same_policy(study):
    # By hand. Person: 4 right of 5 answered (the 5th answer "B" is to a forward clip),
    # 2 timeouts; the technical trial stays out under every policy. Model: 4 right of 6
    # answered, 2 unparseable.
    error, excluded, chance = (accuracy(study, p) for p in ("error", "excluded", "chance"))
    assert error["human"] == pytest.approx(4 / 7) and error["m"] == pytest.approx(4 / 8)
    assert excluded["human"] == pytest.approx(4 / 5) and excluded["m"] == pytest.approx(4 / 6)
    assert chance["human"] == pytest.approx(5 / 7) and chance["m"] == pytest.approx(5 / 8)


def test_default_rules_no_longer_favour_people(study):
    # Before: the person's timeouts were excluded (4/5) while the model's counted (4/8).
    kept = loading.aot_trials(nonresponse.included(study))
    per = kept.groupby("subject_id")["response"].size()
    assert per["p1"] == 7 and per["m"] == 8
    assert nonresponse.DEFAULT_POLICY == "error"


def test_sensitivity_table(study):
    table = nonresponse.sensitivity_table(observers.with_observer(study))
    row = table.set_index(["observer", "policy"])
    assert list(table.policy.unique()) == ["error", "excluded", "chance"]
    assert row.loc[("m", "error"), "main"] and not row.loc[("m", "chance"), "main"]
    assert row.loc[("m", "excluded"), "gap_accuracy_points"] == pytest.approx(
        100 * (4 / 5 - 4 / 6))
    assert row.loc[("human", "error"), "n_nonresponse"] == 2
    # Chance: each non-response is half an F and half a B answer. Model, forward clips
    # c0 c2 c4 c6 answered F F F none -> 3.5 F, 0.5 B; backward c1 c3 c5 c7 answered
    # B F F none -> 2.5 F, 1.5 B. F1_F = 2 * 3.5 / (2 * 3.5 + 2.5 + 0.5).
    assert row.loc[("m", "chance"), "f1_forward"] == pytest.approx(7 / 10)


def test_report_counts_timeouts_back_in_and_the_flow_agrees(study):
    report = build.build_report(study, n_boot=20)
    overall = report.tables["aot_overall"]
    human = overall[(overall.subset == "full") & (overall.observer == "human")].iloc[0]
    assert human.n_trials == 7 and human.accuracy == pytest.approx(4 / 7)
    flow = report.tables["exclusion_flow"]
    assert "timeout" not in set(flow.step)  # counted, so not an exclusion step
    assert any("one policy for both: 'error'" in n for n in report.notes)
    assert report.metrics["non_response"]["policy"] == "error"
    assert {r["policy"] for r in report.metrics["nonresponse_sensitivity"]} == \
        {"error", "excluded", "chance"}
    excluded = build.build_report(study, n_boot=20, non_response="excluded")
    overall = excluded.tables["aot_overall"].set_index(["subset", "observer"])
    assert overall.loc[("full", "m"), "n_trials"] == 6
    with pytest.raises(ValueError, match="policy"):
        build.build_report(study, non_response="chance")  # sensitivity table only


def test_a_person_is_not_dropped_for_timeouts_alone_under_any_policy():
    # The statistician: too_many_timeouts dropped the whole person under every policy,
    # while a model with 30% unparseable answers stayed in. p1 timed out on 3 of 10 trials
    # (excluded as too_many_timeouts on every trial); p2 failed a catch trial as well; the
    # model has 3 unparseable answers of 10. By hand, answered trials right: p1 6 of 7,
    # model 5 of 7.
    ten = ["F", "B"] * 5
    p1 = trials("p1", "human", ten[:7] + [None] * 3,
                reasons=[["too_many_timeouts"]] * 7 + [["timeout", "too_many_timeouts"]] * 3)
    p1.loc[0, "response"] = "B"
    p2 = trials("p2", "human", ten, reasons=[["too_many_timeouts", "catch_failed"]] * 10)
    model = trials("m", "model", ten[:7] + [None] * 3)
    model.loc[0, "response"], model.loc[1, "response"] = "B", "F"
    study = loading.normalize_trials(pd.concat([p1, p2, model], ignore_index=True))
    table = nonresponse.sensitivity_table(observers.with_observer(study))
    row = table.set_index(["observer", "policy"])
    expected = {"error": (6 / 10, 5 / 10, 10), "excluded": (6 / 7, 5 / 7, 7),
                "chance": (7.5 / 10, 6.5 / 10, 10)}
    for policy, (human, model_accuracy, n) in expected.items():
        assert row.loc[("human", policy), "n_subjects"] == 1  # p1 in, p2 out
        assert row.loc[("m", policy), "n_subjects"] == 1
        assert row.loc[("human", policy), "n_trials"] == n == row.loc[("m", policy), "n_trials"]
        assert row.loc[("human", policy), "accuracy"] == pytest.approx(human)
        assert row.loc[("m", policy), "accuracy"] == pytest.approx(model_accuracy)


def test_logit_accuracy_beside_text_accuracy():
    # A model whose text could never be read still has logit scores: its accuracy is not
    # 0.000 but n/a (text) beside the logit accuracy, argmax P(F), computed here directly.
    p = [0.9, 0.2, 0.4, 0.3, 0.5, 0.6]
    truth = ["F", "B", "F", "B", "F", "B"]
    model = trials("m", "model", [None] * 6, truth=truth,
                   extra=[{"p_forward": v, "parse_status": "unparseable"} for v in p])
    person = trials("p1", "human", ["F", "B", "F", "F", "F", "B"], truth=truth)
    data = observers.with_observer(loading.normalize_trials(pd.concat([model, person])))
    out = nonresponse.text_and_logit_accuracy(loading.included(data)).iloc[0]
    said_f = np.array(p) > 0.5
    right = np.where(np.array(p) == 0.5, 0.5, said_f == (np.array(truth) == "F"))
    assert np.isnan(out.text_accuracy) and out.n_answered == 0
    assert out.logit_accuracy == pytest.approx(right.mean())  # 3.5 / 6
    assert out.gap_logit_points == pytest.approx(100 * (5 / 6 - right.mean()))
    assert np.isnan(out.gap_text_points)
    assert "text accuracy n/a: no readable answer in 6 trials" in out.note


def test_logit_accuracy_is_na_without_scores(study):
    out = nonresponse.text_and_logit_accuracy(
        loading.included(observers.with_observer(study))).iloc[0]
    assert out.n_scored == 0 and np.isnan(out.logit_accuracy)
    assert "logit accuracy n/a" in out.note and out.text_accuracy == pytest.approx(4 / 8)
