"""Arrow-of-time metrics: accuracy, Forward/Backward F1, label bias, d' and c.

All of them are functions of six confusion counts per group, so every breakdown (by subject,
model, category, direction, session) is one groupby of indicator columns, and the bootstrap
reuses the same arithmetic on resampled counts.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy.special import ndtri

from analysis import loading

# Six cells: stimulus direction (F/B) x response (F / B / none = timeout or unparseable).
COUNT_COLUMNS = ("n_ff", "n_fb", "n_fn", "n_bf", "n_bb", "n_bn")
METRIC_COLUMNS = ("n_trials", "n_answered", "accuracy", "f1_forward", "f1_backward",
                  "forward_share", "hit_rate", "false_alarm_rate", "d_prime", "criterion")
CORRECTIONS = ("loglinear", "none")


def confusion_counts(data: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Count the six direction x response cells of arrow-of-time trials per group.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials; only rows with ``correct_response`` in {"F", "B"} are used.
        ``"category"`` in ``by`` explodes the multi-label ``categories`` column.
    by : sequence of str
        Grouping columns; empty for one overall row.

    Returns
    -------
    pandas.DataFrame
        ``by`` columns then ``n_ff, n_fb, n_fn, n_bf, n_bb, n_bn`` (stimulus then response;
        ``n`` = no answer).
    """
    by = list(by)
    trials = loading.aot_trials(data)
    if "category" in by and "category" not in trials.columns:
        trials = loading.explode_categories(trials, columns=_needed(trials, by))
    cell = answer_cells(trials)
    if not by:
        counts = np.bincount(cell, minlength=6).reshape(1, 6)
        return pd.DataFrame(counts, columns=list(COUNT_COLUMNS))
    grouper = trials.groupby(by, sort=True, observed=True, dropna=False)
    ids = grouper.ngroup().to_numpy()
    keys = grouper.size().index.to_frame(index=False)
    counts = np.bincount(ids * 6 + cell, minlength=len(keys) * 6).reshape(len(keys), 6)
    return pd.concat([keys, pd.DataFrame(counts, columns=list(COUNT_COLUMNS))], axis=1)


def answer_cells(trials: pd.DataFrame) -> np.ndarray:
    """Each trial's index into :data:`COUNT_COLUMNS`: 3 * [backward] + answer (0 "F", 1 "B",
    2 none), so any grouping counts its cells with one bincount."""
    backward = (trials["correct_response"] == "B").to_numpy()
    resp = trials["response"]
    answer = np.where(resp == "F", 0, np.where(resp == "B", 1, 2))
    return 3 * backward + answer


def _needed(trials: pd.DataFrame, by: list[str]) -> list[str]:
    return [c for c in ("categories", "correct_response", "response", *by) if c in trials]


def metrics_from_counts(counts: dict | pd.DataFrame, correction: str = "loglinear") -> dict:
    """Metrics from the six cells; works on scalars, arrays or count columns alike.

    Returns a dict of arrays keyed by :data:`METRIC_COLUMNS`. See :func:`aot_metrics` for
    the formulas.
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    ff, fb, fn, bf, bb, bn = (np.asarray(counts[c], dtype=float) for c in COUNT_COLUMNS)
    n = ff + fb + fn + bf + bb + bn
    answered = ff + fb + bf + bb
    # F1, d' and c compare the two directions: with stimuli of one direction only they
    # are not defined (precision and false alarms come from the other one), so left empty.
    both = np.where((ff + fb + fn > 0) & (bf + bb + bn > 0), 1.0, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {
            "n_trials": n, "n_answered": answered,
            "accuracy": (ff + bb) / n,
            # F1 = 2TP / (2TP + FP + FN); a missing answer to a forward clip is a miss.
            "f1_forward": both * 2 * ff / (2 * ff + bf + fb + fn),
            "f1_backward": both * 2 * bb / (2 * bb + fb + bf + bn),
            "forward_share": (ff + bf) / answered,
        }
        hit, fa = _rates(bb, bf, fb, ff, correction)
        # A rate needs answered stimuli of its direction, whatever the correction.
        hit = np.where(bb + bf > 0, hit, np.nan)
        fa = np.where(fb + ff > 0, fa, np.nan)
        z_hit, z_fa = ndtri(hit), ndtri(fa)
        out.update(hit_rate=hit, false_alarm_rate=fa, d_prime=z_hit - z_fa,
                   criterion=-(z_hit + z_fa) / 2)
    return out


def _rates(hits, misses, false_alarms, correct_rejections, correction):
    """Hit and false-alarm rates, "backward" taken as the signal."""
    signal = hits + misses
    noise = false_alarms + correct_rejections
    if correction == "loglinear":  # Hautus (1995): add 0.5 to each cell, 1 to each total
        return (hits + 0.5) / (signal + 1), (false_alarms + 0.5) / (noise + 1)
    return hits / signal, false_alarms / noise


def aot_metrics(data: pd.DataFrame, by: Sequence[str] | str = (),
                correction: str = "loglinear") -> pd.DataFrame:
    """Accuracy, Forward/Backward F1, forward share, d' and c by any grouping.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials (use :func:`analysis.loading.included` first to drop exclusions).
    by : str or sequence of str
        Grouping columns, e.g. ``"subject_id"``, ``["subject_id", "category"]``,
        ``["subject_kind", "direction"]``. ``"category"`` breaks multi-label trials out so
        a Fall+Diffusion clip counts under both.
    correction : {"loglinear", "none"}
        Correction of hit and false-alarm rates for signal detection. ``"loglinear"``
        (Hautus 1995) adds 0.5 to hits and false alarms and 1 to each total for every
        group, so rates of 0 and 1 give finite d'; ``"none"`` gives +-inf there.

    Returns
    -------
    pandas.DataFrame
        ``by`` columns, the six count columns of :func:`confusion_counts`, then ``n_trials,
        n_answered, accuracy, f1_forward, f1_backward, forward_share, hit_rate,
        false_alarm_rate, d_prime, criterion``. Proportions are in [0, 1].

    Notes
    -----
    With stimulus/response counts :math:`n_{FF}, n_{FB}, n_{BF}, n_{BB}` and unanswered
    trials :math:`n_{F\\varnothing}, n_{B\\varnothing}` (counted as errors):

    .. math::

        acc = (n_{FF} + n_{BB}) / n, \\quad
        F1_F = 2 n_{FF} / (2 n_{FF} + n_{BF} + n_{FB} + n_{F\\varnothing})

    and symmetrically for :math:`F1_B`. The forward share is the share of "F" among
    answered trials. Signal detection takes "backward" as the signal, on answered trials:
    :math:`H = P(B | backward)`, :math:`FA = P(B | forward)`,
    :math:`d' = z(H) - z(FA)`, :math:`c = -(z(H) + z(FA)) / 2`; a positive ``c`` is a
    bias toward answering "forward". F1, d' and c are empty (NaN) in a row whose stimuli
    all played one way (e.g. a ``by="direction"`` breakdown), where they mean nothing; so
    are the hit rate without answered backward clips and the false-alarm rate without
    answered forward clips.

    References
    ----------
    .. [1] Matta et al. (2025). Which way does time flow? AoT-PsyPhyBENCH. Sec. 4.5.
    .. [2] Hautus, M. J. (1995). Corrections for extreme proportions and their biasing
       effects on estimated values of d'. Behav. Res. Methods 27, 46-51.
    .. [3] Macmillan & Creelman (2005). Detection Theory: A User's Guide, ch. 2.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"correct_response": ["F", "B"], "response": ["F", "F"]})
    >>> m = aot_metrics(df, correction="none")
    >>> float(m.accuracy[0]), round(float(m.f1_forward[0]), 3), float(m.f1_backward[0])
    (0.5, 0.667, 0.0)
    """
    by = [by] if isinstance(by, str) else list(by)
    counts = confusion_counts(data, by)
    metrics = pd.DataFrame(metrics_from_counts(counts, correction), index=counts.index)
    metrics[["n_trials", "n_answered"]] = metrics[["n_trials", "n_answered"]].astype(np.int64)
    return pd.concat([counts, metrics], axis=1)


def sdt_from_rates(hit_rate: float, false_alarm_rate: float) -> tuple[float, float]:
    """d' and c from already-corrected rates (``"backward"`` as the signal).

    Examples
    --------
    >>> d, c = sdt_from_rates(0.61, 0.09)  # Hanyu et al. (2023): 39% / 9% errors
    >>> round(d, 2), round(c, 2)
    (1.62, 0.53)
    """
    for name, rate in (("hit_rate", hit_rate), ("false_alarm_rate", false_alarm_rate)):
        if not 0.0 < rate < 1.0:
            raise ValueError(f"{name} must be strictly between 0 and 1, got {rate}")
    z_hit, z_fa = float(ndtri(hit_rate)), float(ndtri(false_alarm_rate))
    return z_hit - z_fa, -(z_hit + z_fa) / 2
