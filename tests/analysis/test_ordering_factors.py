"""The EGO-FLIGHT conditions by factor: layout, means and bootstrap CIs against an
independent numpy bootstrap, the report's table and figure."""
import json

import numpy as np
import pandas as pd
import pytest

from analysis import figures_ordering, ordering, ordering_factors
from experiments.designs import EGO_FLIGHT_CONDITIONS

CONDITIONS = [c.name for c in EGO_FLIGHT_CONDITIONS]


def _trials(seed=3, n_people=6, n_clips=8, per=18):
    """People and one model ordering 4 frames under every condition, skill varying by
    condition and person, a few invalid answers (non-responses)."""
    rng = np.random.default_rng(seed)
    rows = []
    subjects = [(f"p{i}", "human", "human") for i in range(n_people)] + [("m", "model", "m")]
    for subject, kind, observer in subjects:
        skill = rng.uniform(0.2, 0.9)
        for t in range(per):
            condition = CONDITIONS[t % len(CONDITIONS)]
            correct = [int(x) for x in rng.permutation([1, 2, 3, 4])]
            if rng.random() < 0.05:
                answer = [1, 1, 2, 3]  # not a permutation: a non-response
            elif rng.random() < skill:
                answer = correct
            else:
                answer = [int(x) for x in rng.permutation(correct)]
            rows.append({"subject_id": subject, "subject_kind": kind, "observer": observer,
                         "trial_type": "frame_order",
                         "source_clip_id": f"c{rng.integers(n_clips)}",
                         "correct_response": json.dumps(correct),
                         "response": json.dumps(answer),
                         "extra": {"condition": condition}})
    return pd.DataFrame(rows)


def _numpy_bootstrap(values, units, conditions, names, n_boot, rng):
    """Percentile CI of the mean per condition, resampling units with replacement: each
    resample draws n of the n sorted units, ``rng.integers(0, n, n)``, and pools their
    trials (the draws of one matrix call, row by row)."""
    unit_ids = sorted(set(units))
    draws = rng.integers(0, len(unit_ids), size=(n_boot, len(unit_ids)))
    means = np.full((n_boot, len(names)), np.nan)
    for b in range(n_boot):
        picked = np.concatenate([np.flatnonzero(units == unit_ids[d]) for d in draws[b]])
        for j, name in enumerate(names):
            v = values[picked][conditions[picked] == name]
            v = v[np.isfinite(v)]
            if len(v):
                means[b, j] = v.mean()
    return np.nanpercentile(means, [2.5, 97.5], axis=0)


def test_layout_puts_the_original_in_every_factor():
    layout = ordering_factors.condition_factors()
    assert list(layout["factor"].unique()) == ["frames", "span", "annotation", "hints"]
    for _, part in layout.groupby("factor"):
        assert part.loc[part["original"], "condition"].tolist() == ["4 frames"]
        assert len(part) == 3
    # EGO-FLIGHT Table 8: levels per factor, the original (4 frames, medium, brief, none).
    assert layout.groupby("factor", sort=False)["level"].apply(list).to_dict() == {
        "frames": ["2", "4", "8"], "span": ["short", "medium", "long"],
        "annotation": ["none", "brief", "comprehensive"], "hints": ["none", "1&3", "2&4"]}
    assert set(layout["condition"]) == set(CONDITIONS)


@pytest.mark.parametrize("policy", ["error", "excluded"])
def test_means_and_cis_match_an_independent_bootstrap(policy):
    trials = _trials()
    n_boot, seed = 300, 11
    table = ordering_factors.ordering_by_factor(trials, policy=policy, n_boot=n_boot,
                                        rng=np.random.default_rng(seed))
    scores = ordering.apply_nonresponse_policy(ordering.ordering_trial_scores(trials), policy)
    conditions = np.array([e["condition"] for e in trials["extra"]])
    names = sorted(CONDITIONS)
    rng = np.random.default_rng(seed)
    for observer in ("human", "m"):  # the project draws observers in sorted order
        mine = (trials["observer"] == observer).to_numpy()
        unit = "subject_id" if observer == "human" else "source_clip_id"
        tau = scores["kendall_tau"].to_numpy()[mine]
        lo, hi = _numpy_bootstrap(tau, trials.loc[mine, unit].to_numpy(), conditions[mine],
                                  names, n_boot, rng)
        rows = table[(table["observer"] == observer)].drop_duplicates("condition")
        rows = rows.set_index("condition").loc[names]
        expected_mean = [np.nanmean(tau[conditions[mine] == n]) for n in names]
        np.testing.assert_allclose(rows["kendall_tau"], expected_mean, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(rows["kendall_tau_ci_low"], lo, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(rows["kendall_tau_ci_high"], hi, rtol=1e-12, atol=1e-12)
        assert set(rows["ci_method"]) == {"participant" if observer == "human" else "clip"}
    assert (table["n_boot"] == n_boot).all()


def test_the_figure_has_one_panel_per_factor_with_the_original_in_each():
    table = ordering_factors.ordering_by_factor(_trials(), n_boot=50, rng=np.random.default_rng(0))
    fig = figures_ordering.ordering_factor_figure(table)
    titles = [a.text for a in fig.layout.annotations]
    assert titles[:4] == ["Number of frames", "Temporal span", "Annotation", "Hints"]
    for panel in range(1, 5):
        traces = [t for t in fig.data if t.xaxis == ("x" if panel == 1 else f"x{panel}")]
        assert {t.name for t in traces} == {"human", "m"}
        for t in traces:
            assert t.error_y.array is not None  # every point has its CI
            assert sum("(original)" in str(x) for x in t.x) == 1


def test_the_report_draws_the_conditions_by_factor(tmp_path):
    from analysis import loading, simulate
    from analysis.report import build, output

    data = simulate.simulate_study(simulate.StudySpec(
        n_participants=6, trials_per_participant=36, n_clips=20, ordering_share=1.0,
        practice_gate_fail_rate=0.0, fast_trial_rate=0.0), np.random.default_rng(4))
    data["extra"] = [{**e, "condition": CONDITIONS[i % len(CONDITIONS)]}
                     for i, e in enumerate(data["extra"])]
    report = build.build_report(loading.normalize_trials(data), n_boot=30)
    assert "ordering_factors" in report.figures and "ordering_condition" not in report.figures
    assert report.fit_info["ordering_by_factor"]["n_boot"] == 30
    output.write_report(report, tmp_path)
    table = pd.read_csv(tmp_path / "tables" / "ordering_by_factor.csv")
    assert set(table["factor"]) == {"frames", "span", "annotation", "hints"}
    assert (table["kendall_tau_ci_low"] <= table["kendall_tau"]).all()
    assert (table["kendall_tau"] <= table["kendall_tau_ci_high"]).all()
    assert table.loc[table["original"], "condition"].eq("4 frames").sum() == 4


def test_three_people_get_no_interval_over_participants(tmp_path):
    # Resampling 3 people is not an interval of a population's value: below the report's
    # minimum the people's rows keep their means, the model's rows their clip intervals.
    from analysis import loading, simulate
    from analysis.report import build

    data = simulate.simulate_study(simulate.StudySpec(
        n_participants=3, trials_per_participant=36, n_clips=20, ordering_share=1.0,
        practice_gate_fail_rate=0.0, fast_trial_rate=0.0), np.random.default_rng(4))
    data["extra"] = [{**e, "condition": CONDITIONS[i % len(CONDITIONS)]}
                     for i, e in enumerate(data["extra"])]
    table = build.build_report(loading.normalize_trials(data), n_boot=30).tables[
        "ordering_by_factor"]
    people = table["observer"] == "human"
    cis = [c for c in table.columns if c.endswith(("_ci_low", "_ci_high"))]
    assert people.any() and table.loc[people, cis].isna().all().all()
    assert table.loc[people, "kendall_tau"].notna().all()
    assert (table.loc[people, "ci_method"]
            == "not estimated: needs at least 5 participants (the study has 3)").all()
