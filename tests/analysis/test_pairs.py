"""Pair accuracy and pair consistency (analysis.pairs) and their report section, checked
against values computed by hand."""
import json

import numpy as np
import pandas as pd
import pytest

from analysis import bootstrap, loading, pairs, simulate
from analysis.report import build, output


def _trial(subject, clip, truth, answer, kind="human", trial_type="aot", extra=None,
           categories=("Fall",)):
    return {"subject_id": subject, "subject_kind": kind, "trial_type": trial_type,
            "source_clip_id": clip, "correct_response": truth, "response": answer,
            "categories": list(categories), "extra": extra or {}}


def _hand_table() -> pd.DataFrame:
    rows = [
        # p1: a both right; b forward-biased; c both wrong but told apart; d unpaired;
        # e a timeout on the reversed copy.
        _trial("p1", "a", "F", "F"), _trial("p1", "a", "B", "B"),
        _trial("p1", "b", "F", "F"), _trial("p1", "b", "B", "F"),
        _trial("p1", "c", "F", "B", categories=("Put",)),
        _trial("p1", "c", "B", "F", categories=("Put",)),
        _trial("p1", "d", "F", "F"),
        _trial("p1", "e", "F", "F"), _trial("p1", "e", "B", None),
        # p2 saw clip a three times forward (F, F, B) and twice reversed (B, F).
        *[_trial("p2", "a", "F", r) for r in "FFB"], *[_trial("p2", "a", "B", r) for r in "BF"],
    ]
    # A model in both label orders: wrong on the reversed copy only under FB.
    for order, answers in (("FB", "FF"), ("BF", "FB")):
        rows += [_trial("m", "a", truth, answer, "model", extra={"label_order": order})
                 for truth, answer in zip("FB", answers)]
    # Pair ordering: frames 0-1 always "A" (the first image), frames 0-2 right both times.
    for pair, answers in (("a:0-1", "AA"), ("a:0-2", "AB")):
        rows += [_trial("m", "a", truth, answer, "model", "pair_order",
                        {"pair_id": pair, "pair_order": order})
                 for truth, answer, order in zip("AB", answers, ("AB", "BA"))]
    return pd.DataFrame(rows)


def test_pair_cells_match_hand_computed_values():
    cells = pairs.pair_cells(_hand_table()).set_index(["task", "subject_id", "item", "context"])
    expected = {  # (accuracy, pair accuracy, pair consistency), by hand
        ("aot", "p1", "a", ""): (1.0, 1.0, 1.0),
        ("aot", "p1", "b", ""): (0.5, 0.0, 0.0),
        ("aot", "p1", "c", ""): (0.0, 0.0, 1.0),   # consistently backwards
        ("aot", "p1", "e", ""): (0.5, 0.0, 0.0),   # a timeout is neither answer
        # p1 = 2/3 right, q1 = 1/3; p2 = q2 = 1/2: pair 1/3, consistency 1/3 + 1/6.
        ("aot", "p2", "a", ""): (7 / 12, 1 / 3, 1 / 2),
        ("aot", "m", "a", "FB"): (0.5, 0.0, 0.0),  # paired within a label order, never across
        ("aot", "m", "a", "BF"): (1.0, 1.0, 1.0),
        ("pair_order", "m", "a:0-1", ""): (0.5, 0.0, 0.0),
        ("pair_order", "m", "a:0-2", ""): (1.0, 1.0, 1.0),
    }
    assert sorted(cells.index) == sorted(expected)  # clip d has no reversed copy: no pair
    for key, values in expected.items():
        assert tuple(cells.loc[key, list(pairs.METRICS)]) == pytest.approx(values)
    assert cells.loc[("aot", "p2", "a", ""), "n_trials"] == 5


def test_pair_metrics_by_observer_participant_and_category():
    data = _hand_table()
    by_observer = pairs.pair_metrics(data, n_boot=20).set_index(["task", "observer"])
    human = by_observer.loc[("aot", "human")]
    # Five people's pairs: mean of the cells above.
    assert human["pair_accuracy"] == pytest.approx((1 + 0 + 0 + 0 + 1 / 3) / 5)
    assert human["pair_consistency"] == pytest.approx((1 + 0 + 1 + 0 + 1 / 2) / 5)
    assert human["accuracy"] == pytest.approx((1 + 0.5 + 0 + 0.5 + 7 / 12) / 5)
    assert (human["n_subjects"], human["n_pairs"], human["n_trials"]) == (2, 5, 13)
    assert human["ci_method"] == "participant x clip (two-way)"
    model = by_observer.loc[("pair_order", "m")]
    assert (model["pair_accuracy"], model["ci_method"]) == (0.5, "clip")
    per_person = pairs.pair_metrics(data, by=["observer", "subject_id"], n_boot=20)
    p1 = per_person.set_index("subject_id").loc["p1"]
    assert (p1["pair_accuracy"], p1["pair_consistency"], p1["ci_method"]) == (0.25, 0.5, "clip")
    by_category = pairs.pair_metrics(data, by=["observer", "category"], n_boot=20)
    put = by_category.set_index(["task", "observer", "category"]).loc[("aot", "human", "Put")]
    assert (put["pair_accuracy"], put["pair_consistency"], put["n_pairs"]) == (0.0, 1.0, 1)


def test_an_always_forward_model_has_no_correct_pair():
    # AoT-PsyPhyBENCH Table 2: an always-F model scores accuracy 50.0; none of its pairs
    # can be right or told apart.
    rows = [_trial("always-F", f"c{i}", truth, "F", "model") for i in range(10) for truth in "FB"]
    out = pairs.pair_metrics(pd.DataFrame(rows), n_boot=50).iloc[0]
    assert (out["accuracy"], out["pair_accuracy"], out["pair_consistency"]) == (0.5, 0.0, 0.0)
    assert out["pair_accuracy_ci_low"] == out["pair_accuracy_ci_high"] == 0.0


def test_two_way_interval_equals_a_loop_over_resamples():
    rng = np.random.default_rng(5)
    rows = [_trial(f"p{p}", f"c{k}", truth, "FB"[int(rng.random() < 0.35) ^ (truth == "B")])
            for p in range(6) for k in range(7) for truth in "FB" if rng.random() < 0.8]
    rows += [_trial("m", f"c{k}", truth, "F", "model") for k in range(7) for truth in "FB"]
    data = pd.DataFrame(rows)
    n_boot = 40
    out = pairs.pair_metrics(data, n_boot=n_boot, rng=np.random.default_rng(11))
    human = out.set_index("observer").loc["human"]
    # By hand: clip draws first (clips sorted), then the people (sorted); a resample
    # weighs each person's pair of clip k by w_p * v_k. The model's draws use the clip
    # weights only and take nothing more from the generator.
    cells = pairs.pair_cells(data)
    people = cells[cells["observer"] == "human"]
    draw = np.random.default_rng(11)
    clip_w = bootstrap.resample_counts(draw, 7, n_boot)
    person_w = bootstrap.resample_counts(draw, 6, n_boot)
    k = people["source_clip_id"].str[1:].astype(int).to_numpy()
    p = people["subject_id"].str[1:].astype(int).to_numpy()
    for metric in pairs.METRICS:
        values = []
        for b in range(n_boot):
            w = person_w[b, p] * clip_w[b, k]
            if w.sum():
                values.append((w * people[metric]).sum() / w.sum())
        low, high = np.percentile(values, [2.5, 97.5])
        assert human[f"{metric}_ci_low"] == pytest.approx(low)
        assert human[f"{metric}_ci_high"] == pytest.approx(high)
        assert human[metric] == pytest.approx(people[metric].mean())
    model = out.set_index("observer").loc["m"]
    # The always-F model again: every resample gives 0.
    assert model["pair_accuracy_ci_high"] == 0.0


def test_bad_grouping_and_interval_are_refused():
    data = _hand_table()
    with pytest.raises(ValueError, match="cannot group pairs by"):
        pairs.pair_metrics(data, by=["session_id"])
    with pytest.raises(ValueError, match="ci must be in"):
        pairs.pair_metrics(data, ci=95)
    assert pairs.pair_metrics(data[data["source_clip_id"] == "d"]).empty
    with pytest.raises(ValueError, match="needs a list of categories"):
        pairs.pair_metrics(data.drop(columns="categories"), by=["observer", "category"])


def test_report_section_csv_metrics_and_codebook(tmp_path):
    spec = simulate.StudySpec(n_participants=8, trials_per_participant=60, n_clips=20,
                              models={"fwd": simulate.Observer(d_prime=0.4, criterion=1.2)})
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(3)))
    report = build.build_report(data, n_boot=50)
    output.write_report(report, tmp_path)
    for name in ("pair_metrics", "pair_metrics_by_category", "pair_metrics_by_participant"):
        table = pd.read_csv(tmp_path / "tables" / f"{name}.csv")
        assert {"pair_accuracy_ci_low", "pair_consistency", "ci_method"} <= set(table.columns)
    overall = report.tables["pair_metrics"].set_index("observer")
    assert overall.loc["human", "ci_method"] == "participant x clip (two-way)"
    assert overall.loc["fwd", "ci_method"] == "clip"
    assert set(report.tables["pair_metrics_by_participant"]["observer"]) == {"human"}
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert {r["observer"] for r in metrics["pair_metrics"]} == {"human", "fwd"}
    assert metrics["pair_metrics_method"]["n_boot"] == 50
    codebook = pd.read_csv(tmp_path / "codebook.csv")
    assert codebook["columns"].str.contains("pair_accuracy").any()
    html = (tmp_path / "report.html").read_text()
    assert 'id="pairs"' in html and "pair_metrics_by_category" in html


def test_too_few_participants_get_no_pooled_pair_intervals():
    """Below MIN_PARTICIPANTS the people's pooled pair metrics have numbers but no interval,
    as in the other people's sections; each participant's own clip intervals stay."""
    spec = simulate.StudySpec(n_participants=bootstrap.MIN_PARTICIPANTS - 1,
                              trials_per_participant=60, n_clips=20,
                              models={"fwd": simulate.Observer(d_prime=0.4, criterion=1.2)})
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(3)))
    report = build.build_report(data, n_boot=50)
    why = (f"not estimated: needs at least {bootstrap.MIN_PARTICIPANTS} participants "
           f"(the study has {bootstrap.MIN_PARTICIPANTS - 1})")
    ends = [f"{m}_ci_{end}" for m in pairs.METRICS for end in ("low", "high")]
    for name in ("pair_metrics", "pair_metrics_by_category"):
        table = report.tables[name]
        people = table[table["observer"] == "human"]
        assert len(people) and (people["ci_method"] == why).all()
        assert people[ends].isna().all().all() and people["pair_accuracy"].notna().all()
        model = table[table["observer"] == "fwd"]
        assert (model["ci_method"] == "clip").all() and model[ends].notna().all().all()
    own = report.tables["pair_metrics_by_participant"]
    assert len(own) == bootstrap.MIN_PARTICIPANTS - 1 and (own["ci_method"] == "clip").all()
    assert own[ends].notna().all().all()
