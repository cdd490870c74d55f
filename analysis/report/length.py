"""How much of a clip people and models need: thresholds over the number of frames shown from
the clip's middle (issue 31; design ``aot-length-adaptive``, :mod:`experiments.length_sweep`).

One report section (``aot_length``), present when analysed arrow-of-time trials are on a
length sweep's cuts (``levels`` rows whose ``parameter`` is ``n_frames``; ``manage.py
report`` reads them from the study's stimulus set). The fits are the TRA section's
(:mod:`analysis.report.tra`), so people's and models' length thresholds come from the same
fitter as their sweep thresholds: people per participant and pooled (guess 0.5, lapse
estimated, profile likelihood intervals), each model from its P(forward) per cut with both
asymptotes free. The curve rises with the number of frames (more frames never hide the earlier
ones; ``experiments.synthetic.curve_direction``). An adaptive session's levels depend on its
earlier answers only, so each participant's likelihood fit is the one of fixed levels; the
"pooled" row of adaptive sessions is the median of participants' thresholds
(:mod:`analysis.participant_thresholds` says why).

Tables: ``length_thresholds`` (people's and models' thresholds in frames side by side),
``length_curves`` (what the figure draws) and ``length_sequence`` (each participant's
adaptive levels with the posterior behind each choice). Figures: ``length_curves``,
``length_sequences``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import adaptive_sequence
from analysis.participant_thresholds import human_answers
from analysis.report import registry as R
from analysis.report import tra
from experiments.length_sweep import PARAMETER

SEED = 0  # the section's own generator: adding it leaves every other table's draws alone
THRESHOLD_COLUMNS = ["observer_kind", "observer", "subject_id", "n", "n_levels",
                     "threshold_frames", "threshold_lo", "threshold_hi", "width_frames",
                     "guess", "lapse", "curve_min", "curve_max", "direction",
                     "n_label_orders", "status", "interval", "p_above_chance"]
CAPTION = ("People and models over the number of frames shown around each clip's middle: "
           "above-chance accuracy 2·P(correct) − 1 of the fitted curve (0 = chance, 1 = always "
           "right); open circles: the level means it was fitted to. People's band: pointwise "
           "95% jackknife t band of the pooled curve; thresholds and their intervals in "
           "length_thresholds.")


def length_levels(levels: pd.DataFrame | None) -> pd.DataFrame:
    """The length cuts of ``levels`` (``source_clip_id, scenario, parameter,
    parameter_value``); empty without any."""
    if levels is None or levels.empty:
        return pd.DataFrame(columns=list(tra.LEVEL_COLUMNS))
    out = levels[levels["parameter"] == PARAMETER][list(tra.LEVEL_COLUMNS)]
    return out.drop_duplicates("source_clip_id").assign(
        parameter_value=lambda d: pd.to_numeric(d["parameter_value"]))


def has_length_trials(aot_kept: pd.DataFrame, levels: pd.DataFrame | None) -> bool:
    known = length_levels(levels)["source_clip_id"]
    return bool(len(known)) and bool(aot_kept["source_clip_id"].isin(known).any())


def _thresholds(people: pd.DataFrame, vlms: pd.DataFrame) -> pd.DataFrame:
    parts = [fits for fits in (people, vlms) if not fits.empty]
    if not parts:
        return pd.DataFrame(columns=THRESHOLD_COLUMNS)
    out = pd.concat(parts, ignore_index=True).rename(columns={
        "threshold": "threshold_frames", "width": "width_frames", "n_rows": "n"})
    return out.reindex(columns=THRESHOLD_COLUMNS)


def length_tables(aot_kept: pd.DataFrame, levels: pd.DataFrame | None, n_boot: int = 1000,
                  rng: np.random.Generator | None = None) -> dict:
    """The section's tables (name -> DataFrame); empty when no trial is on a length cut.

    ``length_thresholds`` has one row per fit (:data:`THRESHOLD_COLUMNS`): people pooled
    (``subject_id`` "pooled") and per participant, and each model; ``threshold_frames`` is
    the number of frames at the curve's midpoint, ``width_frames`` its 5%-95% width.
    """
    rng = np.random.default_rng(SEED) if rng is None else rng
    trials = tra.sweep_trials(aot_kept, length_levels(levels))
    if trials.empty:
        return {}
    clips = tra.vlm_clips(trials)
    people, vlms = tra.people_fits(trials, rng, n_boot), tra.vlm_fits(clips, rng, n_boot)
    humans = human_answers(trials)
    # people at ceiling or floor throughout have a status and no threshold: nothing to draw
    drawn = people if "threshold" in people else pd.DataFrame()
    tables = {R.LENGTH_THRESHOLDS: _thresholds(people, vlms),
              R.LENGTH_CURVES: tra.sweep_curves(drawn, vlms, pd.DataFrame(), humans),
              R.LENGTH_LEVEL_MEANS: tra.level_means(humans, clips)}
    sequences = adaptive_sequence.sequence_table(trials)
    if not sequences.empty:
        tables[R.LENGTH_SEQUENCE] = sequences
    return tables


def length_figures(tables: dict) -> dict:
    """``length_curves`` (people and models over the number of frames) and, for adaptive
    sessions, ``length_sequences``."""
    from analysis import figures_tra

    curves = tables.get(R.LENGTH_CURVES)
    if curves is None or curves.empty:
        return {}
    published = pd.DataFrame(columns=["location", "observer", "peak_tra_pct"])
    out = {"length_curves": figures_tra.tra_sweep_figure(curves, published, CAPTION,
                                                         tables[R.LENGTH_LEVEL_MEANS])}
    if R.LENGTH_SEQUENCE in tables:
        out["length_sequences"] = figures_tra.adaptive_sequence_figure(tables[R.LENGTH_SEQUENCE])
    return out
