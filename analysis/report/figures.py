"""The report's figures, each drawn by :mod:`analysis.figures` (frame ordering:
:mod:`analysis.figures_ordering`; the TRA sweeps': :mod:`analysis.figures_tra`) from one of its
tables."""
from __future__ import annotations

import pandas as pd

from analysis import figures, figures_ordering
from analysis.report import registry as R


def report_figures(tables: dict, humans: pd.DataFrame) -> dict:
    """Figure name -> plotly figure, for each figure whose tables the report holds
    (:mod:`analysis.report.registry` places them); ``humans``: people's analysed
    arrow-of-time trials, for the reaction-time figures."""
    t = tables
    out = {"exclusion_flow": figures.flow_figure(t[R.EXCLUSION_FLOW])}
    if R.AOT_BY_CATEGORY in t and not t[R.AOT_BY_CATEGORY].empty:
        out["categories"] = figures.category_figure(t[R.AOT_BY_CATEGORY])
    if R.AOT_BY_DIRECTION in t and not t[R.AOT_BY_DIRECTION].empty:
        out["direction_accuracy"] = figures.accuracy_figure(
            t[R.AOT_BY_DIRECTION], "observer", "Accuracy by direction of play")
    overall = t.get(R.AOT_OVERALL, pd.DataFrame())
    if not overall.empty:
        full = overall[overall["subset"] == "full"]
        out["bias"] = figures.bias_figure(full)
        out["sdt"] = figures.sdt_figure(full)
    if not humans.empty:
        out["rt"] = figures.rt_figure(humans)
        out["rt_breakdown"] = figures.rt_breakdown_figure(humans)
    if R.SDT_BY_PARTICIPANT in t and not overall.empty:
        out["participants"] = figures.participant_figure(
            t[R.SDT_BY_PARTICIPANT], overall[overall["subset"] == "full"])
    if R.PER_STIMULUS_AGREEMENT in t and not t[R.PER_STIMULUS_AGREEMENT].empty:
        out["item_scatter"] = figures.item_scatter(t[R.PER_STIMULUS_AGREEMENT])
    if R.ORDERING_BY_FACTOR in t:  # the EGO-FLIGHT conditions, one panel per factor
        out["ordering_factors"] = figures_ordering.ordering_factor_figure(t[R.ORDERING_BY_FACTOR])
    elif R.ORDERING_BY_CONDITION in t:  # conditions that vary no one factor
        out["ordering_condition"] = figures_ordering.ordering_figure(
            t[R.ORDERING_BY_CONDITION], "condition", "Frame ordering by condition")
    if R.ORDERING_BY_CONDITION in t:
        out["ordering_anchoring"] = figures_ordering.ordering_figure(
            t[R.ORDERING_ANCHORING], "true_first_position",
            "First-position anchoring: by presented position of the true first frame")
        out["ordering_inversions"] = figures_ordering.ordering_figure(
            t[R.ORDERING_BY_INVERSIONS], "n_inversions",
            "By disorder of the presented order (pairwise inversions)")
    return out
