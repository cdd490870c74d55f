"""People's psychometric functions over a physical sweep (restitution 0.1-1.0, damping
0.0-5.0): binary answers, P(correct) per level (``guess=0.5``: each clip is shown both ways,
so chance is one half) or P("forward") (``guess=0``), per participant and pooled over
participants (:func:`fit_psychometric`, :func:`psychometric_table`), by binomial maximum
likelihood with the lapse rate estimated on a grid. VLMs' curves are in
``analysis.probability_curve``, self-supervised models' TRA curves in ``analysis.tra_peak``,
what they share in ``analysis.sweep_fits``.

Why not psignifit 4 (``psignifit`` 4.3 on PyPI, a test dependency that checks these fits,
``tests/analysis/test_psychometric_psignifit.py`` and ``bench/psychometric_psignifit.py``):
one fit with its default free lapse, guess and overdispersion took 8.5 s on this 2-core
machine (0.15 s with them fixed), so
a bootstrap over resamples and a coverage check of 200 simulated data sets were out of reach;
its intervals are Bayesian credible intervals that treat trials as independent, which is
wrong for a pooled fit where trials cluster in participants; it takes counts, not the VLMs'
per-clip probabilities; and it pulls in matplotlib. The binomial fit here is maximum
likelihood by Newton steps (Fisher scoring where the observed information is not positive
definite), vectorised over bootstrap resamples; with no lapse it equals statsmodels'
binomial GLM with a probit or logit link, which the tests check. psignifit's conventions
are kept: ``threshold`` is where the sigmoid is half way, ``width`` the distance between its
5% and 95% points, and the smallest width allowed defaults to the smallest spacing of the
levels. Below one level step the levels cannot tell a curve from a steeper one, so psignifit's
width prior is 0 there (rising to flat at two steps): an interval whose lower end sits on that
step bounds the width from above only, and its status says so, "width: upper bound only"
(:func:`analysis.sweep_fits.fit_status`), rather than "at limit", which marks a limit the
truth may lie beyond. Beside psignifit on the same simulated participants
(``bench/psychometric_psignifit.py``, 60 a sweep, 24 trials a level, 2% lapses, seed 0),
coverage of nominal 95% intervals, threshold / width: with percentile bootstrap intervals
(300 resamples) ball 0.90 / 0.92 here, 0.97 / 0.97 psignifit; pendulum 0.88 / 0.95 here,
0.97 / 1.00 psignifit (its credible intervals were 5-14% wider). A participant's intervals
are therefore profile likelihood ones (:func:`analysis.psychometric_profile.profile_intervals`,
``profile=True`` in the report): the bootstrap's refits of 24 trials a level are biased in the threshold and often
land on the width's lower limit, so its percentiles sit too tight, while the likelihood
ratio, the lapse rate refitted at each value, has near its chi-squared calibration. On 100
simulated participants a sweep (seed 11; binomial 95% CIs of the coverage in brackets)
they covered threshold / width: ball 0.96 [0.90, 0.99] / 0.99 [0.95, 1.00]; pendulum
0.96 [0.90, 0.99] / 0.92 [0.85, 0.96] (the pendulum's width is still short of 0.95, not
significantly); about 3 s a participant on this 2-core machine at load 11-15 (a 300-resample
bootstrap took 0.23 s there); 4 of 16 ball participants are "width: upper bound only" with
them (``tests/analysis/test_psychometric_psignifit.py``), 11 of the same 16 with the
bootstrap. With the bootstrap 77% of participants on either sweep were "width: upper bound
only"; for 65% (ball) and 54% (pendulum) of them psignifit's lower end, too, lies
within its prior's ramp, below two level steps. People's lapse rate is estimated in Wichmann & Hill's (2001) range, [0, 0.06]. A
fixed lapse of 0 drags the curve down to the lapsed answers: with 4% lapses the pooled
intervals of 6 participants covered the threshold in 0.68 and the width in 0.02 of
simulated studies; estimated, 0.95 and 0.96 (``tests/analysis/test_psychometric.py``).
A participant who lapses more than 6% of the time gets a biased threshold; "lapse" in
``ends_at_limit`` marks one where a likelihood-ratio test shows it, which at 24 trials a
level catches a fifth of those lapsing 20% (a shallower curve without lapses fits such data
as well) and marks 2% of those lapsing 5%.

With ``profile=False`` (VLMs' and the tests' fits), intervals for one observer are percentile bootstrap
intervals of ``n_boot`` resamples (2,000 by default) within each level, of source clips
(``block``: a clip's forward and reversed copies together, since a label bias moves their
P(correct) in opposite directions; resampled apart, a simulated VLM's threshold interval was
3.1 times as wide and covered 1.00 where 0.95 is due, together 0.93), where every level has
at least :data:`MIN_BLOCKS` source clips, or else of single rows (the built-in set has one
clip a level). With 4 clips a level a VLM's threshold interval covered 0.87, and a label
bias that pushes P(forward) against 0 or 1 does not average out over the two copies, which
moves the curve itself (an outside review's simulations). A
resample whose best fit lies on a bound (width at its minimum or maximum, threshold more
than one sweep span outside the sweep) keeps that bound, which
widens the interval rather than narrowing it; ``boot_at_bound`` counts them. Measured
coverage of nominal 95% intervals (200 simulated observers, 10 levels x 30 trials, 200
resamples): threshold 0.925-0.945, width 0.895 (the ML width is biased low). Where the fit
of the data itself lies on a limit, its threshold is the best point there and its
intervals are NaN, in two cases told apart (``fit_counts``, :func:`fit_status`): a step
between two adjacent levels inside the sweep, the narrowest curve (one level step wide)
with the answers switching between those levels (``at_step``, "step between levels"); and
a limit the truth may lie beyond, the widest curve or a threshold beyond the sweep
(``at_bound``, "at bound"), where no interval is right. Profile likelihood intervals at a
step were measured and are withheld too (``bench/adaptive_power.py --observers 60 --rounds
5 --adaptive 60,120 --fixed 24 --seed 0``, its per-case columns; docs/measurements.md,
"Adaptive levels"): on both sweeps and designs every fit on a limit was a step (91 of
1,080), and the steps' threshold intervals covered 69 of 91 true thresholds (0.76, exact
95% CI [0.66, 0.84]) where 0.95 is claimed; the true width lay at or below their width's
upper end in 43 of 91. The simulated participants are 5 level steps wide: a few trials
that happen to switch abruptly look like a reviewer's truly steep participants (whose
profile intervals, they reported, covered 22 of 22), and the data cannot tell them apart.

The pooled fit's intervals are jackknife t intervals over participants
(``analysis.psychometric_pooled``, which gives their coverage beside the percentile
bootstrap's). The fitter itself is ``analysis.psychometric_counts``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd
from scipy import stats

from analysis.psychometric_counts import candidates, fit_counts
from analysis.psychometric_pooled import cluster_counts, cluster_intervals
from analysis.psychometric_profile import profile_intervals
from analysis.sweep_fits import (
    INTERVALS,
    block_labels,
    fit_row,
    fit_status,
    interval_method,
    percentile_intervals,
    resample_levels,
    sweep_values,
)


def fit_psychometric(data: pd.DataFrame, level: str, dv: str = "correct", cluster=None, *,
                     rng: np.random.Generator, sigmoid: str = "norm", guess: float = 0.0,
                     lapse=0.0, block: str | None = None, width_min=None, n_boot: int = 2000,
                     ci: float = 0.95, profile: bool = False,
                     direction: int | None = None) -> dict:
    """Fit one observer's psychometric function to binary answers, with intervals for
    threshold and width.

    Parameters
    ----------
    data : DataFrame, one row per trial.
    level, dv : the sweep column and the answer (0/1).
    cluster : column of clusters (participants) for a pooled fit, whose intervals are
        jackknife t intervals over clusters; None: percentile bootstrap intervals of
        ``n_boot`` resamples within each level.
    guess : the fixed lower asymptote and the chance level (0.5 for P(correct) on clips shown
        both ways; 0 for P("forward")).
    lapse : the upper asymptote's offset: a fixed rate, or a grid of candidate rates
        estimated with the rest (:func:`fit_counts`), afresh in every resample and
        leave-one-out fit.
    block : column whose rows are resampled together within a level (a source clip's two
        copies, whose answers are not independent), where every level has at least
        :data:`MIN_BLOCKS` of them; otherwise, or None, rows one by one.
    profile : without ``cluster``, profile likelihood intervals (:func:`profile_intervals`)
        instead of a bootstrap (``n_boot`` and ``block`` then unused).
    direction : +1 (rising) or -1 (falling) where the way the curve runs is known (the
        physics of a TRA sweep, ``experiments.synthetic.curve_direction``), so only curves
        of that direction are fitted; None: the better of both.

    Returns
    -------
    dict
        ``n_levels, n_rows, n_clusters, threshold, threshold_lo, threshold_hi, width,
        width_lo, width_hi, direction, guess, lapse, asymptotes, chance, at_bound,
        ends_at_limit, boot_at_bound, level_min, level_max, curve_min, curve_max, sigmoid,
        flat, n_boot, interval, ci``. ``lapse`` is the fitted rate and ``asymptotes`` says
        how the asymptotes were set; ``interval`` names the method; ``ends_at_limit`` names
        the interval ends that sit on a fitting limit (threshold one sweep span outside the
        sweep, smallest or largest width), and "lapse" where the fitted lapse rate is the
        largest allowed, e.g. "threshold_hi; width_lo", "" where none;
        ``boot_at_bound`` counts refits (resamples or leave-one-out fits) on a bound;
        ``n_boot`` is 0 for a pooled fit (no bootstrap).

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
    values = sweep_values(data, level, dv)
    lv, y = values[level].to_numpy(float), values[dv].to_numpy(float)
    x = np.unique(lv)
    n = np.array([(lv == v).sum() for v in x], float)
    k = np.array([y[lv == v].sum() for v in x])
    options = dict(sigmoid=sigmoid, guess=guess, lapse=lapse, width_min=width_min,
                   direction=direction)
    est = fit_counts(x, k, n, **options)
    if cluster is None and profile:
        intervals, boot, method = profile_intervals(x, k, n, est, options, ci), \
            {"at_bound": np.zeros(0)}, INTERVALS["profile"]
    elif cluster is None:
        *counts, by_blocks = resample_levels(x, lv, y, n_boot, rng, block_labels(data, block))
        boot = fit_counts(x, *counts, **options)
        intervals, method = percentile_intervals(boot, ("threshold", "width"), ci), \
            interval_method(by_blocks, len(x))
    else:
        sums, counts = cluster_counts(x, lv, y, data[cluster].to_numpy())
        intervals, boot = cluster_intervals(x, k, n, est, sums, counts, options, ci)
        method = INTERVALS["cluster"]
    rates = candidates(lapse)
    said = f"lapse {rates[0]:g}" if len(rates) == 1 else \
        f"lapse estimated in [{rates.min():g}, {rates.max():g}]"
    fit = {"threshold": est["threshold"][0], "width": est["width"][0],
           "direction": est["direction"][0], "guess": guess, "lapse": est["lapse"][0],
           "at_bound": est["at_bound"][0], "at_step": est["at_step"][0]}
    out = fit_row(fit, intervals, x, width_min, sigmoid, boot)
    if len(rates) > 1 and _wants_more_lapses(x, k, n, est["loglik"][0], rates, options):
        out["ends_at_limit"] = "; ".join(filter(None, [out["ends_at_limit"], "lapse"]))
    return out | {
        "flat": False, "n_rows": len(y),
        "n_clusters": data[cluster].nunique() if cluster else np.nan,
        "asymptotes": f"guess {guess:g}; {said}", "chance": guess,
        "n_boot": n_boot if cluster is None and not profile else 0, "interval": method,
        "ci": ci}


def _wants_more_lapses(x, k, n, loglik, rates, options) -> bool:
    """Whether the data call for more lapses than ``rates`` allow: a fit with the lapse rate
    free up to three times the largest is better by a likelihood-ratio test at 5%. (A point
    estimate on the largest rate alone says little: a participant who truly lapses 5% of the
    time lands on 0.06 in a quarter of simulated sessions.)"""
    wider = np.linspace(rates.max(), min(3 * rates.max(), 1 - options["guess"] - 0.05), 13)
    more = fit_counts(x, k, n, **(options | {"lapse": wider}))
    return bool(2 * (more["loglik"][0] - loglik) > stats.chi2.ppf(0.95, 1))


def psychometric_table(data: pd.DataFrame, level: str, dv: str = "correct", by=("observer",),
                       subject: str | None = None, *, rng: np.random.Generator,
                       fit: Callable[..., dict] = fit_psychometric, **options) -> pd.DataFrame:
    """``fit`` (:func:`fit_psychometric`, or :func:`fit_probability_curve` for probabilities)
    per group of ``by``; with ``subject`` (binary answers only), per subject and one pooled
    row per group (``subject`` = "pooled", participants as clusters).

    Returns the ``by`` columns, ``subject`` (where given), ``status`` (:func:`fit_status`;
    or why the row could not be fitted, its numbers then NaN) and the columns of the fit.
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
                clustered = {"cluster": cluster} if cluster else {}
                fitted = fit(part, level, dv, rng=rng, **clustered, **options)
                row |= {"status": fit_status(fitted)} | fitted
            except ValueError as err:
                row["status"] = str(err)
            rows.append(row)
    return pd.DataFrame(rows)
