"""Clip-clustered bootstrap: the vectorised resampling equals a plain loop over resamples."""
import numpy as np
import pandas as pd
import pytest

from analysis import aot, bootstrap, loading, simulate


@pytest.fixture(scope="module")
def trials():
    spec = simulate.StudySpec(n_participants=20, trials_per_participant=60, n_clips=30)
    return loading.included(loading.normalize_trials(
        simulate.simulate_study(spec, np.random.default_rng(5))))


def test_matches_naive_loop_over_resampled_clips(trials):
    n_boot = 50
    out = bootstrap.cluster_bootstrap_ci(trials, n_boot=n_boot, rng=np.random.default_rng(9),
                                         correction="none")
    clips = pd.factorize(aot.confusion_counts(trials, ["source_clip_id"])["source_clip_id"])[1]
    weights = np.random.default_rng(9).multinomial(len(clips), np.full(len(clips), 1 / len(clips)),
                                                   size=n_boot)
    naive = []
    for w in weights:
        parts = [trials[trials["source_clip_id"] == clip] for clip, k in zip(clips, w)
                 for _ in range(k)]
        naive.append(aot.aot_metrics(pd.concat(parts), correction="none").accuracy.iloc[0])
    lo, hi = np.percentile(naive, [2.5, 97.5])
    assert out.accuracy_ci_low.iloc[0] == pytest.approx(lo)
    assert out.accuracy_ci_high.iloc[0] == pytest.approx(hi)
    assert out.accuracy.iloc[0] == pytest.approx(aot.aot_metrics(trials).accuracy.iloc[0])


def test_interval_brackets_estimate_per_group(trials):
    out = bootstrap.cluster_bootstrap_ci(trials, by="category", n_boot=200)
    assert (out.accuracy_ci_low <= out.accuracy).all() and (out.accuracy <= out.accuracy_ci_high).all()
    assert set(out.category) <= {"Proceed", "Fall", "Diffusion", "Division", "Put", "Reciprocal"}


def test_bad_arguments(trials):
    with pytest.raises(ValueError, match="ci"):
        bootstrap.cluster_bootstrap_ci(trials, ci=1.5)
    with pytest.raises(ValueError, match="unknown metric"):
        bootstrap.cluster_bootstrap_ci(trials, metrics=("auc",))
