"""The frame-ordering figures: Kendall tau-b and exact match by condition, by presented
position and disorder, and one panel per factor of the EGO-FLIGHT conditions."""
from __future__ import annotations

import pandas as pd

from analysis.figures import error_bars, observer_colors


def ordering_figure(table: pd.DataFrame, by: str, title: str):
    """Kendall tau-b and exact match per ``by`` value, one line per observer."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=["Kendall tau-b", "Exact match"])
    colors = observer_colors(table["observer"].unique())
    for observer, part in table.groupby("observer", sort=False):
        for col, metric in ((1, "kendall_tau"), (2, "exact_match")):
            fig.add_scatter(x=part[by].astype(str), y=part[metric], mode="lines+markers",
                            name=str(observer), legendgroup=str(observer),
                            line_color=colors[observer], showlegend=col == 1, row=1, col=col)
    fig.update_yaxes(range=[-1.05, 1.05], row=1, col=1)
    fig.update_yaxes(range=[-0.02, 1.02], row=1, col=2)
    fig.update_layout(title=title, height=380)
    return fig


FACTOR_TITLES = {"frames": "Number of frames", "span": "Temporal span",
                 "annotation": "Annotation", "hints": "Hints"}


def ordering_factor_figure(table: pd.DataFrame, metric: str = "kendall_tau"):
    """One panel per factor of the ordering conditions (levels on x, the original
    condition marked in each), one point with its CI per observer and level.

    ``table``: :func:`analysis.ordering_factors.ordering_by_factor`.
    """
    from plotly.subplots import make_subplots

    factors = list(dict.fromkeys(table["factor"]))
    fig = make_subplots(rows=1, cols=len(factors), shared_yaxes=True,
                        subplot_titles=[FACTOR_TITLES.get(f, f) for f in factors])
    colors = observer_colors(table["observer"].unique())
    level = table["level"].astype(str).where(~table["original"].astype(bool),
                                             table["level"].astype(str) + " (original)")
    for col, factor in enumerate(factors, start=1):
        for observer, part in table[table["factor"] == factor].groupby("observer", sort=False):
            fig.add_scatter(x=level[part.index], y=part[metric], mode="lines+markers",
                            name=str(observer), legendgroup=str(observer),
                            line_color=colors[observer], showlegend=col == 1,
                            error_y=error_bars(part, metric, scale=1.0), row=1, col=col)
    label = metric.replace("_", " ")
    fig.update_yaxes(title_text=f"{label} (95% CI)", row=1, col=1)
    fig.update_layout(title=f"Frame ordering by factor: {label}, each condition varies one "
                            "factor from the original", height=400)
    return fig
