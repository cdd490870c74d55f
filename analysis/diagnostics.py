"""Model diagnostics: TOMATO frame-condition ratios, TimeCausality swap consistency and
positional bias, calibration of logit P(F) with the bias left after swapping label order, and
what each observer's answers cost in tokens and seconds (the ledger).
(TRA statistics live in :mod:`analysis.tra`.)

Each table has one row per observer (:mod:`analysis.observers`: model, revision, prompt
setting, label order), so two settings of one model are never pooled."""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import loading, observers

TOMATO_EPS = 1e-9
OBSERVER = "observer"


def _by_observer(data: pd.DataFrame, subject: str | None,
                 frame_condition: bool = True) -> tuple[pd.DataFrame, str]:
    """``data`` with the grouping column: ``subject`` when named, else ``"observer"``."""
    if subject is not None:
        return data, subject
    return data.assign(observer=observers.observer_column(data, frame_condition)), OBSERVER


def _ratio(a, b, eps=TOMATO_EPS):
    return 100 * (a - b) / (b + eps)


def tomato_ratios(data: pd.DataFrame, subject: str | None = None) -> pd.DataFrame:
    """TOMATO's multi-frame gain, frame-order sensitivity and frame-information disparity.

    Parameters
    ----------
    data : pandas.DataFrame
        Model trials whose ``extra["task_variant"]`` is one of ``"full"``, ``"shuffled"``,
        ``"single_frame"`` (one random frame), ``"handpicked_frame"``.
    subject : str, optional
        One row per value of this column; default: per observer, the frame conditions of
        one observer side by side.

    Returns
    -------
    pandas.DataFrame
        ``observer`` (or ``subject``) then ``acc_full, acc_shuffled, acc_single_frame,
        acc_handpicked_frame`` (percent) and ``kappa, tau, rho`` (percent; NaN where a
        variant is missing).

    Notes
    -----
    .. math::

        \\kappa = \\frac{Acc(m) - Acc(1)}{Acc(1) + \\epsilon},\\quad
        \\tau = \\frac{Acc(m) - Acc(m_{shuffled})}{Acc(m_{shuffled}) + \\epsilon},\\quad
        \\rho = \\frac{Acc(1_{hand}) - Acc(1_{random})}{Acc(1_{random}) + \\epsilon}

    References
    ----------
    .. [1] Shangguan et al. (2025). TOMATO: Assessing visual temporal reasoning capabilities
       in multimodal foundation models. ICLR.

    Examples
    --------
    >>> round(float(_ratio(37.8, 20.9)), 1)  # TOMATO average, 16 vs 1 frame
    80.9
    """
    data, subject = _by_observer(data, subject, frame_condition=False)
    variant = loading.extra_column(data, C.EXTRA_TASK_VARIANT)
    rows = data.assign(task_variant=variant)
    rows = rows[rows["task_variant"].isin(C.TASK_VARIANTS)]
    acc = rows.groupby([subject, "task_variant"])["correct"].mean().mul(100).unstack()
    acc = acc.reindex(columns=list(C.TASK_VARIANTS))
    acc.columns = [f"acc_{v}" for v in acc.columns]
    acc["kappa"] = _ratio(acc["acc_full"], acc["acc_single_frame"])
    acc["tau"] = _ratio(acc["acc_full"], acc["acc_shuffled"])
    acc["rho"] = _ratio(acc["acc_handpicked_frame"], acc["acc_single_frame"])
    return acc.reset_index()


def swap_consistency(data: pd.DataFrame, subject: str | None = None) -> pd.DataFrame:
    """Consistency under swapped presentation, positional bias and F1 for ordered pairs.

    Returns
    -------
    pandas.DataFrame
        Per observer (or ``subject``): ``n_trials``, ``accuracy``, ``f1_a``, ``f1_b``,
        ``macro_f1``, ``accuracy_ab``, ``accuracy_ba``,
        ``first_choice_share`` (share of "A" = the image shown first judged earlier),
        ``positional_bias`` (= first_choice_share - 0.5), ``n_pairs`` (pairs answered in
        both orders) and ``swap_consistency`` (share of those pairs where the same image
        was judged earlier in both orders).

    Notes
    -----
    In order "AB" the truly earlier image is shown first; in "BA" second. A consistent
    judge answers "A" in one order exactly when it answers "B" in the other. A model that
    always picks the first image scores 50% accuracy, consistency 0 and bias +0.5.

    TimeCausality adds F1 "to mitigate the impact of such [positional] biases": F1 of
    each answer class, :math:`F1_A = 2 n_{AA} / (2 n_{AA} + n_{BA} + n_{AB} +
    n_{A\\varnothing})` (rows: correct answer, columns: answer; a non-response to an "A"
    item is a miss), likewise :math:`F1_B`, and their mean ``macro_f1``. The always-first
    model has F1_A 0.667, F1_B 0 and macro F1 0.333 where its accuracy says 0.5.

    References
    ----------
    .. [1] TimeCausality appendix, sec. C and E (positional bias, F1 as a reference metric;
       GPT-4o fails on the swapped pair).
    """
    data, subject = _by_observer(data, subject)
    rows = data[data["trial_type"] == C.PAIR_ORDER]
    rows = rows.assign(pair_order=loading.extra_column(rows, C.EXTRA_PAIR_ORDER),
                       pair_id=loading.extra_column(rows, C.EXTRA_PAIR_ID))
    answered = rows[rows["response"].isin(("A", "B"))]
    # The image judged earlier, named by its true order: "A" in AB order is the earlier one.
    chose_earlier = (answered["response"] == "A") == (answered["pair_order"] == "AB")
    answered = answered.assign(chose_earlier=chose_earlier, first=answered["response"] == "A")
    out = rows.groupby(subject).agg(n_trials=("response", "size"),
                                    accuracy=("correct", "mean"))
    out = out.join(_pair_f1(rows, subject))
    by_order = rows.groupby([subject, "pair_order"])["correct"].mean().unstack()
    out["accuracy_ab"] = by_order.get("AB")
    out["accuracy_ba"] = by_order.get("BA")
    out["first_choice_share"] = answered.groupby(subject)["first"].mean()
    out["positional_bias"] = out["first_choice_share"] - 0.5
    per_pair = answered.groupby([subject, "pair_id", "pair_order"])["chose_earlier"].first()
    per_pair = per_pair.unstack()
    out["n_pairs"], out["swap_consistency"] = 0, np.nan
    if {"AB", "BA"} <= set(per_pair.columns):
        per_pair = per_pair.dropna(subset=["AB", "BA"])
        same = (per_pair["AB"] == per_pair["BA"]).astype(float).groupby(level=0)
        out["n_pairs"] = same.size().reindex(out.index).fillna(0).astype(int)
        out["swap_consistency"] = same.mean()
    return out.reset_index()


def _pair_f1(rows: pd.DataFrame, subject: str) -> pd.DataFrame:
    """F1 of the "A" and "B" answers per subject, non-responses counted as misses."""
    truth = rows["correct_response"].astype(object).to_numpy()
    answer = rows["response"].astype(object).to_numpy()
    cells = pd.DataFrame({subject: rows[subject].to_numpy(),
                          "tp_a": (truth == "A") & (answer == "A"),
                          "tp_b": (truth == "B") & (answer == "B"),
                          "said_a": answer == "A", "said_b": answer == "B",
                          "is_a": truth == "A", "is_b": truth == "B"})
    n = cells.groupby(subject).sum()
    out = pd.DataFrame(index=n.index)
    with np.errstate(divide="ignore", invalid="ignore"):
        # 2TP / (2TP + FP + FN) = 2TP / (answered X + truly X)
        out["f1_a"] = 2 * n["tp_a"] / (n["said_a"] + n["is_a"])
        out["f1_b"] = 2 * n["tp_b"] / (n["said_b"] + n["is_b"])
    out["macro_f1"] = (out["f1_a"] + out["f1_b"]) / 2
    return out


def calibration(data: pd.DataFrame, n_bins: int = 10,
                subject: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Reliability of logit-based P(F), and the bias left when label order is swapped.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        *Bins*: ``observer, bin, n, mean_p_forward, observed_forward`` (share of truly
        forward clips in the bin). *Summary* per observer (or ``subject`` where named):
        ``n, brier, ece``,
        ``mean_logit_fb``, ``mean_logit_ba``... see Notes.

    Notes
    -----
    ``brier`` = mean :math:`(P(F) - [forward])^2`; ``ece`` = :math:`\\sum_b \\frac{n_b}{n}
    |\\bar p_b - \\bar y_b|`. With :math:`\\ell = \\operatorname{logit} P(F)` averaged per
    label order on the same balanced stimuli, ``position_effect`` =
    :math:`(\\bar\\ell_{FB} - \\bar\\ell_{BF})/2` (preference for whichever label is named
    first) and ``residual_bias`` = :math:`(\\bar\\ell_{FB} + \\bar\\ell_{BF})/2`, the label
    bias toward "F" that remains once order is balanced; 0 for an unbiased model.
    ``forward_share_swapped`` is the share of stimuli whose order-averaged P(F) > 0.5.

    References
    ----------
    .. [1] Naeini, Cooper & Hauskrecht (2015). Obtaining well calibrated probabilities
       using Bayesian binning. AAAI (expected calibration error).
    .. [2] Zheng et al. (2024). Large language models are not robust multiple choice
       selectors. ICLR (debiasing by permuting option order).
    """
    data, subject = _by_observer(data, subject)
    rows = loading.aot_trials(data)
    p = pd.to_numeric(loading.extra_column(rows, C.EXTRA_P_FORWARD), errors="coerce")
    rows = rows.assign(p_forward=p.clip(1e-6, 1 - 1e-6),
                       is_forward=(rows["correct_response"] == "F").astype(float),
                       label_order=loading.extra_column(rows, C.EXTRA_LABEL_ORDER))
    rows = rows[rows["p_forward"].notna()]
    rows = rows.assign(bin=np.minimum((rows["p_forward"] * n_bins).astype(int), n_bins - 1),
                       logit=np.log(rows["p_forward"] / (1 - rows["p_forward"])),
                       sq_err=(rows["p_forward"] - rows["is_forward"]) ** 2)
    bins = rows.groupby([subject, "bin"]).agg(n=("p_forward", "size"),
                                              mean_p_forward=("p_forward", "mean"),
                                              observed_forward=("is_forward", "mean"))
    bins = bins.reset_index()
    bins["weighted_gap"] = bins["n"] * (bins["mean_p_forward"] - bins["observed_forward"]).abs()
    summary = rows.groupby(subject).agg(n=("p_forward", "size"), brier=("sq_err", "mean"))
    summary["ece"] = bins.groupby(subject)["weighted_gap"].sum() / summary["n"]
    by_order = rows.groupby([subject, "label_order"])["logit"].mean().unstack()
    fb = by_order["FB"] if "FB" in by_order else np.nan
    bf = by_order["BF"] if "BF" in by_order else np.nan
    summary["mean_logit_fb"], summary["mean_logit_bf"] = fb, bf
    summary["position_effect"] = (summary["mean_logit_fb"] - summary["mean_logit_bf"]) / 2
    summary["residual_bias"] = (summary["mean_logit_fb"] + summary["mean_logit_bf"]) / 2
    stim = rows.groupby([subject, loading.stimulus_key(rows)])["logit"].mean()
    summary["forward_share_swapped"] = (stim > 0).groupby(level=0).mean()
    return bins.drop(columns="weighted_gap"), summary.reset_index()


def ledger_table(data: pd.DataFrame) -> pd.DataFrame:
    """Per observer, the tokens and seconds its items took, per item and per correct answer.

    Parameters
    ----------
    data : pandas.DataFrame
        Model trials; those whose ``extra`` has a ledger (``analysis.columns.LEDGER_FIELDS``,
        stored by ``run-models``) count, of every task.

    Returns
    -------
    pandas.DataFrame
        ``observer``, ``n_items``, ``n_correct``, ``n_cut_off`` (reasoning never ended),
        ``tokens_in``, ``tokens_out``, ``tokens_reasoning`` and ``model_s`` per item,
        ``tokens_per_item`` and ``tokens_per_correct`` (in and out; empty with no correct
        answer); empty when no trial has a ledger.
    """
    extras = data["extra"] if "extra" in data else pd.Series([None] * len(data), data.index)
    has = extras.map(lambda e: isinstance(e, dict) and "tokens_in" in e)
    data = data[has.to_numpy(bool)]
    if data.empty:
        return pd.DataFrame()
    data, by = _by_observer(data, None)
    ledger = pd.DataFrame([{k: e.get(k) for k in C.LEDGER_FIELDS} for e in data["extra"]],
                          index=data.index, dtype=float)
    ledger["cut_off"] = [e.get(C.EXTRA_REASONING) == "cut_off" for e in data["extra"]]
    ledger[by], ledger["correct"] = data[by], data["correct"].astype(bool)
    rows = []
    for name, group in ledger.groupby(by, sort=False):
        n, correct = len(group), int(group["correct"].sum())
        tokens = float(group["tokens_in"].sum() + group["tokens_out"].sum())
        rows.append({by: name, "n_items": n, "n_correct": correct,
                     "n_cut_off": int(group["cut_off"].sum()),
                     **{f"{k}_per_item": group[k].mean() for k in C.LEDGER_FIELDS},
                     "tokens_per_item": tokens / n,
                     "tokens_per_correct": tokens / correct if correct else np.nan})
    return pd.DataFrame(rows)
