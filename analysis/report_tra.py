"""The TRA sweeps seen three ways: people, VLMs and self-supervised video models.

One report section (``tra_sweep`` in :data:`analysis.report_output.SECTIONS`), present only
when the analysed trials hold arrow-of-time trials on sweep clips (restitution 0.1-1.0 for
the bouncing ball, damping 0.0-5.0 for the pendulum):

* people: P(correct) per level, one psychometric fit per participant and one pooled over
  participants (participant bootstrap), chance = 0.5 (each clip is shown both ways);
* VLMs: P(correct) per clip from their logits, both label orders averaged
  (:func:`analysis.psychometric.vlm_clip_correct`), one fit per model and setting;
* self-supervised models: the Gaussian-bump fit of per-clip TRA from the ``--tra`` file.

A trial's sweep level comes from ``levels`` (``source_clip_id, scenario, parameter,
parameter_value``; ``manage.py report`` reads it from the study's stimulus set) or, without
it, from the TRA file's ``clip_id`` labels (the same clip keys).

Tables: ``tra_sweep_fits`` (pooled people, VLMs, TRA, and the TRA paper's peaks with
``source`` = "published", never "measured"), ``tra_sweep_participants`` and
``tra_sweep_curves`` (what the figures draw). Figures: ``tra_sweep_<scenario>``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import psychometric as P
from analysis.bootstrap import resample_counts

SEED = 0  # the section's own generator: adding it leaves every other table's draws alone
SCENARIOS = ("bouncing_ball", "pendulum")
FIGURES = tuple(f"tra_sweep_{s}" for s in SCENARIOS)
TRA_CONTEXT = 12  # the context drawn per model (TRA paper, Table 9); the table has all
LEVEL_COLUMNS = ("source_clip_id", "scenario", "parameter", "parameter_value")
SWEEP = ["scenario", "parameter"]
PEOPLE, VLM, SSL = "people", "vlm", "self_supervised"
POOLED = "pooled"
CAPTION = ("Each observer's fitted curve is rescaled to [0, 1] between its own minimum and "
           "maximum over the sweep ({rule}); people and VLMs: P(correct), chance 0.5; "
           "self-supervised models: TRA at context {context} (or the nearest). People's band: "
           "95% participant-bootstrap band of the pooled curve, on the pooled curve's scale. "
           "A TRA curve whose peak-height interval holds 0 is drawn flat at 0.")
FIT_COLUMNS = ["source", "observer_kind", "observer", "scenario", "parameter",
               "context_frames", "n", "location", "location_lo", "location_hi", "width",
               "width_lo", "width_hi", "peak_tra_pct", "peak_tra_pct_lo", "peak_tra_pct_hi",
               "relation", "status", "reference"]


def sweep_levels(levels: pd.DataFrame | None, tra_data: pd.DataFrame | None) -> pd.DataFrame:
    """Clip key -> ``scenario, parameter, parameter_value``, from ``levels`` or the TRA file."""
    if levels is not None and not levels.empty:
        out = levels
    elif tra_data is not None and not tra_data.empty and "parameter" in tra_data:
        out = tra_data.rename(columns={"clip_id": "source_clip_id"})
    else:
        return pd.DataFrame(columns=list(LEVEL_COLUMNS))
    out = out[out["parameter"].notna()][list(LEVEL_COLUMNS)].drop_duplicates("source_clip_id")
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


def _people(trials: pd.DataFrame, rng, n_boot: int) -> pd.DataFrame:
    humans = trials[trials["subject_kind"] == C.HUMAN]
    humans = humans.assign(correct=pd.to_numeric(humans["correct"], errors="coerce"))
    humans = humans[humans["correct"].notna()]
    if humans.empty:
        return pd.DataFrame()
    fits = P.psychometric_table(humans, "parameter_value", "correct", by=SWEEP,
                                subject="subject_id", rng=rng, guess=0.5, n_boot=n_boot)
    return fits.assign(observer_kind=PEOPLE, observer="people")


def _vlms(trials: pd.DataFrame, rng, n_boot: int) -> pd.DataFrame:
    models = trials[trials["subject_kind"] == C.MODEL]
    if models.empty:
        return pd.DataFrame()
    clips = P.vlm_clip_correct(models, by=["observer", *SWEEP])
    if clips.empty:  # no logits: no P(correct) per clip to fit
        return pd.DataFrame()
    fits = P.psychometric_table(clips, "parameter_value", "p_correct", by=["observer", *SWEEP],
                                rng=rng, guess=0.5, n_boot=n_boot)
    return fits.assign(observer_kind=VLM)


def _tra(tra_data: pd.DataFrame | None, rng, n_boot: int) -> pd.DataFrame:
    if tra_data is None or tra_data.empty or "parameter" not in tra_data:
        return pd.DataFrame()
    rows = tra_data[tra_data["parameter"].notna()]
    if rows.empty:
        return pd.DataFrame()
    fits = P.tra_peak_table(rows, rng=rng, n_boot=n_boot)
    return fits.assign(observer_kind=SSL, observer=fits["model"])


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
    published = P.published_tra_peaks().rename(columns={"model": "observer",
                                                        "peak_location": "location"})
    parts.append(published.assign(observer_kind=SSL))
    out = pd.concat(parts, ignore_index=True)
    out["source"] = out["source"].fillna("measured") if "source" in out else "measured"
    return out.reindex(columns=FIT_COLUMNS)


def _band(humans: pd.DataFrame, row: pd.Series, grid, rng, n_boot: int):
    """95% pointwise band of the pooled curve over participant resamples."""
    x = np.unique(humans["parameter_value"].to_numpy(float))
    codes, uniques = pd.factorize(humans["subject_id"])
    col = np.searchsorted(x, humans["parameter_value"].to_numpy(float))
    sums, counts = np.zeros((len(uniques), len(x))), np.zeros((len(uniques), len(x)))
    np.add.at(sums, (codes, col), humans["correct"].to_numpy(float))
    np.add.at(counts, (codes, col), 1)
    w = resample_counts(rng, len(uniques), n_boot)
    boot = P.fit_counts(x, w @ sums, w @ counts, sigmoid=row["sigmoid"], guess=row["guess"])
    cdf, _, quantile = P.SIGMOIDS[row["sigmoid"]]
    s = boot["width"] / (quantile(1 - P.WIDTH_ALPHA) - quantile(P.WIDTH_ALPHA))
    curves = row["guess"] + (1 - row["guess"]) * cdf(
        boot["direction"][:, None] * (grid[None] - boot["threshold"][:, None]) / s[:, None])
    return np.percentile(curves, [2.5, 97.5], axis=0)


def _curves(people, vlms, tra, humans, rng, n_boot) -> pd.DataFrame:
    keys = ["observer_kind", "observer", "subject_id", *SWEEP, "context_frames"]
    parts = []
    for fits in (people, vlms):
        if not fits.empty:
            parts.append(P.normalised_curves(fits, keys=keys))
    if not tra.empty:
        drawn = tra.groupby(["model", *SWEEP], group_keys=False)["context_frames"].apply(
            lambda c: c == c.iloc[(c - TRA_CONTEXT).abs().argmin()])
        ssl = P.normalised_curves(tra[drawn.reindex(tra.index, fill_value=False)], keys=keys)
        # a curve whose peak-height interval holds 0 (normalised_curves leaves it NaN) is drawn
        # flat at 0, "no asymmetry", rather than its noise stretched to [0, 1] or left out
        parts.append(ssl.assign(value_normalised=ssl["value_normalised"].fillna(0.0)))
    columns = [*keys, "level", "value", "value_normalised", "normalisation"]
    parts = [p for p in parts if not p.empty]
    # reindex: a key no drawn observer has (context_frames when no TRA curve is fitted) is
    # still a column, since the figure groups by it
    curves = (pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()).reindex(
        columns=columns)
    curves["band_lo"], curves["band_hi"] = np.nan, np.nan
    pooled = people[(people["subject_id"] == POOLED) & (people["status"] == "ok")] \
        if not people.empty else people
    for _, row in pooled.iterrows():
        mask = ((curves["observer_kind"] == PEOPLE) & (curves["subject_id"] == POOLED)
                & (curves["scenario"] == row["scenario"]))
        part = curves[mask]
        sweep = humans[humans["scenario"] == row["scenario"]]
        lo, hi = _band(sweep, row, part["level"].to_numpy(float), rng, n_boot)
        low, spread = part["value"].min(), part["value"].max() - part["value"].min()
        curves.loc[mask, "band_lo"] = (lo - low) / spread if spread else np.nan
        curves.loc[mask, "band_hi"] = (hi - low) / spread if spread else np.nan
    return curves


def sweep_tables(aot_kept: pd.DataFrame, tra_data: pd.DataFrame | None = None,
                 levels: pd.DataFrame | None = None, n_boot: int = 1000,
                 rng: np.random.Generator | None = None) -> dict:
    """The section's tables (name -> DataFrame); empty when no trial is on a sweep clip.

    Returns ``tra_sweep_fits`` (:data:`FIT_COLUMNS`: ``location`` is the threshold for
    people and VLMs and the peak location for TRA; ``width`` the 5%-95% width;
    ``peak_tra_pct`` the TRA at the peak; ``source`` "measured" or "published"),
    ``tra_sweep_participants`` (one fit per participant and sweep) and ``tra_sweep_curves``
    (``level, value, value_normalised, band_lo, band_hi`` per observer).
    """
    rng = np.random.default_rng(SEED) if rng is None else rng
    trials = sweep_trials(aot_kept, sweep_levels(levels, tra_data))
    if trials.empty:
        return {}
    people, vlms, tra = _people(trials, rng, n_boot), _vlms(trials, rng, n_boot), \
        _tra(tra_data, rng, n_boot)
    humans = trials[trials["subject_kind"] == C.HUMAN]
    humans = humans.assign(correct=pd.to_numeric(humans["correct"], errors="coerce")).dropna(
        subset=["correct"])
    tables = {"tra_sweep_fits": _fit_rows(people, vlms, tra)}
    if not people.empty:
        tables["tra_sweep_participants"] = people[people["subject_id"] != POOLED].drop(
            columns=["observer_kind", "observer"]).reset_index(drop=True)
    tables["tra_sweep_curves"] = _curves(people, vlms, tra, humans, rng, n_boot)
    return tables


def sweep_figures(tables: dict) -> dict:
    """One figure per sweep present in ``tra_sweep_curves`` (:data:`FIGURES` names)."""
    from analysis import figures

    curves = tables.get("tra_sweep_curves")
    if curves is None or curves.empty:
        return {}
    fits = tables["tra_sweep_fits"]
    published = fits[fits["source"] == "published"]
    caption = CAPTION.format(rule=P.NORMALISATION, context=TRA_CONTEXT)
    return {f"tra_sweep_{scenario}": figures.tra_sweep_figure(
        part, published[published["scenario"] == scenario], caption)
        for scenario, part in curves.groupby("scenario") if scenario in SCENARIOS}
