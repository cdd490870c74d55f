"""What the study page shows: participants, accuracy and RT figures, and the exclusion flow.

Figures are plotly figure dicts (``{"data": [...], "layout": {...}}``) for plotly.js; the
numbers come from the analysis package, on the same canonical trial table the export writes.
"""
import json
from datetime import datetime

import pandas as pd

from analysis import aot, loading, ordering
from analysis.columns import FRAME_ORDER
from webapp.researcher.roster import participant_flow, roster_frame, subject_summary
from webapp.trials import trials_frame

CATCH = "catch"
DIRECTION_COLORS = {"forward": "#1f77b4", "backward": "#d62728"}
_LAYOUT = {"margin": {"l": 60, "r": 20, "t": 40, "b": 80}, "height": 360,
           "paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)"}


def study_panel(slug: str) -> dict:
    """Everything the live part of the study page needs, from one read of each table."""
    participants = roster_frame(slug)
    humans = participants[participants["subject_kind"] == "human"]
    trials = trials_frame(slug)
    trials = loading.normalize_trials(trials[trials["subject_kind"] == "human"])
    kept = loading.included(trials)
    kept = kept[kept["trial_type"] != CATCH]  # attention checks say nothing about the clips
    flow = participant_flow(subject_summary(humans))
    return {
        "participants": participant_rows(humans),
        "status_counts": humans["status"].value_counts().to_dict(),
        "n_trials": len(trials), "n_included": len(kept),
        "flow": flow.to_dict("records"),
        "figures": {
            "clip_accuracy": accuracy_figure(kept, "source_clip_id", "Accuracy per clip"),
            "category_accuracy": accuracy_figure(loading.explode_categories(kept), "category",
                                                 "Accuracy per category"),
            "rt": rt_figure(kept),
            "flow": flow_figure(flow),
        },
    }


def participant_rows(participants: pd.DataFrame) -> list[dict]:
    """Rows for the participants table, most recently seen first."""
    rows = []
    for p in participants.sort_values("last_seen_at", ascending=False).to_dict("records"):
        rows.append({
            "subject_id": p["subject_id"], "session_number": p["session_number"],
            "status": p["status"], "excluded": p["excluded"],
            "exclusion_reasons": p["exclusion_reasons"],
            "progress": f"{p['n_trials_stored']}/{p['n_trials_scheduled']}",
            "progress_fraction": (p["n_trials_stored"] / p["n_trials_scheduled"]
                                  if p["n_trials_scheduled"] else 0.0),
            "started_at": _stamp(p["started_at"]), "last_seen_at": _stamp(p["last_seen_at"]),
        })
    return rows


def _stamp(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if isinstance(value, datetime) else ""


def accuracy_table(trials: pd.DataFrame, by: str) -> pd.DataFrame:
    """Accuracy and trial count per ``by`` value, from the analysis package's metrics.

    Arrow-of-time trials: ``analysis.aot.aot_metrics`` accuracy per ``by`` and direction
    (a timeout is an error). Frame ordering: the exact-order rate of
    ``analysis.ordering.ordering_metrics``, under the direction label "frame order"; an
    unanswered or invalid order is an error too (``analysis.nonresponse``'s default policy).
    Columns: ``by``, ``direction``, ``accuracy``, ``n``.
    """
    parts = []
    arrow = loading.aot_trials(trials)
    if not arrow.empty:
        metrics = aot.aot_metrics(arrow, by=[by, "direction"])
        parts.append(metrics[[by, "direction", "accuracy", "n_trials"]])
    frames = trials[trials["trial_type"] == FRAME_ORDER]
    if not frames.empty:
        metrics = ordering.ordering_metrics(frames, by=[by])
        parts.append(pd.DataFrame({by: metrics[by], "direction": "frame order",
                                   "accuracy": metrics["exact_match"],
                                   "n_trials": metrics["n_trials"]}))
    if not parts:
        return pd.DataFrame(columns=[by, "direction", "accuracy", "n"])
    return pd.concat(parts, ignore_index=True).rename(columns={"n_trials": "n"})


def accuracy_figure(trials: pd.DataFrame, by: str, title: str) -> dict | None:
    table = accuracy_table(trials, by)
    if table.empty:
        return None
    traces = []
    for name, part in table.groupby("direction", sort=False):
        traces.append({
            "type": "bar", "name": name, "x": part[by].astype(str).tolist(),
            "y": _values(part["accuracy"].round(4)), "customdata": _values(part["n"]),
            "hovertemplate": "%{x}: %{y:.0%} of %{customdata} trials<extra>" + name + "</extra>",
            "marker": {"color": DIRECTION_COLORS.get(name, "#7f7f7f")},
        })
    two_choice = (table["direction"] != "frame order").any()  # chance is 50% only for 2AFC
    if (table["direction"] == "frame order").any():
        title += " (frame ordering: exact order)"
    layout = {**_LAYOUT, "title": {"text": title}, "barmode": "group",
              "yaxis": {"title": {"text": "accuracy"}, "range": [0, 1], "tickformat": ".0%"},
              "shapes": [_chance_line()] if two_choice else []}
    return _figure(traces, layout)


def _values(series: pd.Series) -> list:
    """Plain values for JSON, with None (a gap in the plot) where a value is missing."""
    return [None if pd.isna(v) else v for v in series.tolist()]


def _chance_line() -> dict:
    return {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 0.5, "y1": 0.5,
            "line": {"dash": "dot", "color": "#888"}}


def rt_figure(trials: pd.DataFrame) -> dict | None:
    """RT histograms of answered trials, one per direction (or per trial type for ordering)."""
    answered = trials[trials["response"].notna() & trials["rt_ms"].notna()]
    if answered.empty:
        return None
    key = "direction" if answered["direction"].notna().any() else "trial_type"
    traces = [{"type": "histogram", "name": str(name), "x": _values(part["rt_ms"].round(1)),
               "opacity": 0.6, "marker": {"color": DIRECTION_COLORS.get(name, "#2ca02c")}}
              for name, part in answered.groupby(key)]
    layout = {**_LAYOUT, "title": {"text": "Response times"}, "barmode": "overlay",
              "xaxis": {"title": {"text": "RT (ms)"}}, "yaxis": {"title": {"text": "trials"}}}
    return _figure(traces, layout)


def flow_figure(flow: pd.DataFrame) -> dict | None:
    if flow.empty or flow["n_remaining"].iloc[0] == 0:
        return None
    trace = {"type": "funnel", "y": flow["step"].tolist(), "x": flow["n_remaining"].tolist(),
             "customdata": flow["n_removed"].tolist(), "textinfo": "value",
             "hovertemplate": "%{y}: %{customdata} removed, %{x} left<extra></extra>"}
    layout = {**_LAYOUT, "title": {"text": "Participant flow (remaining after each step)"},
              "margin": {**_LAYOUT["margin"], "l": 200}}
    return _figure([trace], layout)


def _figure(data: list, layout: dict) -> dict:
    # A strict JSON round trip leaves only plain types (numpy scalars become numbers) and
    # fails loudly on NaN, which the browser's JSON.parse would reject.
    return json.loads(json.dumps({"data": data, "layout": layout}, default=_number,
                                 allow_nan=False))


def _number(value):
    return value.item() if hasattr(value, "item") else float(value)
