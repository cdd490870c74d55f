"""What the study page shows: participants, accuracy and RT figures, and the exclusion flow.

Every figure is drawn by :mod:`analysis.figures`, the functions the HTML report draws with,
from tables of the analysis package on the same canonical trial table the export writes,
and sent as a plotly figure dict (``{"data": [...], "layout": {...}}``) for plotly.js.
"""
import json
from datetime import datetime

import pandas as pd

from analysis import aot, figures, loading, ordering
from analysis.columns import CATCH, FRAME_ORDER
from webapp.researcher.roster import participant_flow, roster_frame, subject_summary
from webapp.trials import trials_frame

# The page's own look: transparent on the page, plotly.js's defaults rather than the
# report's template (which would add ~7 kB to each figure on every refresh).
PAGE_LAYOUT = {"template": None, "height": 360,
               "margin": {"l": 60, "r": 20, "t": 60, "b": 80},
               "paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)"}


def study_panel(slug: str) -> dict:
    """Everything the live part of the study page needs, from one read of each table."""
    participants = roster_frame(slug)
    humans = participants[participants["subject_kind"] == "human"]
    trials = human_trials(slug)
    kept = counted_trials(trials)
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


def human_trials(slug: str) -> pd.DataFrame:
    """People's trials in the study, as the canonical table the export writes."""
    trials = trials_frame(slug)
    return loading.normalize_trials(trials[trials["subject_kind"] == "human"])


def counted_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """The trials the figures count: main trials of participants not excluded."""
    kept = loading.included(trials)
    return kept[kept["trial_type"] != CATCH]  # attention checks say nothing about the clips


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
    Columns: ``by``, ``direction``, ``accuracy``, ``n_trials``.
    """
    parts = []
    arrow = loading.aot_trials(trials)
    if not arrow.empty:
        metrics = aot.aot_metrics(arrow, by=[by, "direction"])
        parts.append(metrics[[by, "direction", "accuracy", "n_trials"]])
    frames = trials[trials["trial_type"] == FRAME_ORDER]
    if not frames.empty:
        metrics = ordering.ordering_metrics(frames, by=[by])
        parts.append(pd.DataFrame({by: metrics[by], "direction": figures.FRAME_ORDER_LABEL,
                                   "accuracy": metrics["exact_match"],
                                   "n_trials": metrics["n_trials"]}))
    if not parts:
        return pd.DataFrame(columns=[by, "direction", "accuracy", "n_trials"])
    return pd.concat(parts, ignore_index=True)


def accuracy_figure(trials: pd.DataFrame, by: str, title: str) -> dict | None:
    """:func:`analysis.figures.accuracy_figure` of :func:`accuracy_table`; None without trials."""
    table = accuracy_table(trials, by)
    return None if table.empty else _for_page(figures.accuracy_figure(table, by, title))


def rt_figure(trials: pd.DataFrame) -> dict | None:
    """:func:`analysis.figures.rt_figure`; None without an answered trial."""
    figure = figures.rt_figure(trials)
    return _for_page(figure) if figure.data else None


def flow_figure(flow: pd.DataFrame) -> dict | None:
    """:func:`analysis.figures.flow_figure` of the participant flow; None before anyone entered."""
    if flow.empty or flow["n_remaining"].iloc[0] == 0:
        return None
    participants = flow.rename(columns={"n_removed": "n_participants_removed",
                                        "n_remaining": "n_participants_remaining"})
    return _for_page(figures.flow_figure(
        participants, title="Participant flow (remaining after each step)"))


def _for_page(figure) -> dict:
    from plotly.utils import PlotlyJSONEncoder  # here, as in analysis.figures: the app starts light

    figure.update_layout(**PAGE_LAYOUT)
    # Trace and layout dicts rather than figure.to_json(), which packs numbers as base64:
    # plain lists keep the page readable; the encoder writes NaN as null for JSON.parse.
    plain = {"data": [trace.to_plotly_json() for trace in figure.data],
             "layout": figure.layout.to_plotly_json()}
    return json.loads(json.dumps(plain, cls=PlotlyJSONEncoder))
