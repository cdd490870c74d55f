"""The TRA sweeps' figures: people, VLMs and self-supervised models over one physical sweep,
and the adaptive (QUEST+) trial sequences."""
from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from analysis.figures import HUMAN_COLOR, PALETTE

TRA_SWEEP_STYLES = {"vlm": "dash", "self_supervised": "dot"}
PARAMETER_TITLES = {"restitution": "Restitution (ball)", "damping": "Damping, 1/s (pendulum)",
                    "n_frames": "Frames shown (clip's middle)"}


def tra_sweep_figure(curves: pd.DataFrame, published: pd.DataFrame, caption: str,
                     level_means: pd.DataFrame):
    """People, VLMs and self-supervised models over one physical sweep, each normalised.

    ``curves``: one sweep's rows of :func:`analysis.report.tra.sweep_tables`'
    ``tra_sweep_curves`` (``observer_kind, observer, subject_id, level, value_normalised,
    band_lo, band_hi, note``; a non-empty ``note``, e.g. "not distinguishable from 0", is
    added to the curve's legend label); ``published``: the TRA paper's peaks for this sweep
    (a dotted vertical line each, labelled published); ``caption``: the normalisation, stated
    under the plot; ``level_means``: its ``tra_sweep_level_means`` rows, drawn as markers in
    the colour of the fitted curve they belong to (pooled people, each VLM).
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    people = curves[curves["observer_kind"] == "people"]
    pooled = people[people["subject_id"] == "pooled"]
    for n, (subject, part) in enumerate(people[people["subject_id"] != "pooled"]
                                        .groupby("subject_id", sort=True)):
        fig.add_scatter(x=part["level"], y=part["value_normalised"], mode="lines",
                        line={"color": "#999999", "width": 0.7}, name="participants",
                        legendgroup="participants", showlegend=n == 0, opacity=0.6,
                        hovertext=str(subject))
    if not pooled.empty and pooled["band_lo"].notna().any():
        fig.add_scatter(x=list(pooled["level"]) + list(pooled["level"][::-1]),
                        y=list(pooled["band_hi"]) + list(pooled["band_lo"][::-1]),
                        fill="toself", fillcolor="rgba(34,34,34,0.15)", line={"width": 0},
                        name="people, 95% band", hoverinfo="skip")
    def markers(kind, observer, color):
        data = level_means[(level_means["observer_kind"] == kind)
                           & (level_means["observer"] == observer)]
        if not data.empty:
            fig.add_scatter(x=data["level"], y=data["value_normalised"], mode="markers",
                            marker={"color": color, "size": 7, "symbol": "circle-open"},
                            name=f"{observer}, level means", legendgroup=str(observer),
                            hovertext=[f"n = {n}" for n in data["n"]])

    if not pooled.empty:
        fig.add_scatter(x=pooled["level"], y=pooled["value_normalised"], mode="lines",
                        line={"color": HUMAN_COLOR, "width": 3}, name="people (pooled)")
        markers("people", "people", HUMAN_COLOR)
    others = curves[curves["observer_kind"] != "people"]
    for i, ((kind, observer, context), part) in enumerate(others.groupby(
            ["observer_kind", "observer", "context_frames"], dropna=False, sort=True)):
        label = str(observer) + ("" if pd.isna(context) else f" (TRA, context {int(context)})")
        note = part["note"].dropna().iloc[0] if "note" in part and part["note"].notna().any() \
            else ""
        label += f" — {note}" if note else ""
        fig.add_scatter(x=part["level"], y=part["value_normalised"], mode="lines", name=label,
                        line={"color": PALETTE[i % len(PALETTE)], "width": 2,
                              "dash": TRA_SWEEP_STYLES.get(kind, "solid")},
                        legendgroup=str(observer))
        if kind == "vlm":
            markers(kind, observer, PALETTE[i % len(PALETTE)])
    for row in published[published["location"].notna()].itertuples():
        fig.add_vline(x=row.location, line_dash="dot", line_color="#777777",
                      annotation_text=f"published {row.observer} peak: {row.peak_tra_pct:+.2f}%",
                      annotation_position="top")
    parameter = str(curves["parameter"].iloc[0]) if len(curves) else ""
    scenario = str(curves["scenario"].iloc[0]).replace("_", " ") if len(curves) else ""
    # plotly does not wrap annotations: broken by hand, under the plot
    fig.add_annotation(text="<br>".join(textwrap.wrap(caption, 150)), xref="paper",
                       yref="paper", x=0, y=-0.16, yanchor="top", showarrow=False,
                       align="left", xanchor="left", font={"size": 10})
    fig.update_xaxes(title_text=PARAMETER_TITLES.get(parameter, parameter))
    # below 0 is drawn, not clipped: worse than chance, or a TRA dip
    low = min(np.nanmin(curves[["value_normalised", "band_lo"]].to_numpy(float), initial=0.0),
              np.nanmin(level_means["value_normalised"].to_numpy(float), initial=0.0))
    fig.update_yaxes(title_text="normalised<br>accuracy: 0 = chance, 1 = always right; "
                                "TRA: 1 = the largest |level mean|",
                     range=[min(-0.05, low - 0.05), 1.1])
    fig.update_layout(title=f"Arrow of time over the {scenario} sweep: people, VLMs and "
                            "self-supervised models", height=680, margin={"b": 210})
    return fig


def adaptive_sequence_figure(sequence: pd.DataFrame):
    """Each participant's adaptive levels in the order shown (markers: filled right, open
    wrong, x no answer) and the posterior threshold's 95% interval behind each choice
    (a band), one panel per sweep: ``sequence`` is ``tra_adaptive_sequence``."""
    from plotly.subplots import make_subplots

    sweeps = sorted(sequence["scenario"].unique())
    fig = make_subplots(rows=1, cols=len(sweeps), subplot_titles=sweeps)
    for col, sweep in enumerate(sweeps, start=1):
        for n, (subject, part) in enumerate(sequence[sequence["scenario"] == sweep]
                                            .groupby("subject_id", sort=True)):
            shown = {"legendgroup": str(subject), "showlegend": col == 1}
            fig.add_scatter(x=list(part["slot"]) + list(part["slot"][::-1]),
                            y=list(part["threshold_hi"]) + list(part["threshold_lo"][::-1]),
                            fill="toself", opacity=0.15, line={"width": 0}, hoverinfo="skip",
                            name=f"{subject}: posterior 95%", row=1, col=col, **shown)
            symbols = part["correct"].map({True: "circle", False: "circle-open"}).fillna("x")
            fig.add_scatter(x=part["slot"], y=part["level"], mode="lines+markers",
                            marker={"symbol": list(symbols)}, line={"width": 0.7},
                            name=str(subject), row=1, col=col, **shown)
    fig.update_xaxes(title_text="adaptive trial on the sweep")
    fig.update_yaxes(title_text="level", col=1)
    fig.update_layout(title="Adaptive (QUEST+) trial sequences and posteriors", height=420)
    return fig
