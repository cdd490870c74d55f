"""Paper-style plotly figures, each a pure function of one analysis table.

Plotly is imported inside each function so that importing :mod:`analysis` stays cheap.
The researcher dashboard and the HTML report call the same functions. The frame-ordering
figures are in :mod:`analysis.figures_ordering`, the TRA sweeps' in :mod:`analysis.figures_tra`;
both draw with this module's colours.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.columns import FRAME_ORDER

HUMAN_COLOR = "#222222"
DIRECTION_COLORS = {"forward": "#1f77b4", "backward": "#d62728"}
# The direction label of frame-ordering rows in an accuracy table (their exact-order rate).
FRAME_ORDER_LABEL = "frame order"
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
PANELS = (("f1_forward", "Forward F1"), ("f1_backward", "Backward F1"), ("accuracy", "Accuracy"))


def observer_colors(observers) -> dict:
    """Each observer's colour: people always :data:`HUMAN_COLOR`, models from :data:`PALETTE`."""
    others = [o for o in observers if o != "human"]
    colors = {o: PALETTE[i % len(PALETTE)] for i, o in enumerate(others)}
    colors["human"] = HUMAN_COLOR
    return colors


def error_bars(table: pd.DataFrame, metric: str, scale: float = 100.0):
    """plotly ``error_y`` from ``<metric>_ci_low/_ci_high`` (times ``scale``); None without them."""
    low, high = f"{metric}_ci_low", f"{metric}_ci_high"
    if low not in table or high not in table:
        return None
    return {"type": "data", "symmetric": False,
            "array": (scale * (table[high] - table[metric])).to_numpy(),
            "arrayminus": (scale * (table[metric] - table[low])).to_numpy()}


def category_figure(table: pd.DataFrame):
    """Per-category Forward F1, Backward F1 and accuracy (AoT-PsyPhyBENCH Figure 5).

    ``table``: ``observer, category`` and the metrics of
    :func:`analysis.aot.aot_metrics`, optionally with ``*_ci_low/_ci_high`` columns.
    """
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=3, subplot_titles=[t for _, t in PANELS],
                        shared_yaxes=True)
    colors = observer_colors(table["observer"].unique())
    for col, (metric, _) in enumerate(PANELS, start=1):
        for observer, part in table.groupby("observer", sort=False):
            fig.add_bar(x=part["category"], y=100 * part[metric], name=str(observer),
                        marker_color=colors[observer], legendgroup=str(observer),
                        showlegend=col == 1, error_y=error_bars(part, metric), row=1, col=col)
    fig.update_yaxes(range=[0, 105], title_text="%", row=1, col=1)
    fig.update_layout(barmode="group", title="Per-category performance", height=420)
    return fig


def accuracy_figure(table: pd.DataFrame, by: str, title: str):
    """Accuracy per ``by`` value, one bar per direction, with the 50% chance line.

    ``table``: ``by, direction, accuracy, n_trials`` (e.g. :func:`analysis.aot.aot_metrics`
    by ``[by, "direction"]``). Rows whose direction is ``"frame order"`` hold the exact-order
    rate of frame-ordering trials, whose chance level is not 50%: the line is drawn only
    when some row is a two-choice direction.
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    for direction, part in table.groupby("direction", sort=False):
        fig.add_bar(x=part[by].astype(str), y=part["accuracy"], name=str(direction),
                    customdata=part["n_trials"],
                    marker_color=DIRECTION_COLORS.get(direction, "#7f7f7f"),
                    hovertemplate=f"%{{x}}: %{{y:.0%}} of %{{customdata}} trials"
                                  f"<extra>{direction}</extra>")
    if (table["direction"] != FRAME_ORDER_LABEL).any():
        fig.add_hline(y=0.5, line_dash="dot", line_color="#888")
    if (table["direction"] == FRAME_ORDER_LABEL).any():
        title += " (frame ordering: exact order)"
    fig.update_layout(title=title, barmode="group", height=380,
                      yaxis={"title": "accuracy", "range": [0, 1], "tickformat": ".0%"})
    return fig


def bias_figure(table: pd.DataFrame):
    """Share of "Forward" answers per observer, with the unbiased 50% line (label bias)."""
    import plotly.graph_objects as go

    colors = observer_colors(table["observer"].unique())
    fig = go.Figure(go.Bar(x=table["observer"], y=100 * table["forward_share"],
                           marker_color=[colors[o] for o in table["observer"]],
                           error_y=error_bars(table, "forward_share")))
    fig.add_hline(y=50, line_dash="dash", annotation_text="no bias")
    fig.update_layout(title="Label bias: share of Forward answers", yaxis_title="%",
                      yaxis_range=[0, 100], height=380)
    return fig


def sdt_figure(table: pd.DataFrame):
    """Sensitivity d' against criterion c per observer ("backward" as the signal)."""
    import plotly.graph_objects as go

    colors = observer_colors(table["observer"].unique())
    fig = go.Figure()
    for _, row in table.iterrows():
        fig.add_scatter(x=[row["criterion"]], y=[row["d_prime"]], mode="markers+text",
                        text=[row["observer"]], textposition="top center",
                        marker={"size": 12, "color": colors[row["observer"]]},
                        name=str(row["observer"]), showlegend=False)
    fig.add_vline(x=0, line_dash="dot")
    fig.update_layout(title="Signal detection: d' vs criterion c (c > 0: forward bias)",
                      xaxis_title="criterion c", yaxis_title="d'", height=400)
    return fig


RT_TICKS_MS = (100, 200, 300, 500, 700, 1000, 1500, 2000, 3000, 5000, 7000, 10000, 20000)


def rt_figure(data: pd.DataFrame, max_points: int = 20000):
    """RT distributions of answered trials: by direction x response for arrow-of-time
    trials, and one violin for frame orderings.

    Large tables are thinned to ``max_points`` trials, evenly spaced, for the browser. The
    log axis spans the RTs with a margin of 1.5x either side, so one trial (or many equal
    RTs) still gets an axis of round values; without trials it spans 300 ms to 3 s.
    """
    import plotly.graph_objects as go

    violins = _violins(data)
    drawn = violins.notna().to_numpy()
    trials = pd.DataFrame({"violin": violins[drawn].to_numpy(),
                           "rt_ms": data.loc[drawn, "rt_ms"].to_numpy()})
    if len(trials) > max_points:
        trials = trials.iloc[np.linspace(0, len(trials) - 1, max_points).astype(int)]
    fig = go.Figure()
    for name, part in trials.groupby("violin"):
        fig.add_violin(y=part["rt_ms"], name=name, box_visible=True, meanline_visible=False,
                       points=False)
    if trials.empty:
        fig.add_annotation(text="no answered trials", showarrow=False, xref="paper",
                           yref="paper", x=0.5, y=0.5)
    low, high = (trials["rt_ms"].min(), trials["rt_ms"].max()) if len(trials) else (450, 2000)
    low, high = low / 1.5, high * 1.5
    # Labelled round values only (plotly's own minor labels read "2, 3 ... 1000").
    ticks = [t for t in RT_TICKS_MS if low <= t <= high]
    fig.update_layout(title="Reaction times by direction and answer", yaxis_title="RT (ms)",
                      yaxis={"type": "log", "range": [np.log10(low), np.log10(high)],
                             "tickvals": ticks, "ticktext": [f"{t:,}" for t in ticks],
                             "minor": {"showgrid": False}},
                      height=420)
    return fig


def _violins(data: pd.DataFrame) -> pd.Series:
    """The violin of each trial ("forward / answered B", "frame order"); missing for a
    trial without an answer or an RT."""
    # Labelled per distinct (direction, response), not per trial: a million string
    # concatenations were most of the figure's time.
    pair = data.groupby([data["direction"], data["response"]], observed=True,
                        dropna=False)
    names = [f"{d} / answered {r}" for d, r in pair.size().index]
    labels = pd.Series(np.asarray(names, dtype=object)[pair.ngroup().to_numpy()],
                       index=data.index).where(data["response"].isin(("F", "B")))
    if "trial_type" in data:
        ordered = (data["trial_type"] == FRAME_ORDER) & data["response"].notna()
        labels = labels.mask(ordered, FRAME_ORDER_LABEL)
    return labels.where(data["rt_ms"] > 0)


def rt_breakdown_figure(data: pd.DataFrame):
    """Median RT with its interquartile range by motion category (one trace per direction)
    and by participant (sorted), from answered arrow-of-time trials of people."""
    from plotly.subplots import make_subplots

    from analysis import loading

    columns = [c for c in ("response", "rt_ms", "direction", "categories", "subject_id")
               if c in data.columns]
    trials = data.loc[data["response"].isin(("F", "B")) & (data["rt_ms"] > 0), columns]
    fig = make_subplots(rows=1, cols=2, column_widths=[0.45, 0.55],
                        subplot_titles=["By motion category", "By participant"])
    if "categories" in trials.columns:
        by_category = loading.explode_categories(trials, columns=["rt_ms", "direction",
                                                                  "categories"])
        for direction, part in by_category.groupby("direction", sort=True):
            _median_iqr(fig, part, "category", str(direction), col=1)
    _median_iqr(fig, trials.assign(participant=trials["subject_id"].astype(str)),
                "participant", "people", col=2, sort=True)
    fig.update_yaxes(title_text="RT (ms), median and IQR", row=1, col=1)
    fig.update_layout(title="Reaction times by category and by participant", height=420)
    return fig


def _median_iqr(fig, trials: pd.DataFrame, by: str, name: str, col: int,
                sort: bool = False) -> None:
    if trials.empty:
        return
    stats = trials.groupby(by)["rt_ms"].quantile([0.25, 0.5, 0.75]).unstack()
    if sort:
        stats = stats.sort_values(0.5)
    fig.add_scatter(x=stats.index.astype(str), y=stats[0.5], mode="markers", name=name,
                    error_y={"type": "data", "symmetric": False,
                             "array": stats[0.75] - stats[0.5],
                             "arrayminus": stats[0.5] - stats[0.25]},
                    row=1, col=col)


FLOW_PANELS = (("participants", "Participants"), ("trials", "Trials"))


def flow_figure(flow: pd.DataFrame, title: str = "Exclusion flow (remaining after each step)"):
    """Participants and trials remaining after each exclusion step, one panel per count.

    ``flow``: ``step`` and, for participants and/or trials, ``n_<noun>_removed`` and
    ``n_<noun>_remaining`` (:func:`analysis.exclusions.trial_exclusion_flow` has both).
    """
    from plotly.subplots import make_subplots

    panels = [(noun, label) for noun, label in FLOW_PANELS if f"n_{noun}_remaining" in flow]
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[t for _, t in panels])
    for col, (noun, _) in enumerate(panels, start=1):
        remaining = flow[f"n_{noun}_remaining"]
        fig.add_bar(x=flow["step"], y=remaining, text=remaining, showlegend=False,
                    customdata=flow[f"n_{noun}_removed"],
                    hovertemplate="%{x}: %{customdata} removed, %{y} left<extra></extra>",
                    row=1, col=col)
        # Whole counts only: a handful of participants would otherwise get ticks of 0.2.
        fig.update_yaxes(rangemode="tozero", dtick=1 if remaining.max() <= 5 else None,
                         row=1, col=col)
    fig.update_layout(title=title, height=380)
    return fig


def item_scatter(agreement: pd.DataFrame):
    """Per-item accuracy of people (x) against each model observer's (y), one point per
    stimulus (a clip in one direction), with the diagonal of equal accuracy.

    ``agreement``: :func:`analysis.human_vs_model.per_stimulus_agreement`. A model's value
    is 0 or 1 for an item shown once (0.5 when its two label orders disagree), so points
    are jittered vertically by up to 0.03 (deterministically, by item) to show their count.
    """
    import plotly.graph_objects as go

    colors = observer_colors(agreement["model"].unique())
    fig = go.Figure()
    for model, part in agreement.groupby("model", sort=True):
        order = np.argsort(np.argsort(part["stimulus"].astype(str).to_numpy()))
        jitter = 0.06 * (order / max(len(part) - 1, 1) - 0.5)
        fig.add_scatter(x=part["human_accuracy"], y=part["model_correct"] + jitter,
                        mode="markers", name=str(model), marker={"color": colors[model],
                                                                 "size": 6, "opacity": 0.6},
                        text=part["stimulus"].astype(str),
                        customdata=part["model_correct"],
                        hovertemplate="%{text}<br>people %{x:.2f}<br>model %{customdata:.2f}")
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dot", "color": "#999"},
                    showlegend=False, hoverinfo="skip")
    fig.update_layout(title="Per item: people's accuracy against each model's",
                      xaxis_title="people: share correct", yaxis_title="model: share correct",
                      xaxis_range=[-0.02, 1.02], yaxis_range=[-0.08, 1.08], height=440)
    return fig


def participant_figure(per_participant: pd.DataFrame, observers: pd.DataFrame):
    """Each participant's accuracy (left) and criterion c against d' (right), with every
    model drawn beside them and the participants' mean.

    ``per_participant``: :func:`analysis.participant_sdt.participant_sdt`; ``observers``:
    ``observer, accuracy, d_prime, criterion`` (e.g. ``aot_overall`` on the full set).
    """
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, column_widths=[0.4, 0.6],
                        subplot_titles=["Accuracy per participant", "d' and c per participant"])
    people = per_participant
    fig.add_box(y=100 * people["accuracy"], name="people", boxpoints="all", jitter=0.5,
                pointpos=0, marker={"color": HUMAN_COLOR, "size": 5, "opacity": 0.6},
                line={"color": "#888"}, text=people["subject_id"].astype(str),
                showlegend=False, row=1, col=1)
    fig.add_scatter(x=people["criterion"], y=people["d_prime"], mode="markers",
                    name="participants", marker={"color": HUMAN_COLOR, "size": 6, "opacity": 0.5},
                    text=people["subject_id"].astype(str), row=1, col=2)
    fig.add_scatter(x=[people["criterion"].mean()], y=[people["d_prime"].mean()],
                    mode="markers", name="participants' mean",
                    marker={"color": HUMAN_COLOR, "size": 14, "symbol": "x"}, row=1, col=2)
    models = observers[observers["observer"] != "human"]
    colors = observer_colors(models["observer"].unique())
    for _, row in models.iterrows():
        color, name = colors[row["observer"]], str(row["observer"])
        fig.add_scatter(x=[name], y=[100 * row["accuracy"]], mode="markers", name=name,
                        legendgroup=name, marker={"color": color, "size": 12,
                                                  "symbol": "diamond"}, row=1, col=1)
        fig.add_scatter(x=[row["criterion"]], y=[row["d_prime"]], mode="markers+text",
                        text=[name], textposition="top center", legendgroup=name,
                        showlegend=False, marker={"color": color, "size": 12,
                                                  "symbol": "diamond"}, row=1, col=2)
    fig.add_vline(x=0, line_dash="dot", row=1, col=2)
    fig.update_yaxes(title_text="% correct", row=1, col=1)
    fig.update_xaxes(title_text="criterion c (> 0: forward bias)", row=1, col=2)
    fig.update_yaxes(title_text="d'", row=1, col=2)
    fig.update_layout(title="Per participant, with the models beside them", height=440)
    return fig
