"""People against models on the same stimuli: per-clip agreement, error consistency,
difficulty correlation and the gap per category."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis import aot
from analysis import columns as C
from analysis import loading

MAX_REFERENCE_HUMANS = 200


def _correctness_matrix(trials: pd.DataFrame) -> pd.DataFrame:
    """Subjects x stimuli mean correctness (NaN where a subject never saw a stimulus)."""
    frame = pd.DataFrame({"subject": trials["subject_id"].to_numpy(),
                          "stimulus": loading.stimulus_key(trials).to_numpy(),
                          "correct": trials["correct"].to_numpy(float)})
    return frame.groupby(["subject", "stimulus"])["correct"].mean().unstack()


def per_stimulus_agreement(data: pd.DataFrame) -> pd.DataFrame:
    """Human accuracy per stimulus next to each model's correctness on it.

    Returns
    -------
    pandas.DataFrame
        ``stimulus, source_clip_id, direction, n_humans, human_accuracy, model,
        model_correct`` (a model shown a stimulus several times, e.g. under both label
        orders, gets its mean correctness).
    """
    trials = loading.aot_trials(data)
    trials = trials.assign(stimulus=loading.stimulus_key(trials))
    humans = trials[trials["subject_kind"] == C.HUMAN]
    models = trials[trials["subject_kind"] == C.MODEL]
    h = humans.groupby("stimulus").agg(source_clip_id=("source_clip_id", "first"),
                                       direction=("direction", "first"),
                                       n_humans=("subject_id", "nunique"),
                                       human_accuracy=("correct", "mean"))
    m = models.groupby(["subject_id", "stimulus"])["correct"].mean().rename("model_correct")
    m = m.reset_index().rename(columns={"subject_id": "model"})
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


def error_consistency(data: pd.DataFrame,
                      max_reference_humans: int = MAX_REFERENCE_HUMANS) -> pd.DataFrame:
    """Cohen's kappa on trial-by-trial correctness, beyond what accuracies predict.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials of people and models on shared stimuli.
    max_reference_humans : int
        Human-human consistency (the ceiling a model is compared with) uses at most this
        many people, evenly spaced by id, since it costs a matrix product per pair.

    Returns
    -------
    pandas.DataFrame
        One row per model and one ``"human-human"`` row: ``observer``, ``n_pairs``,
        ``mean_kappa``, ``sd_kappa``, ``median_shared_stimuli``.

    Notes
    -----
    For two observers on the :math:`n` stimuli both saw, with accuracies :math:`p_1,
    p_2` and observed agreement :math:`c_{obs}` (both right or both wrong),
    :math:`c_{exp} = p_1 p_2 + (1-p_1)(1-p_2)` and
    :math:`\\kappa = (c_{obs} - c_{exp}) / (1 - c_{exp})`. A model is paired with each
    person and the kappas averaged. Repeated presentations are averaged, and agreement
    is then taken in expectation.

    References
    ----------
    .. [1] Geirhos, Meding & Wichmann (2020). Beyond accuracy: quantifying trial-by-trial
       behaviour of CNNs and humans by measuring error consistency. NeurIPS 33.
    """
    trials = loading.aot_trials(data)
    mat = _correctness_matrix(trials)
    kinds = trials.groupby("subject_id")["subject_kind"].first()
    humans = mat.loc[[s for s in mat.index if kinds.get(s) == C.HUMAN]]
    h_vals, h_seen = humans.to_numpy(float), humans.notna().to_numpy()
    rows = []
    for model in [s for s in mat.index if kinds.get(s) == C.MODEL]:
        m = mat.loc[[model]]
        kappa = _kappa_against(m.to_numpy(float), m.notna().to_numpy(), h_vals, h_seen)[0]
        shared = (m.notna().to_numpy() & h_seen).sum(axis=1)
        rows.append(_summary(model, kappa, shared))
    ref = humans.iloc[np.unique(np.linspace(0, len(humans) - 1, min(
        len(humans), max_reference_humans)).round().astype(int))] if len(humans) else humans
    if len(ref) >= 2:
        r_vals, r_seen = ref.to_numpy(float), ref.notna().to_numpy()
        kappa = _kappa_against(r_vals, r_seen, r_vals, r_seen)
        iu = np.triu_indices(len(ref), 1)
        shared = (r_seen.astype(float) @ r_seen.T.astype(float))[iu]
        rows.append(_summary("human-human", kappa[iu], shared))
    return pd.DataFrame(rows, columns=["observer", "n_pairs", "mean_kappa", "sd_kappa",
                                       "median_shared_stimuli"])


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
        ``model, category``, then ``human_<m>``, ``model_<m>`` and ``gap_<m>_points``
        (``100 * (human - model)``) for ``m`` in accuracy, f1_forward, f1_backward.
    """
    observers = data.assign(observer=np.where(data["subject_kind"] == C.MODEL,
                                              data["subject_id"], C.HUMAN))
    return gap_from_category_table(aot.aot_metrics(observers, by=["observer", "category"]))


def gap_from_category_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`category_gap` from an ``observer x category`` table of
    :func:`analysis.aot.aot_metrics` (people pooled as observer ``"human"``)."""
    human = table[table["observer"] == C.HUMAN].set_index("category")
    rows = []
    for model, part in table[table["observer"] != C.HUMAN].groupby("observer"):
        part = part.set_index("category")
        common = part.index.intersection(human.index)
        out = pd.DataFrame({"model": model, "category": common})
        for m in ("accuracy", "f1_forward", "f1_backward"):
            out[f"human_{m}"] = human.loc[common, m].to_numpy()
            out[f"model_{m}"] = part.loc[common, m].to_numpy()
            out[f"gap_{m}_points"] = 100 * (out[f"human_{m}"] - out[f"model_{m}"])
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
