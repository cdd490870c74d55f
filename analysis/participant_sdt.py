"""Signal detection per participant: d' and c of each person, their mean, and the bias test.

The headline d' pools everyone's counts into one table, which is not the mean sensitivity
of a person (pooling mixes criteria and lowers d'). This module gives each participant's
own d' and c, and tests the forward bias (mean c > 0) across participants.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import aot, bootstrap, intervals

SUMMARY_METRICS = {"accuracy": 0.5, "d_prime": 0.0, "criterion": 0.0,
                   "d_prime_uncorrected": 0.0, "criterion_uncorrected": 0.0}
SUMMARY_COLUMNS = ("metric", "null", "n_participants", "mean", "sd", "ci_low", "ci_high",
                   "p_value", "ci_method", "pooled")


def participant_sdt(data: pd.DataFrame, subject: str = "subject_id") -> pd.DataFrame:
    """Accuracy, d' and c of every participant.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical arrow-of-time trials of people (excluded rows removed).
    subject : str
        The participant column.

    Returns
    -------
    pandas.DataFrame
        ``subject_id``, the six count columns of :func:`analysis.aot.confusion_counts`,
        ``n_trials, n_answered, accuracy, hit_rate, false_alarm_rate, d_prime, criterion``
        (log-linear corrected), ``extreme`` (a hit or false-alarm rate of 0 or 1 before
        correction) and ``d_prime_uncorrected, criterion_uncorrected`` (empty where
        ``extreme``, where they would be infinite).

    Notes
    -----
    "Backward" is the signal: :math:`H = P(B | backward)`, :math:`FA = P(B | forward)`,
    :math:`d' = z(H) - z(FA)`, :math:`c = -(z(H) + z(FA))/2` (c > 0: forward bias). The
    log-linear correction adds 0.5 to hits and false alarms and 1 to each total for every
    participant alike [1]_, so a perfect block gives a finite d'; it pulls d' toward 0
    slightly, which is why the uncorrected values are given beside it.

    References
    ----------
    .. [1] Hautus, M. J. (1995). Corrections for extreme proportions and their biasing
       effects on estimated values of d'. Behav. Res. Methods 27, 46-51.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"subject_id": ["a"] * 4, "correct_response": list("FFBB"),
    ...                    "response": list("FFBF")})
    >>> row = participant_sdt(df).iloc[0]
    >>> bool(row.extreme), round(float(row.d_prime), 3)
    (True, 0.967)
    """
    table = aot.aot_metrics(data, by=subject)
    raw = pd.DataFrame(aot.metrics_from_counts(table, correction="none"), index=table.index)
    table["extreme"] = ~(raw["hit_rate"].between(0, 1, inclusive="neither")
                         & raw["false_alarm_rate"].between(0, 1, inclusive="neither"))
    table["d_prime_uncorrected"] = raw["d_prime"].where(~table["extreme"])
    table["criterion_uncorrected"] = raw["criterion"].where(~table["extreme"])
    return table.drop(columns=["f1_forward", "f1_backward", "forward_share"])


def participant_summary(table: pd.DataFrame, draws: dict | None = None,
                        pooled: dict | None = None, ci: float = 0.95,
                        few: intervals.FewUnits = intervals.FewUnits()) -> pd.DataFrame:
    """Mean over participants of each metric, its two-way interval, and its test against
    the null.

    Parameters
    ----------
    table : pandas.DataFrame
        The output of :func:`participant_sdt`.
    draws : dict, optional
        Metric -> resampled means from the two-way (participant x clip) bootstrap
        (:func:`analysis.bootstrap.subject_mean_draws`); a metric without draws gets no
        interval or test.
    pooled : dict, optional
        Metric -> the value from pooled counts, shown beside the mean.
    ci : float
        Coverage of the interval.
    few : analysis.intervals.FewUnits
        The small-sample widening of the interval and test
        (:func:`analysis.intervals.few_units` of the people's trials; its accuracy-based
        degrees of freedom serve every metric).

    Returns
    -------
    pandas.DataFrame
        One row per metric (:data:`SUMMARY_METRICS`): ``metric, null`` (0.5 for accuracy,
        else 0), ``n_participants, mean, sd``, ``ci_low, ci_high`` (percentile interval of
        the draws, so within the metric's range), ``p_value`` (two-sided, the level at
        which that interval leaves out the null:
        :func:`analysis.intervals.percentile_p_value`), ``ci_method`` and ``pooled``.
        ``criterion`` against 0 is the test of the forward bias (Hanyu et al. 2023).

    Notes
    -----
    Participants and clips are both samples, so the interval and test resample both; a
    t-test over participants takes the clips as fixed and rejects a true null too often
    when clips differ (bench/null_fpr.py). The uncorrected metrics are descriptive: a
    resample can make them infinite, so they get no interval.
    """
    lo_q, hi_q = intervals.corrected_levels(ci, few)
    rows = []
    for metric, null in SUMMARY_METRICS.items():
        values = table[metric].to_numpy(float)
        values = values[np.isfinite(values)]
        row = {"metric": metric, "null": null, "n_participants": len(values),
               "mean": values.mean() if len(values) else np.nan,
               "sd": values.std(ddof=1) if len(values) > 1 else np.nan,
               "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan,
               "ci_method": "", "pooled": (pooled or {}).get(metric, np.nan)}
        boot = (draws or {}).get(metric)
        if boot is not None:
            low, high = intervals.nan_percentiles(np.asarray(boot)[None], lo_q, hi_q)
            row |= {"ci_low": low[0], "ci_high": high[0],
                    "p_value": intervals.percentile_p_value(boot, null, few),
                    "ci_method": bootstrap.SCHEME_LABELS["two-way"]}
        rows.append(row)
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
