"""The TRA sweeps seen three ways: people, VLMs and self-supervised video models.

One report section (``tra_sweep`` in :mod:`analysis.report.registry`), present only
when the analysed trials hold arrow-of-time trials on sweep clips (restitution 0.1-1.0 for
the bouncing ball, damping 0.0-5.0 for the pendulum):

* people: P(correct) per level, one psychometric fit per participant and one pooled over
  participants (jackknife t intervals over participants, from
  :data:`analysis.bootstrap.MIN_PARTICIPANTS` on; for adaptive sessions the median of
  participants' thresholds instead, and a participant not above chance has no threshold:
  :mod:`analysis.participant_thresholds`), chance = 0.5 (each clip is shown both ways), the
  lapse rate estimated (:data:`PEOPLE_FIT`);
* VLMs: P(correct) per clip from their logits, both label orders averaged
  (:func:`analysis.probability_curve.vlm_clip_correct`), one least-squares fit per model and
  setting with both asymptotes free (:data:`VLM_FIT`);
* self-supervised models: the Gaussian-bump fit of per-clip TRA from the ``--tra`` file.

A trial's sweep level comes from ``levels`` (``source_clip_id, scenario, parameter,
parameter_value``; ``manage.py report`` reads it from the study's stimulus set) or, without
it, from the TRA file's ``clip_id`` labels (the same clip keys).

Tables: ``tra_sweep_fits`` (pooled people, VLMs, TRA, and the TRA paper's peaks with
``source`` = "published", never "measured"), ``tra_sweep_participants``,
``tra_sweep_curves`` (what the figures draw, normalised as :data:`CAPTION` states) and
``tra_sweep_level_means`` (the data under the people's and VLMs' curves, drawn as markers).
Figures: ``tra_sweep_<scenario>``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import adaptive_sequence, bootstrap, shared_axis, sweep_fits, tra_peak
from analysis import columns as C
from analysis import psychometric as P
from analysis.participant_thresholds import (
    adaptive_pooled,
    human_answers,
    is_adaptive,
    mark_chance,
)
from analysis.probability_curve import fit_probability_curve, vlm_clip_correct
from analysis.psychometric_pooled import pooled_band
from analysis.report import registry as R
from experiments import length_sweep
from experiments.synthetic import curve_direction

SEED = 0  # the section's own generator: adding it leaves every other table's draws alone
SCENARIOS = ("bouncing_ball", "pendulum")
FIGURES = tuple(f"tra_sweep_{s}" for s in SCENARIOS)
TRA_CONTEXT = 12  # the context drawn per model (TRA paper, Table 9); the table has all
LEVEL_COLUMNS = ("source_clip_id", "scenario", "parameter", "parameter_value")
SWEEP = ["scenario", "parameter"]
PEOPLE, VLM, SSL = "people", "vlm", "self_supervised"
POOLED = "pooled"
CAPTION = ("Normalised for a shared axis, one rule per kind of observer. People and VLMs: "
           "above-chance accuracy 2·P(correct) − 1 of the fitted curve (0 = chance, 1 = always "
           "right, below 0 worse than chance; not rescaled, so an observer near chance stays "
           "near 0); open circles: the level means it was fitted to. VLM curves fitted "
           "from one label order only (n_label_orders 1 in the fit table) are marked \"one "
           "label order\". Self-supervised models: TRA level means at context {context} (or "
           "the nearest), the data, not a fitted bump, constant part kept, divided by the "
           "largest |level mean| on this sweep of any model whose level means are "
           "distinguishable from 0 (one-way F test across clips that all are 0, p < 0.05); a "
           "model not distinguishable from 0 is drawn flat at 0 and labelled so. TRA heights are "
           "relative to that largest model's largest |level mean| and cannot be compared with "
           "the accuracy scale. People's band: pointwise 95% jackknife t band of the pooled "
           "curve over participants; participants' and the pooled fit's intervals in the fit "
           "tables.")
FIT_COLUMNS = ["source", "observer_kind", "observer", "scenario", "parameter",
               "context_frames", "n", "n_clusters", "n_label_orders", "location",
               "location_lo", "location_hi", "width", "width_lo", "width_hi", "direction",
               "guess", "lapse", "asymptotes",
               "peak_height_pct", "peak_height_pct_lo", "peak_height_pct_hi", "peak_tra_pct",
               "peak_tra_pct_lo", "peak_tra_pct_hi", "level_p", "distinguishable", "at_bound",
               "at_step", "ends_at_limit", "interval", "relation", "status", "reference"]
TRA_INTERVAL = "percentile bootstrap over clips within each level"
CHANCE = 0.5  # P(correct) of an observer who cannot tell: each clip is shown both ways
# People's lapses (a missed clip, a slip of the finger) are estimated in Wichmann & Hill's
# range, [0, 0.06], in 0.005 steps (analysis.psychometric says why). A participant's intervals
# are profile likelihood ones (the percentile bootstrap undercovered, analysis.psychometric);
# a VLM's resample a source clip's forward and reversed copies together. A participant's curve
# runs the way the sweep's physics says (experiments.synthetic.curve_direction), as QUEST+
# assumes in the adaptive design: one model on both designs, so their thresholds compare,
# and no fit turns a participant near chance into a curve falling the wrong way.
PEOPLE_FIT: dict[str, Any] = {"guess": CHANCE, "lapse": np.linspace(0.0, 0.06, 13),
                              "profile": True}
# A VLM may sit below chance, level off at 0.7 or fall: both asymptotes are free.
VLM_FIT: dict[str, Any] = {"fit": fit_probability_curve, "chance": CHANCE,
                           "block": "source_clip_id"}


def sweep_levels(levels: pd.DataFrame | None, tra_data: pd.DataFrame | None) -> pd.DataFrame:
    """Clip key -> ``scenario, parameter, parameter_value``, from ``levels`` or the TRA file."""
    if levels is not None and not levels.empty:
        out = levels
    elif tra_data is not None and not tra_data.empty and "parameter" in tra_data:
        out = tra_data.rename(columns={"clip_id": "source_clip_id"})
    else:
        return pd.DataFrame(columns=list(LEVEL_COLUMNS))
    # clip-length cuts have their own section (analysis.report.length)
    out = out[out["parameter"].notna() & (out["parameter"] != length_sweep.PARAMETER)]
    out = out[list(LEVEL_COLUMNS)].drop_duplicates("source_clip_id")
    return out.assign(parameter_value=pd.to_numeric(out["parameter_value"]))


def sweep_trials(aot_kept: pd.DataFrame, levels: pd.DataFrame) -> pd.DataFrame:
    """The analysed arrow-of-time trials on sweep clips, with their sweep labels."""
    if levels.empty or aot_kept.empty:
        return aot_kept.iloc[:0].assign(**{c: [] for c in LEVEL_COLUMNS[1:]})
    return aot_kept.merge(levels, on="source_clip_id", how="inner")


def has_sweep_trials(aot_kept: pd.DataFrame, tra_data: pd.DataFrame | None = None,
                     levels: pd.DataFrame | None = None) -> bool:
    """Whether any analysed arrow-of-time trial is on a sweep clip (the section's condition)."""
    known = sweep_levels(levels, tra_data)["source_clip_id"]
    return bool(len(known)) and bool(aot_kept["source_clip_id"].isin(known).any())


def people_fits(trials: pd.DataFrame, rng, n_boot: int) -> pd.DataFrame:
    """Per participant and pooled, per sweep; a participant not above chance, and an
    adaptive sweep's pooled row, as :mod:`analysis.participant_thresholds` says."""
    humans = human_answers(trials)
    if humans.empty:
        return pd.DataFrame()
    direction = {scenario: curve_direction(scenario, sweep["parameter_value"])
                 for scenario, sweep in humans.groupby("scenario", sort=True)}
    fits = pd.concat([P.psychometric_table(
        sweep, "parameter_value", "correct", by=SWEEP, subject="subject_id", rng=rng,
        n_boot=n_boot, direction=direction[scenario], **PEOPLE_FIT)
        for scenario, sweep in humans.groupby("scenario", sort=True)], ignore_index=True)
    fits = mark_chance(fits, humans, "subject_id", SWEEP, CHANCE)
    fits = adaptive_pooled(fits, humans.loc[is_adaptive(humans), "scenario"].unique(), POOLED,
                           "subject_id", "scenario", direction.get)
    too_few = bootstrap.too_few_people(humans["subject_id"].nunique())
    if too_few:  # a jackknife over 2-4 people is no interval of a population's curve
        pooled = fits["subject_id"] == POOLED
        fits.loc[pooled, [c for c in fits.columns if c.endswith(("_lo", "_hi"))]] = np.nan
        fits.loc[pooled, "interval"] = f"not estimated: {too_few}"
    return fits.assign(observer_kind=PEOPLE, observer="people")


def vlm_clips(trials: pd.DataFrame) -> pd.DataFrame:
    """A VLM's P(correct) per clip (both label orders averaged); empty without logits."""
    models = trials[trials["subject_kind"] == C.MODEL]
    if models.empty:
        return pd.DataFrame()
    return vlm_clip_correct(models, by=["observer", *SWEEP, "source_clip_id"])


def vlm_fits(clips: pd.DataFrame, rng, n_boot: int) -> pd.DataFrame:
    if clips.empty:  # no logits: no P(correct) per clip to fit
        return pd.DataFrame()
    fits = P.psychometric_table(clips, "parameter_value", "p_correct", by=["observer", *SWEEP],
                                rng=rng, n_boot=n_boot, **VLM_FIT)
    # 1 where any clip was scored with one label order only (docs/models.md: run-models
    # --label-orders FB,BF); such a fit carries the label's position bias
    orders = clips.groupby(["observer", *SWEEP])["n_label_orders"].min().rename("n_label_orders")
    return fits.merge(orders.reset_index(), on=["observer", *SWEEP], how="left").assign(
        observer_kind=VLM)


def level_means(humans: pd.DataFrame, clips: pd.DataFrame) -> pd.DataFrame:
    """The data under the fitted curves: pooled people's P(correct) per level (over trials)
    and each VLM's (over clips), with their above-chance accuracy, so a misfit shows."""
    parts = []
    if not humans.empty:
        parts.append(humans.groupby([*SWEEP, "parameter_value"])["correct"].agg(["mean", "size"])
                     .reset_index().assign(observer_kind=PEOPLE, observer="people",
                                           subject_id=POOLED))
    clips = clips[np.isfinite(clips["p_correct"])] if not clips.empty else clips
    if not clips.empty:  # (the fit refuses a sweep with a non-finite score, and says so)
        parts.append(clips.groupby(["observer", *SWEEP, "parameter_value"])["p_correct"]
                     .agg(["mean", "size"]).reset_index().assign(observer_kind=VLM))
    columns = ["observer_kind", "observer", "subject_id", *SWEEP, "level", "p_correct",
               "value_normalised", "n"]
    if not parts:
        return pd.DataFrame(columns=columns)
    out = pd.concat(parts, ignore_index=True).rename(
        columns={"parameter_value": "level", "mean": "p_correct", "size": "n"})
    out["value_normalised"] = shared_axis.above_chance(out["p_correct"], CHANCE)
    return out.reindex(columns=columns)


def _tra(tra_data: pd.DataFrame | None, rng, n_boot: int) -> pd.DataFrame:
    if tra_data is None or tra_data.empty or "parameter" not in tra_data:
        return pd.DataFrame()
    rows = tra_data[tra_data["parameter"].notna()]
    if rows.empty:
        return pd.DataFrame()
    fits = tra_peak.tra_peak_table(rows, rng=rng, n_boot=n_boot)
    return fits.assign(observer_kind=SSL, observer=fits["model"], interval=TRA_INTERVAL)


def _fit_rows(people, vlms, tra) -> pd.DataFrame:
    parts = []
    pooled = people[people["subject_id"] == POOLED] if not people.empty else people
    for fits in (pooled, vlms):
        if not fits.empty:
            parts.append(fits.rename(columns={"threshold": "location", "threshold_lo":
                                              "location_lo", "threshold_hi": "location_hi",
                                              "n_rows": "n"}))
    if not tra.empty:
        parts.append(tra.rename(columns={"peak_location": "location", "peak_location_lo":
                                         "location_lo", "peak_location_hi": "location_hi",
                                         "n_clips": "n"}))
    published = tra_peak.published_tra_peaks().rename(columns={"model": "observer",
                                                        "peak_location": "location"})
    parts.append(published.assign(observer_kind=SSL))
    out = pd.concat(parts, ignore_index=True)
    out["source"] = out["source"].fillna("measured") if "source" in out else "measured"
    return out.reindex(columns=FIT_COLUMNS)


def sweep_curves(people, vlms, tra, humans) -> pd.DataFrame:
    keys = ["observer_kind", "observer", "subject_id", *SWEEP, "context_frames"]
    parts = [shared_axis.normalised_curves(fits, keys=keys)
             for fits in (people, vlms) if not fits.empty]
    if not tra.empty:
        drawn = tra.groupby(["model", *SWEEP], group_keys=False)["context_frames"].apply(
            lambda c: c == c.iloc[(c - TRA_CONTEXT).abs().argmin()])
        # one call for all drawn models: they share each sweep's TRA scale
        parts.append(shared_axis.normalised_curves(
            tra[drawn.reindex(tra.index, fill_value=False)], keys=keys))
    columns = [*keys, "level", "value", "value_normalised", "normalisation", "note"]
    parts = [p for p in parts if not p.empty]
    # reindex: a key no drawn observer has (context_frames when no TRA curve is fitted) is
    # still a column, since the figure groups by it
    curves = (pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()).reindex(
        columns=columns)
    curves["band_lo"], curves["band_hi"] = np.nan, np.nan
    if not vlms.empty:
        single = vlms.loc[vlms["n_label_orders"] < 2, "observer"]
        curves.loc[(curves["observer_kind"] == VLM) & curves["observer"].isin(single),
                   "note"] = "one label order"
    pooled = people[(people["subject_id"] == POOLED) & people["threshold_lo"].notna()
                    & people["status"].map(sweep_fits.is_drawn)] \
        if not people.empty else people
    for _, row in pooled.iterrows():
        mask = ((curves["observer_kind"] == PEOPLE) & (curves["subject_id"] == POOLED)
                & (curves["scenario"] == row["scenario"]))
        sweep = humans[humans["scenario"] == row["scenario"]]
        band = pooled_band(sweep, "parameter_value", "correct", "subject_id", row,
                           curves.loc[mask, "level"].to_numpy(float),
                           lapse=PEOPLE_FIT["lapse"], direction=curve_direction(
                               row["scenario"], sweep["parameter_value"]))
        curves.loc[mask, "band_lo"], curves.loc[mask, "band_hi"] = (
            shared_axis.above_chance(b, row["chance"]) for b in band)
    return curves


def sweep_tables(aot_kept: pd.DataFrame, tra_data: pd.DataFrame | None = None,
                 levels: pd.DataFrame | None = None, n_boot: int = 1000,
                 rng: np.random.Generator | None = None) -> dict:
    """The section's tables (name -> DataFrame); empty when no trial is on a sweep clip.

    Returns ``tra_sweep_fits`` (:data:`FIT_COLUMNS`: ``location`` is the threshold for
    people and VLMs and the peak location for TRA; ``width`` the 5%-95% width;
    ``peak_tra_pct`` the TRA at the peak; ``source`` "measured" or "published";
    ``n_label_orders`` 1 for a VLM fitted from one label order; ``level_p`` and
    ``distinguishable`` the test behind a TRA curve's drawing; ``status`` as
    :func:`analysis.sweep_fits.fit_status` says: "at bound" where the fit lies on a
    fitting limit, "at limit: ..." where an interval end or the lapse rate does, "flat" for
    a VLM without a threshold),
    ``tra_sweep_participants`` (one fit per participant and sweep) and ``tra_sweep_curves``
    (``level, value, value_normalised, band_lo, band_hi`` per observer).
    """
    rng = np.random.default_rng(SEED) if rng is None else rng
    trials = sweep_trials(aot_kept, sweep_levels(levels, tra_data))
    if trials.empty:
        return {}
    clips = vlm_clips(trials)
    people, vlms, tra = people_fits(trials, rng, n_boot), vlm_fits(clips, rng, n_boot), \
        _tra(tra_data, rng, n_boot)
    humans = human_answers(trials)
    tables = {R.TRA_SWEEP_FITS: _fit_rows(people, vlms, tra)}
    if not people.empty:
        tables[R.TRA_SWEEP_PARTICIPANTS] = people[people["subject_id"] != POOLED].drop(
            columns=["observer_kind", "observer"]).reset_index(drop=True)
    tables[R.TRA_SWEEP_CURVES] = sweep_curves(people, vlms, tra, humans)
    tables[R.TRA_SWEEP_LEVEL_MEANS] = level_means(humans, clips)
    sequences = adaptive_sequence.sequence_table(trials)
    if not sequences.empty:  # adaptive sessions: each participant's levels and posterior
        tables[R.TRA_ADAPTIVE_SEQUENCE] = sequences
    return tables


def sweep_figures(tables: dict) -> dict:
    """One figure per sweep present in ``tra_sweep_curves`` (:data:`FIGURES` names)."""
    from analysis import figures_tra

    curves = tables.get(R.TRA_SWEEP_CURVES)
    if curves is None or curves.empty:
        return {}
    fits = tables[R.TRA_SWEEP_FITS]
    published = fits[fits["source"] == "published"]
    caption = CAPTION.format(context=TRA_CONTEXT)
    means = tables[R.TRA_SWEEP_LEVEL_MEANS]
    out = {f"tra_sweep_{scenario}": figures_tra.tra_sweep_figure(
        part, published[published["scenario"] == scenario], caption,
        means[means["scenario"] == scenario])
        for scenario, part in curves.groupby("scenario") if scenario in SCENARIOS}
    if R.TRA_ADAPTIVE_SEQUENCE in tables:
        out["tra_adaptive_sequences"] = figures_tra.adaptive_sequence_figure(
            tables[R.TRA_ADAPTIVE_SEQUENCE])
    return out
