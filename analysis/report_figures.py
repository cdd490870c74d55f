"""The report's figures, each drawn by :mod:`analysis.figures` from one of its tables."""
from __future__ import annotations

import pandas as pd

from analysis import figures


def report_figures(tables: dict, humans: pd.DataFrame) -> dict:
    """Figure name -> plotly figure, for each figure whose tables the report holds
    (:data:`analysis.report_output.SECTIONS` places them); ``humans``: people's analysed
    arrow-of-time trials, for the reaction-time figures."""
    t = tables
    out = {"exclusion_flow": figures.flow_figure(t["exclusion_flow"])}
    if "aot_by_category" in t and not t["aot_by_category"].empty:
        out["categories"] = figures.category_figure(t["aot_by_category"])
    if "aot_by_direction" in t and not t["aot_by_direction"].empty:
        out["direction_accuracy"] = figures.accuracy_figure(
            t["aot_by_direction"], "observer", "Accuracy by direction of play")
    overall = t.get("aot_overall", pd.DataFrame())
    if not overall.empty:
        full = overall[overall["subset"] == "full"]
        out["bias"] = figures.bias_figure(full)
        out["sdt"] = figures.sdt_figure(full)
    if not humans.empty:
        out["rt"] = figures.rt_figure(humans)
        out["rt_breakdown"] = figures.rt_breakdown_figure(humans)
    if "sdt_by_participant" in t and not overall.empty:
        out["participants"] = figures.participant_figure(
            t["sdt_by_participant"], overall[overall["subset"] == "full"])
    if "per_stimulus_agreement" in t and not t["per_stimulus_agreement"].empty:
        out["item_scatter"] = figures.item_scatter(t["per_stimulus_agreement"])
    if "ordering_by_factor" in t:  # the EGO-FLIGHT conditions, one panel per factor
        out["ordering_factors"] = figures.ordering_factor_figure(t["ordering_by_factor"])
    elif "ordering_by_condition" in t:  # conditions that vary no one factor
        out["ordering_condition"] = figures.ordering_figure(
            t["ordering_by_condition"], "condition", "Frame ordering by condition")
    if "ordering_by_condition" in t:
        out["ordering_anchoring"] = figures.ordering_figure(
            t["ordering_anchoring"], "true_first_position",
            "First-position anchoring: by presented position of the true first frame")
        out["ordering_inversions"] = figures.ordering_figure(
            t["ordering_by_inversions"], "n_inversions",
            "By disorder of the presented order (pairwise inversions)")
    return out
