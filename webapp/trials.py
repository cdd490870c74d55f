"""The canonical trial table: one row per trial, humans and models alike (ARCHITECTURE.md)."""
import pandas as pd
from sqlalchemy import Select, select

from analysis.columns import TRIAL_COLUMNS
from experiments import verdict
from webapp.extensions import db
from webapp.models import Session, SourceClip, Stimulus, Study, Subject, Trial

CANONICAL_COLUMNS = list(TRIAL_COLUMNS)
# The trial table as exported: the canonical columns, then the server's receive time of each
# participant's trial (ISO 8601 UTC; empty for model runs and for trials stored before it
# was kept), which analysis reads as an extra column.
EXPORT_COLUMNS = [*CANONICAL_COLUMNS, "received_at"]


def canonical_query(experiment_slug: str | None = None) -> Select:
    """One SELECT for the whole table, so a read sees one consistent snapshot."""
    query = (
        select(
            Subject.external_id.label("subject_id"),
            Subject.kind.label("subject_kind"),
            Session.id.label("session_id"),
            Session.status.label("session_status"), Session.session_number,
            Study.slug.label("experiment"),
            Trial.trial_index, Trial.trial_type, Trial.block,
            Stimulus.public_id.label("stimulus_id"),
            SourceClip.clip_key.label("source_clip_id"),
            SourceClip.categories,
            Trial.direction, Trial.correct_response, Trial.response, Trial.correct,
            Trial.rt_ms, Trial.onset_method, Trial.dropped_frames,
            Trial.excluded, Trial.exclusion_reasons, Trial.extra, Trial.received_at,
            Session.excluded.label("session_excluded"),
            Session.exclusion_reasons.label("session_exclusion_reasons"),
            Session.simulated.label("session_simulated"),
        )
        .join(Trial.session).join(Session.subject).join(Subject.study)
        .outerjoin(Trial.stimulus).outerjoin(Stimulus.source_clip)
        .order_by(Study.slug, Subject.kind, Subject.external_id, Session.id, Trial.trial_index)
    )
    if experiment_slug is not None:
        query = query.where(Study.slug == experiment_slug)
    return query


def trials_frame(experiment_slug: str | None = None) -> pd.DataFrame:
    """The exported trial table (:data:`EXPORT_COLUMNS`) of one study (or all), with
    exclusions merged.

    A trial is excluded when its own rules or its session's participant-level verdict
    (:func:`experiments.verdict.read`) say so; ``exclusion_reasons`` lists both, trial
    reasons first.
    """
    rows = db.session.execute(canonical_query(experiment_slug)).mappings().all()
    session_columns = ["session_excluded", "session_exclusion_reasons", "session_simulated"]
    frame = pd.DataFrame(rows, columns=[*EXPORT_COLUMNS, *session_columns])
    frame["categories"] = frame["categories"].map(lambda c: list(c or []))
    verdicts = [verdict.read(excluded, reasons, simulated=simulated)
                for excluded, reasons, simulated in zip(*(frame[c] for c in session_columns))]
    frame["exclusion_reasons"] = [
        list(trial or []) + [r for r in session if r not in (trial or [])]
        for trial, (_, session) in zip(frame["exclusion_reasons"], verdicts)
    ]
    frame["excluded"] = frame["excluded"].astype(bool) | pd.Series(
        [excluded for excluded, _ in verdicts], index=frame.index, dtype=bool)
    frame["extra"] = frame["extra"].map(lambda e: dict(e or {}))
    return frame[EXPORT_COLUMNS]
