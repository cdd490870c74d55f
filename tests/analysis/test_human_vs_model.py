"""Error consistency, per-stimulus agreement and the per-category gap."""
import numpy as np
import pandas as pd
import pytest

from analysis import human_vs_model as hm


def rows(subject, kind, correct, clips=None):
    clips = clips or [f"c{i}" for i in range(len(correct))]
    return pd.DataFrame({"subject_id": subject, "subject_kind": kind, "trial_type": "aot",
                         "source_clip_id": clips, "stimulus_id": clips, "direction": "forward",
                         "categories": [["Fall"]] * len(correct), "correct_response": "F",
                         "response": ["F" if c else "B" for c in correct],
                         "correct": np.array(correct, float)})


def test_kappa_by_hand():
    # Geirhos et al. (2020): c_obs = 3/4 agree; p1 = 0.5, p2 = 0.75 -> c_exp = 0.5;
    # kappa = (0.75 - 0.5) / (1 - 0.5) = 0.5.
    data = pd.concat([rows("h1", "human", [1, 1, 0, 0]), rows("m", "model", [1, 1, 1, 0])])
    out = hm.error_consistency(data).set_index("observer")
    assert out.loc["m", "mean_kappa"] == pytest.approx(0.5)


def test_identical_errors_give_kappa_one_and_shared_stimuli_only():
    data = pd.concat([rows("h1", "human", [1, 0, 1, 0]), rows("h2", "human", [1, 0, 1, 0]),
                      rows("m", "model", [1, 0, 1, 0, 1], clips=["c0", "c1", "c2", "c3", "x"])])
    out = hm.error_consistency(data).set_index("observer")
    assert out.loc["m", "mean_kappa"] == pytest.approx(1.0)
    assert out.loc["m", "median_shared_stimuli"] == 4
    assert out.loc["human-human", "mean_kappa"] == pytest.approx(1.0)


def test_per_stimulus_agreement_and_gap():
    data = pd.concat([rows("h1", "human", [1, 1, 0, 1]), rows("h2", "human", [1, 0, 0, 1]),
                      rows("m", "model", [0, 0, 0, 1])])
    agree = hm.per_stimulus_agreement(data).set_index("stimulus")
    assert agree.loc["c1", "human_accuracy"] == 0.5 and agree.loc["c1", "model_correct"] == 0.0
    gap = hm.category_gap(data).iloc[0]
    assert gap.category == "Fall"
    assert gap.gap_accuracy_points == pytest.approx(100 * (5 / 8 - 1 / 4))


def setting_rows(setting, correct, session):
    out = rows("m", "model", correct)
    return out.assign(session_id=session,
                      extra=[{"setting": setting, "label_order": "FB"}] * len(correct))


def statsmodels_mean_kappa(model, people):
    """Mean over people of statsmodels' Cohen's kappa on the 2 x 2 correctness table."""
    from statsmodels.stats.inter_rater import cohens_kappa

    kappas = []
    for person in people:
        table = np.array([[np.sum(model & person), np.sum(model & ~person)],
                          [np.sum(~model & person), np.sum(~model & ~person)]])
        kappas.append(cohens_kappa(table).kappa)
    return np.mean(kappas)


@pytest.fixture
def two_settings():
    # One model run twice: zero-shot errs where people are right (negative kappa), few-shot
    # where people err (positive kappa). Pooled by model id the two cancel out, as the
    # simulation's -0.082 and +0.104 became one row of 0.006.
    rng = np.random.default_rng(4)
    hard = rng.random(60) < 0.3
    people = [np.where(rng.random(60) < 0.8, ~hard, hard) for _ in range(6)]
    zero = np.where(rng.random(60) < 0.7, hard, rng.random(60) < 0.5)
    few = np.where(rng.random(60) < 0.7, ~hard, rng.random(60) < 0.5)
    data = pd.concat([rows(f"h{i}", "human", p) for i, p in enumerate(people)]
                     + [setting_rows("zero-shot", zero, "run-1"),
                        setting_rows("few-shot-4", few, "run-2")], ignore_index=True)
    return data, people, zero, few


def test_error_consistency_keys_each_setting_and_matches_statsmodels(two_settings):
    data, people, zero, few = two_settings
    out = hm.error_consistency(data).set_index("observer")
    assert set(out.index) == {"m / zero-shot", "m / few-shot-4", "human-human"}
    assert out.loc["m / zero-shot", "mean_kappa"] == pytest.approx(
        statsmodels_mean_kappa(zero, people))
    assert out.loc["m / few-shot-4", "mean_kappa"] == pytest.approx(
        statsmodels_mean_kappa(few, people))
    assert out.loc["m / zero-shot", "mean_kappa"] < 0 < out.loc["m / few-shot-4", "mean_kappa"]


def test_per_stimulus_agreement_keys_each_setting(two_settings):
    data, _, zero, few = two_settings
    agree = hm.per_stimulus_agreement(data)
    by_model = agree.groupby("model")["model_correct"].mean()
    assert by_model["m / zero-shot"] == pytest.approx(zero.mean())
    assert by_model["m / few-shot-4"] == pytest.approx(few.mean())


def test_kappa_interval_matches_the_asymptotic_interval_of_statsmodels():
    # One model, one person, 400 clips: the clip bootstrap interval of kappa agrees with the
    # large-sample interval of statsmodels' cohens_kappa (Fleiss, Cohen & Everitt 1969).
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = np.random.default_rng(5)
    person = rng.random(400) < 0.7
    model = np.where(rng.random(400) < 0.6, person, rng.random(400) < 0.6)
    data = pd.concat([rows("h", "human", person), rows("m", "model", model)])
    out = hm.error_consistency(data, n_boot=4000, rng=np.random.default_rng(1))
    row = out.set_index("observer").loc["m"]
    ref = cohens_kappa(pd.crosstab(model, person).to_numpy())
    assert row.mean_kappa == pytest.approx(ref.kappa)
    assert row.kappa_ci_low == pytest.approx(ref.kappa_low, abs=0.02)
    assert row.kappa_ci_high == pytest.approx(ref.kappa_upp, abs=0.02)


def test_human_ceiling_stands_beside_each_model(two_settings):
    data, people, _, _ = two_settings
    out = hm.error_consistency(data, n_boot=200).set_index("observer")
    ceiling = out.loc["human-human", "mean_kappa"]
    pairs = [statsmodels_mean_kappa(a, [b]) for i, a in enumerate(people) for b in people[i + 1:]]
    assert ceiling == pytest.approx(np.mean(pairs))
    for model in ("m / zero-shot", "m / few-shot-4"):
        assert out.loc[model, "human_ceiling_kappa"] == pytest.approx(ceiling)
        assert out.loc[model, "human_ceiling_ci_low"] <= ceiling \
            <= out.loc[model, "human_ceiling_ci_high"]
        assert out.loc[model, "kappa_ci_low"] <= out.loc[model, "mean_kappa"] \
            <= out.loc[model, "kappa_ci_high"]


def test_gap_is_na_where_a_model_answered_nothing():
    # A model whose text could never be parsed: not a 98.97-point gap but n/a.
    silent = rows("m", "model", [0, 0, 0, 0]).assign(response=None)
    data = pd.concat([rows("h1", "human", [1, 1, 1, 1]), silent])
    gap = hm.category_gap(data).iloc[0]
    assert np.isnan(gap.model_accuracy) and np.isnan(gap.gap_accuracy_points)
    assert "no readable answer" in gap.note


def _kappa(a, b):
    """statsmodels' Cohen's kappa of two 0/1 vectors."""
    from statsmodels.stats.inter_rater import cohens_kappa

    table = np.bincount(2 * np.asarray(a, int) + np.asarray(b, int), minlength=4)
    return cohens_kappa(table.reshape(2, 2)).kappa


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # statsmodels SEs of small tables
def test_kappa_intervals_resample_people_as_well_as_clips():
    # The intervals once resampled clips only, treating people as fixed. Reference: an
    # explicit two-way bootstrap with the same draws (clips, then people), each resample
    # built as data with repeated clips and people and scored by statsmodels; the ceiling
    # pairs every two drawn people who are not the same person.
    n_people, n_clips, n_boot = 6, 30, 200
    gen = np.random.default_rng(4)
    clips = [f"c{i:02d}" for i in range(n_clips)]
    skill = gen.uniform(0.55, 0.9, n_people)
    people = [(gen.random(n_clips) < p).astype(int) for p in skill]
    model = np.where(gen.random(n_clips) < 0.5, people[0], gen.random(n_clips) < 0.7)
    data = pd.concat([rows(f"h{k}", "human", list(c), clips) for k, c in enumerate(people)]
                     + [rows("m", "model", list(model.astype(int)), clips)])
    out = hm.error_consistency(data, n_boot=n_boot, rng=np.random.default_rng(9))
    row = out.set_index("observer").loc["m"]
    draws = np.random.default_rng(9)
    clip_draws = draws.multinomial(n_clips, np.full(n_clips, 1 / n_clips), size=n_boot)
    person_draws = draws.multinomial(n_people, np.full(n_people, 1 / n_people), size=n_boot)
    model_means, ceiling_means = [], []
    for counts, drawn in zip(clip_draws, person_draws):
        items = np.repeat(np.arange(n_clips), counts)
        chosen = np.repeat(np.arange(n_people), drawn)
        model_means.append(np.mean([_kappa(model[items], people[p][items]) for p in chosen]))
        ceiling_means.append(np.mean([_kappa(people[p][items], people[q][items])
                                      for i, p in enumerate(chosen) for q in chosen[i + 1:]
                                      if p != q]))
    assert (row.kappa_ci_low, row.kappa_ci_high) == pytest.approx(
        tuple(np.percentile(model_means, [2.5, 97.5])), abs=1e-12)
    assert (row.human_ceiling_ci_low, row.human_ceiling_ci_high) == pytest.approx(
        tuple(np.percentile(ceiling_means, [2.5, 97.5])), abs=1e-12)


def test_correctness_matrix_is_the_mean_per_observer_and_stimulus():
    # The dense count equals the groupby mean it replaced: repeated presentations
    # averaged, NaN where a row never saw a stimulus, rows and stimuli sorted.
    data = pd.concat([rows("p2", "human", [1, 0, 1]), rows("p1", "human", [0, 1], ["c2", "c0"]),
                      rows("m", "model", [1, 1, 0, 0], ["c0", "c0", "c1", "c3"])],
                     ignore_index=True)
    data["extra"] = [{}] * len(data)
    data.loc[1, "correct"] = np.nan  # not counted
    matrix = hm._correctness_matrix(data)
    kind = np.where(data["subject_kind"] == "model", "model", "human")
    names = np.where(kind == "model", "m", data["subject_id"])
    expected = pd.DataFrame({"kind": kind, "subject": names, "stimulus": data["stimulus_id"],
                             "correct": data["correct"]}).groupby(
        ["kind", "subject", "stimulus"])["correct"].mean().unstack()
    pd.testing.assert_frame_equal(matrix, expected)
    assert matrix.loc[("model", "m"), "c0"] == 1.0 and np.isnan(matrix.loc[("human", "p2"), "c1"])
