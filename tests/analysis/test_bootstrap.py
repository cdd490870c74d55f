"""Bootstrap of the crossed participant x clip design: the vectorised resampling equals a
plain loop that copies trials, the two-way scheme covers the population value where the
clip bootstrap does not, and gaps are paired."""
import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from analysis import aot, bootstrap, intervals, loading, simulate
from analysis.report import build


@pytest.fixture(scope="module")
def trials():
    spec = simulate.StudySpec(n_participants=20, trials_per_participant=60, n_clips=30)
    return loading.included(loading.normalize_trials(
        simulate.simulate_study(spec, np.random.default_rng(5))))


@pytest.fixture(scope="module")
def with_model():
    spec = simulate.StudySpec(n_participants=8, trials_per_participant=30, n_clips=12,
                              models={"m": simulate.Observer(d_prime=0.8, criterion=0.6)})
    data = loading.included(loading.normalize_trials(
        simulate.simulate_study(spec, np.random.default_rng(2))))
    return build.with_observer(loading.aot_trials(data))


def _sorted_codes(values):
    return pd.factorize(pd.Series(values, dtype=object), sort=True)


def _counts(rng, n, n_boot):
    """Multiplicities: how often each of n units is hit by n uniform draws, per resample."""
    draws = rng.integers(0, n, size=(n_boot, n))
    return np.array([np.bincount(row, minlength=n) for row in draws])


def test_item_scheme_matches_naive_loop_over_resampled_clips(trials):
    n_boot = 50
    out = bootstrap.cluster_bootstrap_ci(trials, n_boot=n_boot, rng=np.random.default_rng(9),
                                         correction="none", scheme="item")
    # Documented draw order: clip multiplicities over the sorted clip ids.
    clips = _sorted_codes(loading.aot_trials(trials)["source_clip_id"])[1]
    weights = _counts(np.random.default_rng(9), len(clips), n_boot)
    naive = []
    for w in weights:
        parts = [trials[trials["source_clip_id"] == clip] for clip, k in zip(clips, w)
                 for _ in range(k)]
        naive.append(aot.aot_metrics(pd.concat(parts), correction="none").accuracy.iloc[0])
    lo, hi = np.percentile(naive, [2.5, 97.5])
    assert out.accuracy_ci_low.iloc[0] == pytest.approx(lo)
    assert out.accuracy_ci_high.iloc[0] == pytest.approx(hi)
    assert out.accuracy.iloc[0] == pytest.approx(aot.aot_metrics(trials).accuracy.iloc[0])
    assert out.ci_method.iloc[0] == "clip"


def _naive_two_way(data, n_boot, seed):
    """Every resample built by copying each trial w_participant x v_clip times (the draws in
    the documented order: clips, then per stratum in sorted order its participants)."""
    rng = np.random.default_rng(seed)
    k, clips = _sorted_codes(data["source_clip_id"])
    v = _counts(rng, len(clips), n_boot)
    weights = {}
    for observer in sorted(data["observer"].unique()):
        rows = (data["observer"] == observer).to_numpy()
        p, people = _sorted_codes(data.loc[rows, "subject_id"])
        w = np.ones((n_boot, 1), dtype=int) if len(people) == 1 else _counts(
            rng, len(people), n_boot)
        weights[observer] = (rows, p, w)
    out = {obs: [] for obs in weights}
    for b in range(n_boot):
        for obs, (rows, p, w) in weights.items():
            copies = w[b, p] * v[b, k[rows]]
            resampled = data[rows].loc[np.repeat(data.index[rows], copies)]
            out[obs].append(aot.aot_metrics(resampled, correction="none").iloc[0])
    return {obs: pd.DataFrame(rows) for obs, rows in out.items()}


def test_two_way_matches_naive_copies_of_participants_and_clips(with_model):
    n_boot = 40
    naive = _naive_two_way(with_model, n_boot, seed=4)
    draws = bootstrap.bootstrap_draws(with_model, by="observer", strata="observer",
                                      n_boot=n_boot, rng=np.random.default_rng(4),
                                      correction="none")
    table = bootstrap.percentile_table(draws, metrics=("accuracy", "d_prime", "criterion"))
    table = table.set_index("observer")
    for obs, frame in naive.items():
        for m in ("accuracy", "d_prime", "criterion"):
            values = frame[m].replace([np.inf, -np.inf], np.nan).dropna()
            lo, hi = np.percentile(values, [2.5, 97.5])
            assert table.loc[obs, f"{m}_ci_low"] == pytest.approx(lo), (obs, m)
            assert table.loc[obs, f"{m}_ci_high"] == pytest.approx(hi), (obs, m)
    assert table.loc["human", "ci_method"] == "participant x clip (two-way)"
    assert table.loc["m", "ci_method"] == "clip"  # one subject: weight 1, clips only
    # The gap is the percentile of the paired differences, resample by resample.
    gap = bootstrap.difference_table(draws, "observer", "human",
                                     {"accuracy": ("gap_accuracy_points", 100.0)})
    diff = 100 * (naive["human"]["accuracy"] - naive["m"]["accuracy"])
    assert gap.gap_accuracy_points_ci_low.iloc[0] == pytest.approx(np.percentile(diff, 2.5))
    assert gap.gap_accuracy_points_ci_high.iloc[0] == pytest.approx(np.percentile(diff, 97.5))


def test_subject_mean_matches_naive_mean_of_resampled_participants(with_model):
    humans = with_model[with_model["subject_kind"] == "human"]
    n_boot = 30
    draws = bootstrap.subject_mean_draws(humans, n_boot=n_boot, rng=np.random.default_rng(3))
    rng = np.random.default_rng(3)
    k, clips = _sorted_codes(humans["source_clip_id"])
    p, people = _sorted_codes(humans["subject_id"])
    v = _counts(rng, len(clips), n_boot)
    w = _counts(rng, len(people), n_boot)
    for b in range(n_boot):
        resampled = humans.loc[np.repeat(humans.index, v[b, k])]
        per = aot.aot_metrics(resampled, by="subject_id").set_index("subject_id")
        d = per["d_prime"].reindex(people).to_numpy()
        ok = np.isfinite(d)
        assert draws["d_prime"][b] == pytest.approx((w[b] * np.where(ok, d, 0)).sum()
                                                    / (w[b] * ok).sum())


def _population_accuracy(obs: simulate.Observer, rng) -> float:
    """Expected accuracy of the simulator's population (people and clips), by integration:
    P(correct | backward) = Phi(d s / 2 - c), P(correct | forward) = Phi(d s / 2 + c)."""
    n = 400_000
    d = np.maximum(rng.normal(obs.d_prime, obs.d_prime_sd, n), 0.0)
    c = rng.normal(obs.criterion, obs.criterion_sd, n)
    clips = simulate.simulate_clips(n, rng)
    s = clips["strength"].to_numpy()
    p = 0.5 * norm.cdf(d * s / 2 - c) + 0.5 * norm.cdf(d * s / 2 + c)
    return float((1 - obs.timeout_rate) * p.mean())


def test_two_way_intervals_cover_where_clip_intervals_do_not():
    # Many small studies from one population: participants and clips are both samples,
    # so an interval that resamples clips only is too narrow (Owen 2007).
    human = simulate.Observer(d_prime=1.6, criterion=0.5, d_prime_sd=0.6, criterion_sd=0.5)
    truth = _population_accuracy(human, np.random.default_rng(0))
    spec = simulate.StudySpec(n_participants=8, trials_per_participant=200, n_clips=40,
                              practice_gate_fail_rate=0.0, fast_trial_rate=0.0, human=human)
    hits = {s: 0 for s in bootstrap.SCHEMES}
    widths = {s: [] for s in bootstrap.SCHEMES}
    n_studies = 60
    for i in range(n_studies):
        data = loading.aot_trials(loading.normalize_trials(
            simulate.simulate_study(spec, np.random.default_rng(100 + i))))
        for scheme in bootstrap.SCHEMES:
            out = bootstrap.cluster_bootstrap_ci(data, scheme=scheme, n_boot=300,
                                                 rng=np.random.default_rng(i),
                                                 metrics=("accuracy",)).iloc[0]
            hits[scheme] += out.accuracy_ci_low <= truth <= out.accuracy_ci_high
            widths[scheme].append(out.accuracy_ci_high - out.accuracy_ci_low)
    coverage = {s: h / n_studies for s, h in hits.items()}
    # Seen: two-way 0.95, participant 0.92, clip 0.67 (widths 0.125, 0.100, 0.060).
    assert coverage["two-way"] >= 0.9
    assert coverage["item"] <= 0.8
    assert np.mean(widths["item"]) < np.mean(widths["subject"]) < np.mean(widths["two-way"])


def test_interval_brackets_estimate_per_group(trials):
    out = bootstrap.cluster_bootstrap_ci(trials, by="category", n_boot=200)
    assert (out.accuracy_ci_low <= out.accuracy).all() and (out.accuracy <= out.accuracy_ci_high).all()
    assert set(out.category) <= {"Proceed", "Fall", "Diffusion", "Division", "Put", "Reciprocal"}
    assert (out.n_boot == 200).all()


def test_sparse_product_equals_dense(trials, monkeypatch):
    dense = bootstrap.cluster_bootstrap_ci(trials, by="category", n_boot=60)
    monkeypatch.setattr(bootstrap, "MAX_DENSE_CELLS", 0)
    sparse = bootstrap.cluster_bootstrap_ci(trials, by="category", n_boot=60)
    pd.testing.assert_frame_equal(dense, sparse)


def test_bad_arguments(trials):
    with pytest.raises(ValueError, match="ci"):
        bootstrap.cluster_bootstrap_ci(trials, ci=1.5)
    with pytest.raises(ValueError, match="unknown metric"):
        bootstrap.cluster_bootstrap_ci(trials, metrics=("auc",))
    with pytest.raises(ValueError, match="scheme"):
        bootstrap.cluster_bootstrap_ci(trials, scheme="three-way")
    with pytest.raises(ValueError, match="strata"):
        bootstrap.cluster_bootstrap_ci(trials, by="category", strata="observer")
    with pytest.raises(ValueError, match="subject_id"):
        bootstrap.cluster_bootstrap_ci(trials.drop(columns="subject_id"))


def _ceiling_study(rng, n_people=5, n_clips=10, accuracy=0.98):
    right = rng.random((n_people, n_clips, 2)) < accuracy
    person, clip, backward = np.indices(right.shape).reshape(3, -1)
    truth = np.where(backward == 1, "B", "F")
    return pd.DataFrame({
        "subject_id": [f"p{i}" for i in person], "subject_kind": "human",
        "source_clip_id": [f"c{k:02d}" for k in clip], "correct_response": truth,
        "response": np.where(right.ravel(), truth, np.where(truth == "B", "F", "B"))})


def test_intervals_at_the_ceiling_keep_their_coverage():
    # 5 people x 10 clips at a true 98%: one study in eight has every answer right, whose
    # draws were all 1, so the interval was [1, 1] and missed; now an exact bound over the
    # 5 participants (the fewer units) stands in, one-sided: 0.05 ** (1 / 5) to 1.
    rng = np.random.default_rng(4)
    covered, flat = 0, 0
    for _ in range(300):
        out = bootstrap.cluster_bootstrap_ci(_ceiling_study(rng), n_boot=200, rng=rng,
                                             metrics=("accuracy",)).iloc[0]
        covered += out.accuracy_ci_low <= 0.98 <= out.accuracy_ci_high
        if out.accuracy == 1:
            flat += 1
            assert out.accuracy_ci_low == pytest.approx(0.05 ** (1 / 5))
            assert out.ci_method.endswith("exact (Clopper-Pearson) bound over the fewer "
                                          "units (5)")
    assert flat >= 20 and covered / 300 >= 0.95, (covered, flat)


def test_percentiles_of_rows_equal_numpy_row_by_row():
    # Rows without a NaN go through np.percentile along the axis, the others through
    # nanpercentile: both must give exactly numpy's answer for each row alone.
    values = np.random.default_rng(2).normal(size=(6, 50))
    values[1, ::3] = np.nan
    values[2, 5] = np.inf
    values[3] = np.nan
    values[4] = np.round(values[4], 1)  # ties
    lo, hi = intervals.nan_percentiles(values, 2.5, 97.5)
    for row, low, high in zip(values, lo, hi):
        finite = row[np.isfinite(row)]
        expected = np.percentile(finite, [2.5, 97.5]) if len(finite) else [np.nan, np.nan]
        np.testing.assert_array_equal([low, high], expected)
