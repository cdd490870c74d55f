"""Psychometric functions over a physical sweep, for people, VLMs and self-supervised models.

Three kinds of observer are fitted on one axis of a physical parameter (restitution 0.1-1.0,
damping 0.0-5.0):

* people: binary judgements; P(correct) per level (``guess=0.5``: correct on forward and
  reversed clips, so chance is one half) or P("forward") (``guess=0``), per participant and
  pooled over participants (:func:`psychometric_table`);
* VLMs: P(correct) per clip from P(forward) from logits, the two label orders averaged
  (:func:`vlm_clip_correct`), fitted as fractional responses per model and setting;
* self-supervised models: per-clip TRA, which is not monotonic in the parameter (the TRA paper
  finds a peak at restitution 0.5 and damping 2.0); :func:`tra_peak_table` fits a Gaussian bump.

Why not psignifit 4 (``psignifit`` 4.3 on PyPI, tried here): one fit with its default free
lapse, guess and overdispersion took 8.5 s on this 2-core machine (0.15 s with them fixed), so
a cluster bootstrap over participants and a coverage check of 200 simulated data sets were
out of reach; its intervals are Bayesian credible intervals that treat trials as independent,
which is wrong for a pooled fit where trials cluster in participants; it takes counts, not
the VLMs' per-clip probabilities; and it pulls in matplotlib. The fit here is the binomial
maximum-likelihood fit (Fisher scoring, vectorised over bootstrap resamples: 2,000 refits take
well under a second); with no lapse it equals statsmodels' binomial GLM with a probit or logit
link, which the tests check. psignifit's conventions are kept: ``threshold`` is where the
sigmoid is half way, ``width`` the distance between its 5% and 95% points, and the smallest
width allowed defaults to the smallest spacing of the levels.

Confidence intervals are percentile bootstrap intervals (``n_boot`` resamples, 2,000 by
default): within each level over trials or clips for one observer; over participants
(clusters) for the pooled fit. A resample whose best fit lies on a bound (width at its
minimum or maximum, threshold more than one sweep span outside the sweep) keeps that bound,
which widens the interval rather than narrowing it; ``boot_at_bound`` counts them. Measured
coverage of nominal 95% intervals (200 simulated observers, 10 levels x 30 trials, 200
resamples): threshold 0.925-0.945, width 0.895 (the ML width is biased low). Where the
fit of the data itself lies on a bound (responses switch from all wrong to all right between
two adjacent levels), ``at_bound`` is True, the threshold is the best point on that bound and
the intervals are NaN: no interval is drawn where the likelihood gives none.

Normalisation for a shared axis: each observer's fitted curve is rescaled to [0, 1] between
its own minimum and maximum over the sweep (:func:`normalised_curves`). A TRA bump whose
height interval includes 0 is not rescaled (NaN): stretching noise to [0, 1] would draw a
peak the data do not show.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from analysis import columns as C
from analysis.bootstrap import resample_counts

WIDTH_ALPHA = 0.05  # width = distance between the sigmoid's 5% and 95% points (psignifit's)
NORMALISATION = "min-max of the fitted curve over the sweep, per observer"
SIGMOIDS = {  # name -> (cdf, pdf, quantile)
    "norm": (special.ndtr, stats.norm.pdf, special.ndtri),
    "logistic": (special.expit, lambda e: special.expit(e) * special.expit(-e), special.logit),
}

# Published, not measured: Vesesook & Yang, Temporal Reversal Asymmetry, V-JEPA 2 (ViT-L, EMA
# target encoder) at context 12 (Table 9); random initialisation: Appendix F, Table 5.
PUBLISHED_TRA_PEAKS = (
    {"model": "V-JEPA 2", "scenario": "bouncing_ball", "parameter": "restitution",
     "peak_location": 0.5, "relation": "=", "peak_tra_pct": 0.27, "context_frames": 12,
     "reference": "TRA paper, Table 9"},
    {"model": "V-JEPA 2", "scenario": "pendulum", "parameter": "damping",
     "peak_location": 2.0, "relation": "=", "peak_tra_pct": 0.68, "context_frames": 12,
     "reference": "TRA paper, Table 9"},
    {"model": "V-JEPA 2 (random init)", "scenario": "all", "parameter": "all",
     "peak_location": np.nan, "relation": "<", "peak_tra_pct": 0.01, "context_frames": np.nan,
     "reference": "TRA paper, Appendix F, Table 5"},
)


def published_tra_peaks() -> pd.DataFrame:
    """The TRA paper's peaks as a table with ``source`` = "published" (not measured here)."""
    return pd.DataFrame(PUBLISHED_TRA_PEAKS).assign(source="published")


def _levels(data: pd.DataFrame, level: str, dv: str) -> pd.DataFrame:
    missing = [c for c in (level, dv) if c not in data.columns]
    if missing:
        raise ValueError(f"data lacks column(s): {', '.join(missing)}")
    values = data[[level, dv]].apply(pd.to_numeric, errors="coerce").astype(float)
    if values.isna().any().any() or not np.isfinite(values.to_numpy()).all():
        raise ValueError(f"{level!r} and {dv!r} must be finite numbers (NaN found); drop "
                         "unanswered trials first")
    if ((values[dv] < 0) | (values[dv] > 1)).any():
        raise ValueError(f"{dv!r} must lie in [0, 1]")
    if values[level].nunique() < 3:
        raise ValueError(f"a psychometric fit needs at least 3 levels of {level!r}; "
                         f"got {values[level].nunique()}")
    if values[dv].nunique() < 2:
        raise ValueError(f"{dv!r} does not vary (all {values[dv].iloc[0]:g}): no threshold "
                         "can be estimated from data at ceiling or floor")
    return values


def _bounds(x: np.ndarray, width_min):
    span = x.max() - x.min()
    width_min = np.diff(np.unique(x)).min() if width_min is None else width_min
    return span, width_min, 100 * span  # widest: flat over a hundred sweeps


def _start(x, k, n, cdfs, guess, lapse, sign):
    p = (k.sum(0) + 0.5) / (n.sum(0) + 1)
    z = cdfs[2](np.clip((p - guess) / (1 - guess - lapse), 0.02, 0.98))
    w = n.sum(0)
    b1 = max(abs(np.cov(x, z, aweights=w + 1e-9)[0, 1] / np.cov(x, aweights=w + 1e-9)), 0.5)
    b0 = np.average(z, weights=w + 1e-9) - sign * b1 * np.average(x, weights=w + 1e-9)
    return np.full(k.shape[0], b0), np.full(k.shape[0], sign * b1)


def _scores(b0, b1, x, k, n, cdfs, guess, lapse):
    eta = b0[:, None] + b1[:, None] * x
    p = np.clip(guess + (1 - guess - lapse) * cdfs[0](eta), 1e-12, 1 - 1e-12)
    d = (1 - guess - lapse) * cdfs[1](eta)
    u, w = (k - n * p) * d / (p * (1 - p)), n * d * d / (p * (1 - p))
    loglik = (special.xlogy(k, p) + special.xlogy(n - k, 1 - p)).sum(1)
    return (u.sum(1), (u * x).sum(1)), (w.sum(1), (w * x).sum(1), (w * x * x).sum(1)), loglik


def _step(b0, b1, x, k, n, cdfs, guess, lapse, b1_lim, m_lim, sign):
    """One projected Fisher-scoring step; along an active bound, a 1-D step on it."""
    (g0, g1), (i00, i01, i11), _ = _scores(b0, b1, x, k, n, cdfs, guess, lapse)
    det = i00 * i11 - i01 ** 2 + 1e-12
    s0, s1 = (i11 * g0 - i01 * g1) / det, (i00 * g1 - i01 * g0) / det
    on_b1 = (np.abs(b1) >= b1_lim[1] - 1e-12) & (sign * s1 > 0) | \
            (np.abs(b1) <= b1_lim[0] + 1e-12) & (sign * s1 < 0)
    s0, s1 = np.where(on_b1, g0 / (i00 + 1e-12), s0), np.where(on_b1, 0, s1)
    m, m_try = -b0 / b1, -(b0 + s0) / np.where(b1 + s1 == 0, 1e-300, b1 + s1)
    on_m = ((m <= m_lim[0] + 1e-12) & (m_try < m) | (m >= m_lim[1] - 1e-12) & (m_try > m)) & ~on_b1
    s1 = np.where(on_m, (g1 - m * g0) / (m * m * i00 - 2 * m * i01 + i11 + 1e-12), s1)
    s0 = np.where(on_m, -m * s1, s0)
    scale = np.minimum(1, b1_lim[1] / 4 / (np.abs(s0) + np.abs(s1) + 1e-300))  # damped
    new1 = sign * np.clip(sign * (b1 + scale * s1), *b1_lim)
    return -new1 * np.clip(-(b0 + scale * s0) / new1, *m_lim), new1


def _fisher(x, k, n, cdfs, guess, lapse, b1_lim, m_lim, sign, iters=300):
    """ML (b0, b1) per row of k, n on standardised x, with b1 in sign * b1_lim and the
    threshold -b0/b1 in m_lim; rows stop moving once converged."""
    b0, b1 = _start(x, k, n, cdfs, guess, lapse, sign)
    active = np.arange(len(b0))
    for _ in range(iters):
        a0, a1, ka, na = b0[active], b1[active], k[active], n[active]
        new0, new1 = _step(a0, a1, x, ka, na, cdfs, guess, lapse, b1_lim, m_lim, sign)
        old_ll = _scores(a0, a1, x, ka, na, cdfs, guess, lapse)[2]
        for _ in range(12):  # halve steps that lower the likelihood (the set is convex)
            worse = _scores(new0, new1, x, ka, na, cdfs, guess, lapse)[2] < old_ll - 1e-12
            if not worse.any():
                break
            new0, new1 = np.where(worse, (a0 + new0) / 2, new0), np.where(worse, (a1 + new1) / 2, new1)
        gain = _scores(new0, new1, x, ka, na, cdfs, guess, lapse)[2] - old_ll
        moving = (np.abs(new0 - a0) + np.abs(new1 - a1) > 1e-10) & (gain > 1e-11)
        b0[active], b1[active] = new0, new1
        active = active[moving]
        if not active.size:
            break
    at_bound = (np.abs(b1) >= b1_lim[1] - 1e-9) | (np.abs(b1) <= b1_lim[0] + 1e-9) | \
               (np.abs(-b0 / b1 - np.mean(m_lim)) >= np.diff(m_lim)[0] / 2 - 1e-9)
    return b0, b1, _scores(b0, b1, x, k, n, cdfs, guess, lapse)[2], at_bound


def fit_counts(x, k, n, sigmoid="norm", guess=0.0, lapse=0.0, width_min=None):
    """ML psychometric fits of rows of counts ``k`` of ``n`` (fractional k allowed) at levels
    ``x``: P(x) = guess + (1 - guess - lapse) F((x - threshold) / s).

    Returns a dict of arrays, one value per row: ``threshold``, ``width`` (5%-95% span of F,
    in units of x), ``direction`` (+1 rising, -1 falling), ``loglik``, ``at_bound``.
    """
    x, k, n = np.asarray(x, float), np.atleast_2d(k).astype(float), np.atleast_2d(n).astype(float)
    cdfs = SIGMOIDS[sigmoid]
    span, wmin, wmax = _bounds(x, width_min)
    centre, half = (x.max() + x.min()) / 2, span / 2
    spread = cdfs[2](1 - WIDTH_ALPHA) - cdfs[2](WIDTH_ALPHA)
    b1_lim = (spread * half / wmax, spread * half / wmin)
    z = (x - centre) / half
    fits = [_fisher(z, k, n, cdfs, guess, lapse, b1_lim, (-3.0, 3.0), s) for s in (1, -1)]
    best = np.where(fits[0][2] >= fits[1][2], 0, 1)
    pick = lambda i: np.where(best == 0, fits[0][i], fits[1][i])  # noqa: E731
    b0, b1 = pick(0), pick(1)
    return {"threshold": centre - b0 / b1 * half, "width": spread * half / np.abs(b1),
            "direction": np.sign(b1), "loglik": pick(2), "at_bound": pick(3).astype(bool)}


def _resample_levels(x, level_of_row, y, n_boot, rng):
    """(k, n) for n_boot resamples of rows within each level (n fixed per level)."""
    k = np.empty((n_boot, len(x)))
    for j, lv in enumerate(x):
        ys = y[level_of_row == lv]
        k[:, j] = ys[rng.integers(0, len(ys), (n_boot, len(ys)))].sum(1)
    return k, np.broadcast_to([(level_of_row == lv).sum() for lv in x], k.shape)


def _resample_clusters(x, level_of_row, y, cluster, n_boot, rng):
    """(k, n) for n_boot resamples of whole clusters (participants), with replacement."""
    codes, uniques = pd.factorize(cluster)
    col = np.searchsorted(x, level_of_row)
    sums, counts = np.zeros((len(uniques), len(x))), np.zeros((len(uniques), len(x)))
    np.add.at(sums, (codes, col), y)
    np.add.at(counts, (codes, col), 1)
    w = resample_counts(rng, len(uniques), n_boot)
    return w @ sums, w @ counts


def fit_psychometric(data: pd.DataFrame, level: str, dv: str = "correct", cluster=None, *,
                     rng: np.random.Generator, sigmoid: str = "norm", guess: float = 0.0,
                     lapse: float = 0.0, width_min=None, n_boot: int = 2000,
                     ci: float = 0.95) -> dict:
    """Fit one observer's psychometric function, with percentile bootstrap intervals.

    Parameters
    ----------
    data : DataFrame, one row per trial (people) or per clip (models).
    level, dv : the sweep column and the response in [0, 1] (0/1 trials, or P(correct)).
    cluster : column of clusters (participants) to resample for a pooled fit; None resamples
        rows within each level.
    guess, lapse : fixed lower and upper asymptote offsets (0.5 for P(correct) on clips
        shown both ways; 0 for P("forward")).

    Returns
    -------
    dict
        ``n_levels, n_rows, n_clusters, threshold, threshold_lo, threshold_hi, width,
        width_lo, width_hi, direction, at_bound, boot_at_bound, level_min, level_max, curve_min,
        curve_max, sigmoid, guess, lapse, n_boot, ci``.

    Notes
    -----
    P(x) = guess + (1 - guess - lapse) F((x - threshold) / s), F the normal (``"norm"``) or
    logistic cdf; width = s (F^-1(0.95) - F^-1(0.05)). Raises ValueError for fewer than 3
    levels, NaN, values outside [0, 1] or a response that never varies (all correct).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> x = np.repeat(np.linspace(0.1, 1.0, 10), 40)
    >>> y = rng.random(x.size) < stats.norm.cdf((x - 0.5) / 0.12)
    >>> fit = fit_psychometric(pd.DataFrame({"e": x, "y": y}), "e", "y", rng=rng, n_boot=200)
    >>> bool(fit["threshold_lo"] < 0.5 < fit["threshold_hi"])
    True
    """
    if cluster is not None and cluster not in data.columns:
        raise ValueError(f"data lacks cluster column {cluster!r}")
    values = _levels(data, level, dv)
    lv, y = values[level].to_numpy(float), values[dv].to_numpy(float)
    x = np.unique(lv)
    n = np.array([(lv == v).sum() for v in x], float)
    k = np.array([y[lv == v].sum() for v in x])
    options = dict(sigmoid=sigmoid, guess=guess, lapse=lapse, width_min=width_min)
    est = fit_counts(x, k, n, **options)
    if cluster is None:
        bk, bn = _resample_levels(x, lv, y, n_boot, rng)
    else:
        bk, bn = _resample_clusters(x, lv, y, data[cluster].to_numpy(), n_boot, rng)
    boot = fit_counts(x, bk, bn, **options)
    q = [(1 - ci) / 2 * 100, (1 + ci) / 2 * 100]
    ends = _psychometric_values(est["threshold"][0], est["width"][0], est["direction"][0],
                                np.array([x.min(), x.max()]), sigmoid, guess, lapse)
    out = {"n_levels": len(x), "n_rows": len(y),
           "n_clusters": data[cluster].nunique() if cluster else np.nan}
    for name in ("threshold", "width"):
        out[name] = float(est[name][0])
        lo_hi = np.percentile(boot[name], q) if not est["at_bound"][0] else (np.nan, np.nan)
        out[f"{name}_lo"], out[f"{name}_hi"] = lo_hi
    return out | {"direction": int(est["direction"][0]), "at_bound": bool(est["at_bound"][0]),
                  "boot_at_bound": int(boot["at_bound"].sum()),
                  "level_min": x.min(), "level_max": x.max(), "curve_min": ends.min(),
                  "curve_max": ends.max(), "sigmoid": sigmoid, "guess": guess, "lapse": lapse,
                  "n_boot": n_boot, "ci": ci}


def _psychometric_values(threshold, width, direction, grid, sigmoid, guess, lapse):
    cdf, _, quantile = SIGMOIDS[sigmoid]
    s = width / (quantile(1 - WIDTH_ALPHA) - quantile(WIDTH_ALPHA))
    return guess + (1 - guess - lapse) * cdf(direction * (grid - threshold) / s)


def psychometric_table(data: pd.DataFrame, level: str, dv: str = "correct", by=("observer",),
                       subject: str | None = None, *, rng: np.random.Generator,
                       **options) -> pd.DataFrame:
    """:func:`fit_psychometric` per group of ``by``; with ``subject``, per subject and one
    pooled row per group (``subject`` = "pooled", participants resampled as clusters).

    Returns the ``by`` columns, ``subject`` (where given), ``status`` ("ok", or why the row
    could not be fitted; its numbers are then NaN) and the columns of :func:`fit_psychometric`.
    """
    by = [c for c in ([by] if isinstance(by, str) else by) if c in data.columns]
    rows = []
    for key, group in (data.groupby(by, sort=True) if by else [((), data)]):
        key = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        parts: list[tuple[Any, pd.DataFrame, str | None]] = (
            [(s, g, None) for s, g in group.groupby(subject)] if subject else [])
        parts.append(("pooled", group, subject) if subject else (None, group, None))
        for name, part, cluster in parts:
            row = key | ({subject: name} if subject else {})
            try:
                row |= {"status": "ok"} | fit_psychometric(part, level, dv, cluster, rng=rng,
                                                           **options)
            except ValueError as err:
                row["status"] = str(err)
            rows.append(row)
    return pd.DataFrame(rows)


def vlm_clip_correct(data: pd.DataFrame, level: str = "parameter_value", by=("observer",),
                     stimulus: str = "stimulus_id") -> pd.DataFrame:
    """P(correct) per clip from a VLM's P(forward), averaged over the two label orders.

    Returns ``by, stimulus, level, direction, p_forward, p_correct, n_label_orders``.
    ``p_correct`` is P(forward) on forward clips and 1 - P(forward) on reversed ones. Rows
    without P(forward) (no logits) are dropped; ``n_label_orders`` says whether a clip kept
    both orders (2) or one (1), so an unbalanced clip is visible, not silently averaged.
    """
    from analysis import loading  # the trial-table reader; only needed for ``extra``

    rows = data.copy()
    for name, key in (("p_forward", C.EXTRA_P_FORWARD), ("label_order", C.EXTRA_LABEL_ORDER)):
        if name not in rows.columns:
            rows[name] = loading.extra_column(rows, key)
    rows["p_forward"] = pd.to_numeric(rows["p_forward"], errors="coerce")
    rows = rows[rows["p_forward"].notna()]
    by = [c for c in ([by] if isinstance(by, str) else by) if c in rows.columns]
    out = (rows.groupby(by + [stimulus, level, "direction"], sort=True)
           .agg(p_forward=("p_forward", "mean"), n_label_orders=("label_order", "nunique"))
           .reset_index())
    forward = out["direction"] == C.FORWARD
    out["p_correct"] = np.where(forward, out["p_forward"], 1 - out["p_forward"])
    return out


def _bump_grid(x, n_mu=201, n_sigma=30):
    span = x.max() - x.min()
    mu, sigma = np.meshgrid(np.linspace(x.min(), x.max(), n_mu),
                            np.geomspace(np.diff(x).min() / 2, span / 2, n_sigma))
    return mu.ravel(), sigma.ravel()


def _fit_bumps(x, means, n, grid):
    """Least-squares Gaussian bump b + h exp(-(x - mu)^2 / 2 sigma^2) for each row of
    ``means`` (level means, weights n): exact in (b, h) for each (mu, sigma) of the grid,
    best grid point kept, i.e. clip-level least squares profiled over the grid."""
    mu, sigma = grid
    g = np.exp(-0.5 * ((x[:, None] - mu) / sigma) ** 2)            # levels x grid
    sw, sg, sgg = n.sum(), n @ g, n @ g ** 2
    det = sw * sgg - sg ** 2
    out = []
    for chunk in np.array_split(means, max(1, len(means) // 200)):
        sy, sgy = chunk @ n, (chunk * n) @ g
        h = (sw * sgy - sg * sy[:, None]) / det
        b = (sy[:, None] - h * sg) / sw
        best = np.argmax(b * sy[:, None] + h * sgy, axis=1)         # = least residual SS
        rows = np.arange(len(chunk))
        out.append(np.c_[mu[best], sigma[best], b[rows, best], h[rows, best]])
    return np.vstack(out)


def fit_tra_peak(values: np.ndarray, levels: np.ndarray, *, rng: np.random.Generator,
                 n_boot: int = 2000, ci: float = 0.95) -> dict:
    """Gaussian-bump fit of per-clip TRA over a sweep, with bootstrap intervals.

    Returns ``n_levels, n_clips, peak_location, peak_location_lo, peak_location_hi,
    peak_height_pct`` (h, the bump above its baseline; negative for a dip) with ``_lo/_hi``,
    ``peak_tra_pct`` (b + h, the curve at its peak, the paper's "peak TRA") with ``_lo/_hi``,
    ``baseline_pct, sigma, level_min, level_max, n_boot, ci``.

    Notes
    -----
    TRA(x) = b + h exp(-(x - mu)^2 / (2 sigma^2)), mu within the sweep, sigma from half the
    smallest level spacing to half the span, by least squares over clips. Intervals are
    percentile intervals of ``n_boot`` resamples of clips within each level (no closed form
    exists for mu). A flat curve gives h near 0 with either sign, so its interval holds 0.
    Needs at least 4 levels (4 parameters); raises ValueError otherwise or for NaN.
    """
    values, levels = np.asarray(values, float), np.asarray(levels, float)
    if not (np.isfinite(values).all() and np.isfinite(levels).all()):
        raise ValueError("TRA values and levels must be finite (NaN found)")
    x = np.unique(levels)
    if len(x) < 4:
        raise ValueError(f"a TRA peak fit needs at least 4 levels; got {len(x)}")
    n = np.array([(levels == v).sum() for v in x], float)
    means = np.array([values[levels == v].mean() for v in x])
    boot = np.empty((n_boot, len(x)))
    for j, v in enumerate(x):
        vs = values[levels == v]
        boot[:, j] = vs[rng.integers(0, len(vs), (n_boot, len(vs)))].mean(1)
    grid = _bump_grid(x)
    est, reps = _fit_bumps(x, means[None], n, grid)[0], _fit_bumps(x, boot, n, grid)
    q = [(1 - ci) / 2 * 100, (1 + ci) / 2 * 100]
    out: dict[str, float] = {"n_levels": len(x), "n_clips": len(values)}
    stats_ = {"peak_location": (est[0], reps[:, 0]), "peak_height_pct": (100 * est[3], 100 * reps[:, 3]),
              "peak_tra_pct": (100 * (est[2] + est[3]), 100 * (reps[:, 2] + reps[:, 3]))}
    for name, (point, draws) in stats_.items():
        out[name] = float(point)
        out[f"{name}_lo"], out[f"{name}_hi"] = np.percentile(draws, q)
    return out | {"baseline_pct": 100 * est[2], "sigma": est[1], "level_min": x.min(),
                  "level_max": x.max(), "n_boot": n_boot, "ci": ci}


def tra_peak_table(data: pd.DataFrame, by=("model", "context_frames", "scenario", "parameter"),
                   level: str = "parameter_value", value: str = "tra", *,
                   rng: np.random.Generator, **options) -> pd.DataFrame:
    """:func:`fit_tra_peak` per group of ``by`` (rows of :data:`analysis.columns.TRA_COLUMNS`
    with a ``parameter``); returns the ``by`` columns, ``status`` and its columns."""
    if value not in data.columns and {"loss_forward", "loss_reversed"} <= set(data.columns):
        from analysis.tra import tra_values
        data = data.assign(**{value: tra_values(data["loss_forward"], data["loss_reversed"])})
    data = data[data["parameter"].notna()] if "parameter" in data.columns else data
    by = [c for c in by if c in data.columns]
    rows = []
    for key, group in (data.groupby(by, sort=True) if by else [((), data)]):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        try:
            row |= {"status": "ok"} | fit_tra_peak(group[value].to_numpy(float),
                                                   group[level].to_numpy(float), rng=rng, **options)
        except ValueError as err:
            row["status"] = str(err)
        rows.append(row)
    return pd.DataFrame(rows)


def normalised_curves(fits: pd.DataFrame, keys=("observer",), n_points: int = 101) -> pd.DataFrame:
    """Each fitted curve on ``n_points`` levels across its sweep, and rescaled to [0, 1].

    ``fits`` is a :func:`psychometric_table` or :func:`tra_peak_table` result (rows with
    status "ok" are drawn). Returns ``keys`` present, ``level``, ``value`` (P, or TRA in
    percent), ``value_normalised`` = (value - min) / (max - min) over the sweep, and
    ``normalisation`` (the rule, stated). A TRA row whose peak-height interval includes 0
    gets NaN in ``value_normalised``.
    """
    keys = [c for c in keys if c in fits.columns]
    out = []
    for _, row in fits[fits["status"] == "ok"].iterrows():
        grid = np.linspace(row["level_min"], row["level_max"], n_points)
        if "threshold" in row:
            curve = _psychometric_values(row["threshold"], row["width"], row["direction"], grid,
                                         row["sigmoid"], row["guess"], row["lapse"])
            flat = False
        else:
            curve = row["baseline_pct"] + row["peak_height_pct"] * np.exp(
                -0.5 * ((grid - row["peak_location"]) / row["sigma"]) ** 2)
            flat = row["peak_height_pct_lo"] <= 0 <= row["peak_height_pct_hi"]
        spread = curve.max() - curve.min()
        norm = np.full_like(curve, np.nan) if flat or spread == 0 else (curve - curve.min()) / spread
        out.append(pd.DataFrame({**{k: row[k] for k in keys}, "level": grid, "value": curve,
                                 "value_normalised": norm, "normalisation": NORMALISATION}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(
        columns=[*keys, "level", "value", "value_normalised", "normalisation"])
