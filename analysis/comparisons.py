"""The tests a paper reports: accuracy against chance, paired model comparisons, per-item
human-model correlation, and Holm's correction over the whole family.

Every function takes counted arrow-of-time trials (grouped by their ``observer`` column, or
by :func:`analysis.observers.observer_ids` where they have none) or a table built from them,
and returns a
DataFrame with a ``p_value`` column; :func:`holm` adjusts those p-values together.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from analysis import bootstrap, intervals, loading, observers
from analysis import columns as C

EXACT_BELOW = 25  # McNemar: exact binomial test when fewer discordant pairs than this
CHANCE = 0.5


BINOMIAL_COLUMNS = ["observer", "n_trials", "n_correct", "accuracy", "unit", "n_units",
                    "ci_low", "ci_high", "p_value", "test", "note"]


def binomial_tests(kept: pd.DataFrame, ci: float = 0.95, n_boot: int = 1000,
                   rng: np.random.Generator | None = None) -> pd.DataFrame:
    """Each observer's accuracy against chance (50%), tested over independent units.

    Parameters
    ----------
    kept : pandas.DataFrame
        Counted trials (non-responses already handled by the report's policy).
    ci : float
        Coverage of the interval.
    n_boot : int
        Resamples of the people's two-way bootstrap.
    rng : numpy.random.Generator, optional
        For that bootstrap; ``default_rng(0)`` when omitted.

    Returns
    -------
    pandas.DataFrame
        ``observer, n_trials, n_correct, accuracy`` (over trials), ``unit, n_units`` (what
        was tested), ``ci_low, ci_high, p_value, test, note``.

    Notes
    -----
    Trials are not independent, so none is a unit. People: participants and clips are
    both samples, so the test is the two-way (participant x clip) percentile bootstrap of
    their accuracy (:mod:`analysis.bootstrap`); ``p_value`` is the level at which its
    interval leaves out 0.5 (:func:`analysis.intervals.percentile_p_value`), both widened
    for few participants or clips (:func:`analysis.intervals.few_units`). A t-test over
    participants treats the clips as fixed: on simulated nulls with a clip SD of 1 logit it
    rejected far more often than its level (bench/null_fpr.py). Below
    :data:`analysis.bootstrap.MIN_PARTICIPANTS` participants there is no test, with a note.
    Models: an item is a clip in one direction, whatever the
    label orders it was asked in; each item's accuracy is averaged over its presentations
    and a two-sided exact binomial (sign) test counts the items more often right than wrong
    among those not tied at 50% (scipy's ``binomtest``), with the Clopper-Pearson interval
    of that share. With one presentation per item this is the binomial test of accuracy.
    """
    # Only the columns read here: each observer's rows are copied out of a million trials.
    columns = [c for c in ("subject_id", "subject_kind", "trial_type", "source_clip_id",
                           "stimulus_id", "direction", "correct_response", "response")
               if c in kept.columns]
    kept = kept[columns].assign(
        observer=observers.observer_column(kept),
        right=(kept["response"] == kept["correct_response"]).to_numpy(float))
    rows = []
    for observer, trials in kept.groupby("observer", sort=True, observed=True):
        n, k = len(trials), int(trials["right"].sum())
        row = {"observer": observer, "n_trials": n, "n_correct": k,
               "accuracy": k / n if n else np.nan, "ci_low": np.nan, "ci_high": np.nan,
               "p_value": np.nan, "note": ""}
        # People by who they are, never by the observer's name (that was once "human / nan").
        if "subject_kind" in trials and (trials["subject_kind"] == C.HUMAN).all():
            row.update(_two_way_test(trials, ci, n_boot, rng))
        else:
            row.update(_item_sign_test(trials, ci))
        rows.append(row)
    return pd.DataFrame(rows, columns=BINOMIAL_COLUMNS)


def _two_way_test(trials: pd.DataFrame, ci: float, n_boot: int, rng) -> dict:
    n_people = trials["subject_id"].nunique()
    out = {"unit": "participants x clips", "n_units": n_people,
           "test": "two-way (participant x clip) percentile bootstrap of accuracy against "
                   "0.5"}
    too_few = bootstrap.too_few_people(n_people)
    if too_few:
        return {**out, "note": f"not estimated: {too_few}"}
    draws = bootstrap.bootstrap_draws(trials, scheme="two-way", n_boot=n_boot, rng=rng)
    boot = draws.boot["accuracy"]
    few = intervals.few_units(trials)
    (low,), (high,) = intervals.nan_percentiles(boot, *intervals.corrected_levels(ci, few))
    note = f"{trials['source_clip_id'].nunique()} clips, {n_boot} resamples"
    if intervals.no_spread(boot)[0]:  # e.g. every answer right: [1, 1] is no interval
        low, high = intervals.exact_bounds(draws.point["accuracy"][0], draws.n_units[0], ci)
        note += "; " + intervals.EXACT_NOTE.format(n=draws.n_units[0])
    return {**out, "ci_low": low, "ci_high": high,
            "p_value": intervals.percentile_p_value(boot[0], CHANCE, few), "note": note}


def _item_sign_test(trials: pd.DataFrame, ci: float) -> dict:
    item = loading.stimulus_key(trials).astype(str).to_numpy()
    per = trials["right"].groupby(item).mean().to_numpy()
    decided = per[per != CHANCE]
    out = {"unit": "items", "n_units": len(per),
           "test": "exact binomial (sign) test over items (clip x direction), presentations "
                   "averaged"}
    if not len(decided):
        return {**out, "note": "n/a: every item tied at 50%"}
    test = stats.binomtest(int((decided > CHANCE).sum()), len(decided), CHANCE)
    interval = test.proportion_ci(confidence_level=ci, method="exact")
    return {**out, "ci_low": interval.low, "ci_high": interval.high, "p_value": test.pvalue,
            "note": f"{len(per) - len(decided)} items tied at 50% left out"
            if len(decided) < len(per) else ""}


def mcnemar(b: int, c: int) -> tuple[float, float, str]:
    """McNemar's test from the discordant counts ``b`` (only A right), ``c`` (only B right).

    Returns ``(statistic, p_value, method)``: below :data:`EXACT_BELOW` discordant pairs
    the exact binomial test (statistic = min(b, c)), else the continuity-corrected
    :math:`\\chi^2_1 = (|b - c| - 1)^2 / (b + c)`.

    Examples
    --------
    >>> round(mcnemar(10, 2)[1], 4)  # exact: 2 * P(Bin(12, .5) <= 2)
    0.0386
    """
    n = b + c
    if n == 0:
        return 0.0, 1.0, "exact binomial"
    if n < EXACT_BELOW:
        return float(min(b, c)), float(stats.binomtest(min(b, c), n, 0.5).pvalue), \
            "exact binomial"
    statistic = (abs(b - c) - 1) ** 2 / n
    return float(statistic), float(stats.chi2.sf(statistic, 1)), "chi-square, corrected"


def _item_correctness(kept: pd.DataFrame) -> pd.DataFrame:
    """Model observers x items (a clip in one direction): the item's accuracy over its
    presentations (label orders, repeats), NaN where unseen."""
    models = loading.aot_trials(kept[kept["subject_kind"] == C.MODEL])
    models = models.assign(observer=observers.observer_column(models))
    item = loading.stimulus_key(models).astype(str)
    correct = (models["response"] == models["correct_response"]).astype(float)
    frame = pd.DataFrame({"observer": models["observer"].to_numpy(), "item": item.to_numpy(),
                          "correct": correct.to_numpy()})
    return frame.groupby(["observer", "item"])["correct"].mean().unstack()


def mcnemar_tests(kept: pd.DataFrame) -> pd.DataFrame:
    """McNemar's test for every pair of model observers on the items both answered.

    Parameters
    ----------
    kept : pandas.DataFrame
        Counted trials with ``observer``. An item is a clip in one direction; its
        presentations (both label orders, repeats) are averaged first, so they are not
        counted as independent items. A non-response counts as wrong.

    Returns
    -------
    pandas.DataFrame
        ``observer_a, observer_b, n_items, n_both_correct, n_only_a, n_only_b,
        n_both_wrong, n_tied_partial, accuracy_a, accuracy_b`` (on the shared items),
        ``statistic, p_value, method`` (see :func:`mcnemar`). ``n_only_a`` counts the items
        on which A did better than B (with one presentation per item: only A right),
        ``n_tied_partial`` those both got equally, partly right; McNemar's test is the
        sign test of ``n_only_a`` against ``n_only_b``.

    References
    ----------
    .. [1] McNemar, Q. (1947). Note on the sampling error of the difference between
       correlated proportions or percentages. Psychometrika 12, 153-157.
    .. [2] Fagerland, Lydersen & Laake (2013). The McNemar test for binary matched-pairs
       data: mid-p and asymptotic are better than exact conditional. BMC Med. Res. Meth. 13.
    """
    matrix = _item_correctness(kept)
    rows = []
    for a, b in combinations(sorted(matrix.index), 2):
        x, y = matrix.loc[a], matrix.loc[b]
        both = x.notna() & y.notna()
        x, y = x[both].to_numpy(float), y[both].to_numpy(float)
        if not len(x):
            continue
        n_a, n_b = int((x > y).sum()), int((x < y).sum())
        statistic, p, method = mcnemar(n_a, n_b)
        rows.append({"observer_a": a, "observer_b": b, "n_items": len(x),
                     "n_both_correct": int(((x == 1) & (y == 1)).sum()), "n_only_a": n_a,
                     "n_only_b": n_b, "n_both_wrong": int(((x == 0) & (y == 0)).sum()),
                     "n_tied_partial": int(((x == y) & (x > 0) & (x < 1)).sum()),
                     "accuracy_a": x.mean(), "accuracy_b": y.mean(), "statistic": statistic, "p_value": p,
                     "method": method})
    return pd.DataFrame(rows, columns=["observer_a", "observer_b", "n_items", "n_both_correct",
                                       "n_only_a", "n_only_b", "n_both_wrong", "n_tied_partial",
                                       "accuracy_a", "accuracy_b", "statistic", "p_value",
                                       "method"])


def item_correlations(agreement: pd.DataFrame, ci: float = 0.95, n_boot: int = 1000,
                      rng: np.random.Generator | None = None) -> pd.DataFrame:
    """Per-item correlation of people's accuracy with each model's, with a CI.

    Parameters
    ----------
    agreement : pandas.DataFrame
        :func:`analysis.human_vs_model.per_stimulus_agreement`: one row per stimulus and
        model with ``human_accuracy``, ``model_correct``, ``source_clip_id`` (a row
        without one is its own clip) and ``direction``.
    ci : float
        Coverage of the interval.
    n_boot : int
        Resamples of clips, and permutations of them.
    rng : numpy.random.Generator, optional
        ``default_rng(0)`` when omitted, so the report's other draws stay as they were.

    Returns
    -------
    pandas.DataFrame
        ``model, n_items, n_clips, pearson_r, r_ci_low, r_ci_high, p_value, spearman_rho,
        note``.

    Notes
    -----
    Pearson's r over items (point-biserial where a model saw each item once). An item is a
    clip in one direction, and a clip's two directions are alike for people and for a
    model, so they are not independent: the t-test of r = 0 over items rejected 8-10% of
    true nulls at alpha 0.05 (2,000 studies a cell, 20-100 clips, people's and the
    model's clip SDs 1.5 and 2 logits). So whole clips are the units: the interval is the
    percentile interval of r over resampled clips
    (:func:`analysis.bootstrap.resample_counts`), the test a permutation test that moves
    the model's answers to a clip, both directions together, to another clip (exact under
    no relation; 5.0-6.0% of 300 such nulls). ``n_boot`` serves both, so the smallest p
    is 1 / (n_boot + 1). Undefined (NaN, with a note) where either side is constant or
    fewer than 4 items are shared.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    rows = []
    for model, part in agreement.groupby("model", sort=True):
        x = part["human_accuracy"].to_numpy(float)
        y = part["model_correct"].to_numpy(float)
        ok = np.isfinite(x) & np.isfinite(y)
        clips = (part["source_clip_id"] if "source_clip_id" in part
                 else pd.Series(np.nan, index=part.index))
        clips = clips.astype(object).where(clips.notna(), part.index.to_series().astype(str))
        codes, n_clips = bootstrap.unit_codes(clips[ok].reset_index(drop=True))
        slot = (part["direction"].to_numpy(object)[ok] if "direction" in part
                else np.zeros(ok.sum(), dtype=object))
        x, y = x[ok], y[ok]
        row = {"model": model, "n_items": len(x), "n_clips": n_clips, "pearson_r": np.nan,
               "r_ci_low": np.nan, "r_ci_high": np.nan, "p_value": np.nan,
               "spearman_rho": np.nan, "note": ""}
        if len(x) < 4:
            row["note"] = "n/a: fewer than 4 shared items"
        elif np.ptp(x) == 0 or np.ptp(y) == 0:
            row["note"] = "n/a: " + ("people" if np.ptp(x) == 0 else "the model") + \
                " scored every item alike"
        else:
            r = stats.pearsonr(x, y)[0]
            boot = _weighted_r(x, y, bootstrap.resample_counts(rng, n_clips, n_boot)[:, codes])
            low, high = intervals.nan_percentiles(boot[None], 100 * (1 - ci) / 2,
                                                  100 * (1 + ci) / 2)
            row.update(pearson_r=r, r_ci_low=low[0], r_ci_high=high[0],
                       p_value=_clip_permutation_p(x, y, codes, slot, r, n_boot, rng),
                       spearman_rho=stats.spearmanr(x, y)[0])
        rows.append(row)
    return pd.DataFrame(rows, columns=["model", "n_items", "n_clips", "pearson_r", "r_ci_low",
                                       "r_ci_high", "p_value", "spearman_rho", "note"])


def _clip_permutation_p(x, y, codes, slot, r: float, n_perm: int, rng) -> float:
    """Two-sided p of r = 0 from ``n_perm`` permutations of whole clips: the model's answers
    to a clip (per ``slot``, its direction) move together to another clip, so the clips'
    own likeness is kept and only their pairing with people's accuracy is random."""
    slots, s = np.unique(slot.astype(str), return_inverse=True)
    n_clips = int(codes.max()) + 1
    grid_x, grid_y = np.full((2, n_clips, len(slots)), np.nan)
    grid_x[codes, s], grid_y[codes, s] = x, y
    perms = np.argsort(rng.random((n_perm, n_clips)), axis=1)
    gx, gy = np.broadcast_to(grid_x.ravel(), (n_perm, grid_x.size)), \
        grid_y[perms].reshape(n_perm, -1)
    seen = np.isfinite(gx) & np.isfinite(gy)
    r_perm = _weighted_r_rows(np.where(seen, gx, 0.0), np.where(seen, gy, 0.0), seen)
    hits = int((np.abs(r_perm) >= abs(r) - 1e-12).sum())  # NaN (a constant side) never
    return (hits + 1) / (n_perm + 1)


def _weighted_r(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson's r of ``x`` and ``y`` under each row of item weights ``w`` (resamples x
    items); NaN where a resample leaves either side constant."""
    return _weighted_r_rows(x[None], y[None], w.astype(float))


def _weighted_r_rows(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair of ``x`` and ``y`` (broadcast) weighted by ``w``."""
    n = w.sum(1)
    mx, my = (w * x).sum(1) / n, (w * y).sum(1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = (w * x * y).sum(1) / n - mx * my
        var = ((w * x * x).sum(1) / n - mx ** 2) * ((w * y * y).sum(1) / n - my ** 2)
        r = cov / np.sqrt(np.where(var > 1e-15, var, np.nan))
    return np.where(np.isfinite(r), np.clip(r, -1, 1), np.nan)


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values; NaN stays NaN and is not counted in the family.

    Notes
    -----
    With the :math:`m` p-values sorted, :math:`p_{(1)} \\le \\dots \\le p_{(m)}`,
    :math:`\\tilde p_{(i)} = \\max_{j \\le i} \\min(1, (m - j + 1)\\, p_{(j)})`.

    References
    ----------
    .. [1] Holm, S. (1979). A simple sequentially rejective multiple test procedure.
       Scand. J. Statist. 6, 65-70.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).round(2).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(steps)
    return out


def holm_family(tables: dict) -> tuple[dict, int]:
    """Adjust the ``p_value`` columns of several tables as one family (``p_holm``).

    Returns the tables (copies, with ``p_holm``) and the family size.
    """
    names = [n for n, t in tables.items() if t is not None and "p_value" in t]
    pooled = np.concatenate([tables[n]["p_value"].to_numpy(float) for n in names]) \
        if names else np.zeros(0)
    adjusted = holm(pooled)
    out, start = dict(tables), 0
    for n in names:
        end = start + len(tables[n])
        out[n] = tables[n].assign(p_holm=adjusted[start:end])
        start = end
    return out, int(np.isfinite(pooled).sum())
