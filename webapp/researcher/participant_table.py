"""The study page's participants table: one row per session, with what a researcher reviews.

Times are shown in UTC and, for a study with a time zone of its own, in it too. The verdict
says what the session is to the analysis: an unfinished or declined session is not
"included" (it has no data to include), whatever its stored exclusion flag.
"""
from datetime import datetime

import pandas as pd

from experiments import verdict
from webapp.researcher.export_tables import local_time

METRIC_COLUMNS = ("accuracy", "catch_accuracy", "median_rt_ms", "n_timeouts", "n_focus_lost",
                  "n_fullscreen_exits", "n_dropped_frames")
# What the verdict column says of a session that is neither included nor excluded.
UNJUDGED = {verdict.NO_CONSENT: "declined consent", verdict.STARTED: "not finished",
            verdict.IN_PROGRESS: "not finished"}


def participant_rows(participants: pd.DataFrame, metrics: pd.DataFrame | None = None,
                     decisions: dict | None = None, zone: str = "UTC") -> list[dict]:
    """Rows for the participants table, most recently seen first; ``decisions``: the
    Prolific decision and reason of each participant with one
    (:func:`webapp.researcher.prolific.prolific_review`); ``zone``: the study's time zone."""
    if metrics is None:
        metrics = pd.DataFrame(columns=list(METRIC_COLUMNS), dtype=float)
    # The trial table may carry session ids as text (analysis.loading); the roster as ints.
    metrics = metrics.set_axis(metrics.index.map(str))
    rows = []
    for p in participants.sort_values("last_seen_at", ascending=False).to_dict("records"):
        key = str(p["session_id"])
        m = metrics.loc[key] if key in metrics.index else {}
        rows.append({
            "subject_id": p["subject_id"], "session_id": p["session_id"],
            "session_number": p["session_number"],
            "status": p["status"], "excluded": p["excluded"],
            "exclusion_reasons": p["exclusion_reasons"],
            "verdict": verdict_label(p["status"], bool(p["excluded"])),
            "manual_action": p.get("manual_action", ""),
            "manual_reason": p.get("manual_reason", ""),
            "prolific": (decisions or {}).get(p["subject_id"]),
            "progress": f"{p['n_trials_stored']}/{p['n_trials_scheduled']}",
            "progress_fraction": (p["n_trials_stored"] / p["n_trials_scheduled"]
                                  if p["n_trials_scheduled"] else 0.0),
            "started_at": stamp(p["started_at"], zone),
            "last_seen_at": stamp(p["last_seen_at"], zone),
            "timing_quality": _number(p.get("timing_quality")),
            **{name: _number(m.get(name)) for name in METRIC_COLUMNS},
        })
    return rows


def verdict_label(status: str, excluded: bool) -> str:
    """"included", "excluded" or what an unjudged session is (:data:`UNJUDGED`)."""
    if excluded:
        return "excluded"
    return UNJUDGED.get(status, "included")


def stamp(value, zone: str = "UTC") -> str:
    """A moment in UTC, and in ``zone`` beside it unless that is UTC."""
    if not isinstance(value, datetime):
        return ""
    shown = value.strftime("%Y-%m-%d %H:%M:%S UTC")
    return shown if zone == "UTC" else f"{shown} ({local_time(value, zone)})"


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)
