"""What the study page shows: participants, accuracy and RT figures, and the exclusion flow;
the figures are those the report registry's tables name as shown live.

Every figure is drawn by :mod:`analysis.figures`, the functions the HTML report draws with,
from tables of the analysis package on the same canonical trial table the export writes,
and sent as a plotly figure dict (``{"data": [...], "layout": {...}}``) for plotly.js.
"""
import json
from collections.abc import Callable

import pandas as pd

from analysis import aot, figures, loading, nonresponse, ordering, participant_sdt, rt
from analysis.columns import AOT, CATCH, FRAME_ORDER, PRACTICE_BLOCK
from analysis.exclusions import apply_manual_rules
from analysis.report import registry
from experiments.exclusions import is_technical
from experiments.trial_types import TRIAL_TYPES
from experiments.verdict import REINSTATE
from webapp.participant.texts import study_settings
from webapp.researcher.participant_table import METRIC_COLUMNS, participant_rows
from webapp.researcher.prolific import prolific_review
from webapp.researcher.roster import participant_flow, roster_frame, study_trials, subject_summary
from webapp.researcher.studies import require_study, time_zone

# The page's own look: transparent on the page, plotly.js's defaults rather than the
# report's template (which would add ~7 kB to each figure on every refresh).
PAGE_HEIGHT = 360
PAGE_MARGIN = {"l": 60, "r": 20, "t": 60, "b": 80}
PAGE_LAYOUT = {"template": None, "height": PAGE_HEIGHT, "margin": PAGE_MARGIN,
               "paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)"}


# Width of a tick label's character at plotly.js's default 12 px font (a little generous).
LABEL_PX_PER_CHAR = 7.5


def study_panel(slug: str) -> dict:
    """Everything the live part of the study page needs, from one read of each table."""
    study = require_study(slug)
    zone = time_zone(study)
    participants = roster_frame(slug)
    humans = participants[participants["subject_kind"] == "human"]
    trials = human_trials(slug)
    kept = counted_trials(trials)
    flow = participant_flow(subject_summary(humans))
    return {
        "participants": participant_rows(humans, participant_metrics(trials),
                                         prolific_review(humans), zone),
        "status_counts": humans["status"].value_counts().to_dict(),
        # Prolific's approve/reject column is shown for a Prolific study only.
        "platform": study_settings(study.design_snapshot)["platform"],
        "n_trials": len(trials), "n_included": len(kept),
        "flow": flow.to_dict("records"),
        "figures": live_figures(kept, flow),
    }


# The page's figures in the page's order, under the names the report registry's tables give
# as ``live`` (analysis/report/registry.py): the page draws those some table names, so the
# registry decides what is shown. Each draws from the counted trials and the participant flow.
LIVE_FIGURES: dict[str, Callable[[pd.DataFrame, pd.DataFrame], dict | None]] = {
    "flow": lambda kept, flow: flow_figure(flow),
    "clip_accuracy": lambda kept, flow: accuracy_figure(kept, "source_clip_id",
                                                        "Accuracy per clip"),
    "category_accuracy": lambda kept, flow: accuracy_figure(
        loading.explode_categories(kept), "category", "Accuracy per category"),
    "rt": lambda kept, flow: rt_figure(kept),
}


def live_figures(kept: pd.DataFrame, flow: pd.DataFrame) -> dict:
    """Name -> figure (None when there is nothing to draw yet) of each of
    :data:`LIVE_FIGURES` that a registered table names as its ``live``."""
    shown = {table.live for table in registry.TABLES}
    return {name: draw(kept, flow) for name, draw in LIVE_FIGURES.items() if name in shown}


def human_trials(slug: str) -> pd.DataFrame:
    """People's trials in the study, as the canonical table the export writes."""
    trials = study_trials(slug)
    return loading.normalize_trials(trials[trials["subject_kind"] == "human"])


def counted_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """The trials the figures count: main trials of participants not excluded."""
    kept = loading.included(trials)
    return kept[kept["trial_type"] != CATCH]  # attention checks say nothing about the clips




def participant_metrics(trials: pd.DataFrame, session: str = "session_id") -> pd.DataFrame:
    """What the participants table shows of each session's main trials (practice left out).

    ``accuracy`` and ``median_rt_ms`` are the report's own numbers for the participant as
    if they were kept: participant-level reasons lifted
    (:func:`analysis.exclusions.apply_manual_rules` with a reinstatement), then
    :func:`analysis.nonresponse.included` (a timeout is an error),
    :func:`analysis.participant_sdt.participant_sdt` and :func:`analysis.rt.median_rt`. A
    frame-ordering session's accuracy is its exact-order rate
    (:func:`analysis.ordering.ordering_metrics`); a session of another trial type, its share
    of correct answers (:func:`share_correct`). ``catch_accuracy``: share of attention
    checks answered as instructed, technical trials left out, as the catch rules count.
    Counts: trials timed out (reason ``timeout``), trials with focus lost or fullscreen
    exited, and clip frames dropped. Index: ``session``; columns :data:`METRIC_COLUMNS`.
    """
    main = trials[trials["block"] != PRACTICE_BLOCK]
    out = pd.DataFrame(index=pd.Index(main[session].unique(), name=session),
                       columns=list(METRIC_COLUMNS), dtype=float)
    if main.empty:
        return out
    everyone = pd.DataFrame({"subject_id": main["subject_id"].unique(), "manual_action": REINSTATE})
    counted = nonresponse.included(apply_manual_rules(main, everyone))
    arrow = loading.aot_trials(counted)
    if not arrow.empty:
        out["accuracy"] = participant_sdt.participant_sdt(arrow, subject=session) \
            .set_index(session)["accuracy"]
        out["median_rt_ms"] = _median_rt(arrow, session)
    frames = counted[counted["trial_type"] == FRAME_ORDER]
    if not frames.empty:
        exact = ordering.ordering_metrics(frames, by=[session]).set_index(session)["exact_match"]
        out["accuracy"] = out["accuracy"].fillna(exact)
    others = other_type_trials(counted)
    if not others.empty:
        share = share_correct(others, [session]).set_index(session)["accuracy"]
        out["accuracy"] = out["accuracy"].fillna(share)
    technical = main["extra"].map(lambda e: is_technical({"extra": e})).astype(bool)
    catch = main[(main["trial_type"] == CATCH) & ~technical]
    if not catch.empty:
        # Share answered as instructed, a timeout wrong: the catch rules' own count
        # (experiments.exclusions), which the analysis package has no function for.
        out["catch_accuracy"] = catch["correct"].fillna(False).astype(float) \
            .groupby(catch[session]).mean()
    flags = main["extra"].map(lambda e: (bool(e.get("focus_lost")),
                                         bool(e.get("fullscreen_exited"))))
    by = main[session]
    out["n_timeouts"] = main["exclusion_reasons"].map(lambda r: "timeout" in r).groupby(by).sum()
    out["n_focus_lost"] = flags.str[0].groupby(by).sum()
    # Each presentation that left fullscreen: the stored one's flag, and every earlier one
    # lost and offered again (technical_events), which the flag alone never counted.
    exits = flags.str[1].astype(int) + main["extra"].map(
        lambda e: len(e.get("technical_events") or []))
    out["n_fullscreen_exits"] = exits.groupby(by).sum()
    out["n_dropped_frames"] = main["dropped_frames"].fillna(0).groupby(by).sum()
    return out


# Types with a metric of their own on this page, and the attention checks, shown apart.
_OWN_METRICS = (AOT, FRAME_ORDER, CATCH)


def other_type_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Rows of registered trial types without a metric of their own on this page."""
    return trials[trials["trial_type"].isin([t for t in TRIAL_TYPES if t not in _OWN_METRICS])]


def share_correct(trials: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Share of correct answers per ``by`` and trial type, a timeout an error (as
    :func:`analysis.nonresponse.included` counts it). Columns: ``by``, ``trial_type``,
    ``accuracy``, ``n_trials``."""
    correct = trials["correct"].astype(float).fillna(0.0)
    grouped = correct.groupby([trials[c] for c in [*by, "trial_type"]], observed=True)
    return grouped.agg(accuracy="mean", n_trials="size").reset_index()


def _median_rt(arrow: pd.DataFrame, session: str) -> pd.Series:
    """:func:`analysis.rt.median_rt` per session; a session timed by two onset methods
    (never pooled) shows the median of the method that timed most of its trials."""
    table = rt.median_rt(arrow, by=session)
    return table.sort_values("n", kind="stable").groupby(session)["median_rt_ms"].last()


def accuracy_table(trials: pd.DataFrame, by: str) -> pd.DataFrame:
    """Accuracy and trial count per ``by`` value, from the analysis package's metrics.

    Arrow-of-time trials: ``analysis.aot.aot_metrics`` accuracy per ``by`` and direction
    (a timeout is an error). Frame ordering: the exact-order rate of
    ``analysis.ordering.ordering_metrics``, under the direction label "frame order"; an
    unanswered or invalid order is an error too (``analysis.nonresponse``'s default policy).
    Any other registered type: :func:`share_correct`, under its ``TITLE``.
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
    others = other_type_trials(trials)
    if not others.empty:
        metrics = share_correct(others, [by])
        titles = metrics["trial_type"].map(lambda name: TRIAL_TYPES[name].TITLE)
        parts.append(metrics.assign(direction=titles)[[by, "direction", "accuracy", "n_trials"]])
    if not parts:
        return pd.DataFrame(columns=[by, "direction", "accuracy", "n_trials"])
    return pd.concat(parts, ignore_index=True)


def accuracy_figure(trials: pd.DataFrame, by: str, title: str) -> dict | None:
    """:func:`analysis.figures.accuracy_figure` of :func:`accuracy_table`; None without trials."""
    table = accuracy_table(trials, by)
    if table.empty:
        return None
    page = _for_page(figures.accuracy_figure(table, by, title))
    return _full_labels(page, table[by].astype(str))


def _full_labels(page: dict, labels: pd.Series) -> dict:
    """Room under the bars for every label in full: the page's fixed margin cut long clip
    keys off. Labels are slanted, the margin grows with the longest one, and the plot keeps
    its height by making the figure taller."""
    longest = int(labels.str.len().max())
    below = max(PAGE_MARGIN["b"], 30 + round(longest * LABEL_PX_PER_CHAR * 0.71))
    layout = page["layout"]
    layout["xaxis"] = {**layout.get("xaxis", {}), "automargin": True, "tickangle": -45,
                       "type": "category"}
    layout["margin"] = {**layout["margin"], "b": below}
    layout["height"] = PAGE_HEIGHT + below - PAGE_MARGIN["b"]
    return page


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
