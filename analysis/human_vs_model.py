"""People against models on the same stimuli: per-clip agreement, error consistency,
difficulty correlation and the gap per category.

Models are grouped by observer (:mod:`analysis.observers`: model, revision, setting, label
order), never by model id alone; people are paired one by one (``subject_id``)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis import aot, bootstrap, loading, observers
from analysis import columns as C

MAX_REFERENCE_HUMANS = 200
# The bootstrap of the human-human ceiling costs pairs x stimuli x resamples: its interval
# uses at most this many people (evenly spaced by id), its estimate all reference people.
MAX_CEILING_CI_HUMANS = 40


def _correctness_matrix(trials: pd.DataFrame) -> pd.DataFrame:
    """(kind, observer) x stimuli mean correctness (NaN where never seen). People are
    listed one by one under ``"human"``, models by observer under ``"model"``."""
    is_model = (trials["subject_kind"] == C.MODEL).to_numpy()
    names = np.where(is_model, observers.observer_column(trials).to_numpy(object),
                     trials["subject_id"].astype(object).to_numpy())
    # Counted into the dense matrix by codes: a groupby over three text keys and its
    # unstack cost more than the kappas themselves on a million trials.
    stimulus = loading.stimulus_key(trials).to_numpy(object)
    keyed = pd.notna(names) & pd.notna(stimulus)  # as groupby, rows without a key are out
    kind, kinds = pd.factorize(np.where(is_model, C.MODEL, C.HUMAN)[keyed], sort=True)
    subject, subjects = pd.factorize(names[keyed], sort=True)
    stimulus, stimuli = pd.factorize(stimulus[keyed], sort=True)
    present, row = np.unique(kind * len(subjects) + subject, return_inverse=True)
    correct = trials["correct"].to_numpy(float)[keyed]
    counted = ~np.isnan(correct)
    flat = (row * len(stimuli) + stimulus)[counted]
    size = len(present) * len(stimuli)
    n = np.bincount(flat, minlength=size)
    total = np.bincount(flat, weights=correct[counted], minlength=size)
    with np.errstate(invalid="ignore"):
        mean = np.where(n > 0, total / n, np.nan).reshape(len(present), len(stimuli))
    index = pd.MultiIndex.from_arrays([kinds[present // len(subjects)],
                                       subjects[present % len(subjects)]],
                                      names=["kind", "subject"])
    return pd.DataFrame(mean, index=index, columns=pd.Index(stimuli, name="stimulus"))


def per_stimulus_agreement(data: pd.DataFrame) -> pd.DataFrame:
    """Human accuracy per stimulus next to each model observer's correctness on it.

    Returns
    -------
    pandas.DataFrame
        ``stimulus, source_clip_id, direction, n_humans, human_accuracy, model,
        model_correct`` (``model`` is the observer; one shown a stimulus several times,
        e.g. under both label orders, gets its mean correctness).
    """
    trials = loading.aot_trials(data)
    trials = trials.assign(stimulus=loading.stimulus_key(trials),
                           observer=observers.observer_column(trials))
    humans = trials[trials["subject_kind"] == C.HUMAN]
    models = trials[trials["subject_kind"] == C.MODEL]
    h = humans.groupby("stimulus").agg(source_clip_id=("source_clip_id", "first"),
                                       direction=("direction", "first"),
                                       n_humans=("subject_id", "nunique"),
                                       human_accuracy=("correct", "mean"))
    m = models.groupby(["observer", "stimulus"])["correct"].mean().rename("model_correct")
    m = m.reset_index().rename(columns={"observer": "model"})
    return h.reset_index().merge(m, on="stimulus", how="inner")


def _kappa_against(matrix: np.ndarray, seen: np.ndarray, ref: np.ndarray,
                   ref_seen: np.ndarray) -> np.ndarray:
    """Error consistency of every row of ``matrix`` with every row of ``ref``."""
    s1, s2 = seen.astype(float), ref_seen.astype(float)
    a, b = np.where(seen, matrix, 0.0), np.where(ref_seen, ref, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        both = s1 @ s2.T
        observed = (a @ b.T + (s1 - a) @ (s2 - b).T) / both
        p1, p2 = (a @ s2.T) / both, (s1 @ b.T) / both
        expected = p1 * p2 + (1 - p1) * (1 - p2)
        return (observed - expected) / (1 - expected)


def _pair_kappas(a, sa, b, sb, weights):
    """Kappa of each row pair ``(a[p], b[p])`` under each row of stimulus ``weights``.

    ``a, b``: correctness (0 where unseen), ``sa, sb``: seen (0/1), all (pairs x stimuli);
    ``weights``: (resamples x stimuli). Returns (pairs x resamples); NaN where undefined.
    """
    wt = weights.T
    with np.errstate(divide="ignore", invalid="ignore"):
        both = (sa * sb) @ wt
        observed = (a * b + (sa - a) * (sb - b)) @ wt / both
        p1, p2 = (a * sb) @ wt / both, (sa * b) @ wt / both
        expected = p1 * p2 + (1 - p1) * (1 - p2)
        kappa = (observed - expected) / (1 - expected)
    return np.where(both > 0, kappa, np.nan)


def _mean_ci(kappas: np.ndarray, ci: float, pair_weights: np.ndarray) -> tuple[float, float]:
    """Percentile interval of the per-resample mean kappa over pairs, each pair counted as
    often as the resample drew it (``pair_weights``: pairs x resamples)."""
    finite = np.isfinite(kappas)
    w = np.where(finite, pair_weights, 0.0)
    with np.errstate(all="ignore"):
        means = (w * np.where(finite, kappas, 0.0)).sum(axis=0) / w.sum(axis=0)
    means = means[np.isfinite(means)]
    if not len(means):
        return np.nan, np.nan
    low, high = np.percentile(means, [100 * (1 - ci) / 2, 100 * (1 + ci) / 2])
    return float(low), float(high)


def _stimulus_weights(trials: pd.DataFrame, stimuli: pd.Index, n_boot: int, rng):
    """(n_boot x stimuli) multiplicities of a bootstrap that resamples whole clips."""
    clip = pd.Series(trials["source_clip_id"].astype(object).to_numpy(),
                     index=loading.stimulus_key(trials).to_numpy())
    clip = clip[~clip.index.duplicated()].reindex(stimuli)
    clip = clip.where(clip.notna(), pd.Series(stimuli, index=stimuli).astype(str))
    codes, uniques = pd.factorize(clip.to_numpy(object))
    draws = rng.multinomial(len(uniques), np.full(len(uniques), 1 / len(uniques)), size=n_boot)
    return draws[:, codes].astype(float)


def _people_weights(n_people: int, n_boot: int, rng) -> np.ndarray:
    """(n_boot x people) multiplicities of a bootstrap that resamples people."""
    return rng.multinomial(n_people, np.full(n_people, 1 / n_people), size=n_boot)


def _evenly_spaced(frame: pd.DataFrame, k: int) -> pd.DataFrame:
    if len(frame) <= k:
        return frame
    return frame.iloc[np.unique(np.linspace(0, len(frame) - 1, k).round().astype(int))]


def _arrays(frame: pd.DataFrame):
    seen = frame.notna().to_numpy(float)
    return np.where(seen > 0, frame.to_numpy(float), 0.0), seen


def error_consistency(data: pd.DataFrame, max_reference_humans: int = MAX_REFERENCE_HUMANS,
                      n_boot: int = 1000, ci: float = 0.95,
                      rng: np.random.Generator | None = None) -> pd.DataFrame:
    """Cohen's kappa on trial-by-trial correctness, beyond what accuracies predict.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials of people and models on shared stimuli.
    max_reference_humans : int
        Human-human consistency (the ceiling a model is compared with) and the models'
        intervals use at most this many people, evenly spaced by id, since each costs a
        matrix product per pair.
    n_boot : int
        Resamples of the two-way bootstrap for the intervals (0: no intervals).
    ci : float
        Coverage of the intervals.
    rng : numpy.random.Generator, optional
        ``default_rng(0)`` when omitted.

    Returns
    -------
    pandas.DataFrame
        One row per model observer and one ``"human-human"`` row: ``observer``,
        ``n_pairs``, ``mean_kappa``, ``sd_kappa``, ``kappa_ci_low``, ``kappa_ci_high``,
        ``median_shared_stimuli``, and beside each model the ceiling
        ``human_ceiling_kappa``, ``human_ceiling_ci_low``, ``human_ceiling_ci_high``; then
        ``ci_method`` (the intervals' resampling: participants and clips).

    Notes
    -----
    For two observers on the :math:`n` stimuli both saw, with accuracies :math:`p_1,
    p_2` and observed agreement :math:`c_{obs}` (both right or both wrong),
    :math:`c_{exp} = p_1 p_2 + (1-p_1)(1-p_2)` and
    :math:`\\kappa = (c_{obs} - c_{exp}) / (1 - c_{exp})`. A model is paired with each
    person and the kappas averaged. Repeated presentations are averaged, and agreement
    is then taken in expectation. Intervals are percentile intervals of the mean kappa
    over a two-way bootstrap that resamples whole clips (both directions of a clip
    together, as in :mod:`analysis.bootstrap`) and, independently, people: a model's mean
    counts each person as often as drawn, the ceiling each pair of distinct people
    :math:`m_i m_j` times (a person drawn twice is not paired with itself). The ceiling's
    interval uses at most :data:`MAX_CEILING_CI_HUMANS` people.

    References
    ----------
    .. [1] Geirhos, Meding & Wichmann (2020). Beyond accuracy: quantifying trial-by-trial
       behaviour of CNNs and humans by measuring error consistency. NeurIPS 33.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    trials = loading.aot_trials(data)
    mat = _correctness_matrix(trials)
    kinds = set(mat.index.get_level_values("kind"))
    humans = mat.loc[C.HUMAN] if C.HUMAN in kinds else mat.iloc[:0].droplevel("kind")
    models = mat.loc[C.MODEL] if C.MODEL in kinds else mat.iloc[:0].droplevel("kind")
    weights = _stimulus_weights(trials, mat.columns, n_boot, rng) if n_boot else None
    ref = _evenly_spaced(humans, max_reference_humans)
    people = _people_weights(len(ref), n_boot, rng) if n_boot and len(ref) else None
    ceiling = _ceiling(ref, weights, people, ci)
    h_vals, h_seen = _arrays(humans)
    r_vals, r_seen = _arrays(ref)
    rows = []
    for model in models.index:
        m_vals, m_seen = _arrays(models.loc[[model]])
        kappa = _kappa_against(m_vals, m_seen > 0, h_vals, h_seen > 0)[0]
        shared = (m_seen * h_seen).sum(axis=1)
        row = _summary(model, kappa, shared)
        if weights is not None and people is not None:
            boot = _pair_kappas(np.repeat(m_vals, len(ref), 0), np.repeat(m_seen, len(ref), 0),
                                r_vals, r_seen, weights)
            row["kappa_ci_low"], row["kappa_ci_high"] = _mean_ci(boot, ci, people.T)
        row.update({f"human_ceiling_{k}": ceiling.get(k, np.nan)
                    for k in ("kappa", "ci_low", "ci_high")})
        rows.append(row)
    if ceiling:
        rows.append({**ceiling["summary"], "kappa_ci_low": ceiling["ci_low"],
                     "kappa_ci_high": ceiling["ci_high"]})
    table = pd.DataFrame(rows, columns=[
        "observer", "n_pairs", "mean_kappa", "sd_kappa", "kappa_ci_low", "kappa_ci_high",
        "median_shared_stimuli", "human_ceiling_kappa", "human_ceiling_ci_low",
        "human_ceiling_ci_high"])
    return table.assign(ci_method=bootstrap.SCHEME_LABELS["two-way"] if n_boot else "")


def _ceiling(ref: pd.DataFrame, weights, people, ci: float) -> dict:
    """Human-human kappa over all pairs of ``ref``, with its two-way bootstrap interval
    (``people``: resamples x people of ``ref``)."""
    if len(ref) < 2:
        return {}
    vals, seen = _arrays(ref)
    iu = np.triu_indices(len(ref), 1)
    kappa = _kappa_against(vals, seen > 0, vals, seen > 0)[iu]
    shared = (seen @ seen.T)[iu]
    summary = _summary("human-human", kappa, shared)
    out = {"summary": summary, "kappa": summary["mean_kappa"], "ci_low": np.nan,
           "ci_high": np.nan}
    if weights is not None:
        few = _evenly_spaced(ref, MAX_CEILING_CI_HUMANS)
        drawn = people[:, ref.index.get_indexer(few.index)]
        vals, seen = _arrays(few)
        i, j = np.triu_indices(len(few), 1)
        out["ci_low"], out["ci_high"] = _mean_ci(
            _pair_kappas(vals[i], seen[i], vals[j], seen[j], weights), ci,
            (drawn[:, i] * drawn[:, j]).T)
    return out


def _summary(name, kappa, shared):
    ok = np.isfinite(kappa) & (shared > 0)
    return {"observer": name, "n_pairs": int(ok.sum()),
            "mean_kappa": float(np.mean(kappa[ok])) if ok.any() else np.nan,
            "sd_kappa": float(np.std(kappa[ok])) if ok.any() else np.nan,
            "median_shared_stimuli": float(np.median(shared[ok])) if ok.any() else np.nan}


def category_gap(data: pd.DataFrame) -> pd.DataFrame:
    """Human minus model, in percentage points, per category and model.

    ``data`` may already be broken out by category (a ``category`` column, as from
    :func:`analysis.loading.explode_categories`); otherwise it is broken out here.

    Returns
    -------
    pandas.DataFrame
        ``model`` (the observer), ``category``, then ``human_<m>``, ``model_<m>`` and
        ``gap_<m>_points`` (``100 * (human - model)``) for ``m`` in accuracy, f1_forward,
        f1_backward, and ``note``. Where a model answered nothing readable in a category
        its values and gaps are NaN and ``note`` says so (see
        :func:`analysis.nonresponse.text_and_logit_accuracy` for its logit accuracy).
    """
    table = data.assign(observer=observers.observer_column(data))
    return gap_from_category_table(aot.aot_metrics(table, by=["observer", "category"]))


def gap_from_category_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`category_gap` from an ``observer x category`` table of
    :func:`analysis.aot.aot_metrics` (people pooled as observer ``"human"``)."""
    human = table[table["observer"] == C.HUMAN].set_index("category")
    rows = []
    for model, part in table[table["observer"] != C.HUMAN].groupby("observer"):
        part = part.set_index("category")
        common = part.index.intersection(human.index)
        silent = part.loc[common, "n_answered"].to_numpy() == 0
        out = pd.DataFrame({"model": model, "category": common})
        for m in ("accuracy", "f1_forward", "f1_backward"):
            out[f"human_{m}"] = human.loc[common, m].to_numpy()
            out[f"model_{m}"] = np.where(silent, np.nan, part.loc[common, m].to_numpy(float))
            out[f"gap_{m}_points"] = 100 * (out[f"human_{m}"] - out[f"model_{m}"])
        trials = part.loc[common, "n_trials"].to_numpy()
        out["note"] = [f"n/a: no readable answer in {n} trials" if s else ""
                       for s, n in zip(silent, trials)]
        rows.append(out)
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["model", "category"])


def difficulty_correlation(gap: pd.DataFrame) -> pd.DataFrame:
    """Do people and a model find the same categories hard?

    Parameters
    ----------
    gap : pandas.DataFrame
        The table of :func:`category_gap`.

    Returns
    -------
    pandas.DataFrame
        ``model, n_categories, pearson_r, pearson_p, spearman_rho, spearman_p`` over
        per-category accuracies (humans pooled).
    """
    rows = []
    for model, part in gap.groupby("model"):
        x, y = part["human_accuracy"].to_numpy(float), part["model_accuracy"].to_numpy(float)
        ok = np.isfinite(x) & np.isfinite(y)
        row = {"model": model, "n_categories": int(ok.sum()), "pearson_r": np.nan,
               "pearson_p": np.nan, "spearman_rho": np.nan, "spearman_p": np.nan}
        if ok.sum() >= 3 and np.ptp(x[ok]) > 0 and np.ptp(y[ok]) > 0:
            row["pearson_r"], row["pearson_p"] = stats.pearsonr(x[ok], y[ok])
            row["spearman_rho"], row["spearman_p"] = stats.spearmanr(x[ok], y[ok])
        rows.append(row)
    return pd.DataFrame(rows, columns=["model", "n_categories", "pearson_r", "pearson_p",
                                       "spearman_rho", "spearman_p"])
