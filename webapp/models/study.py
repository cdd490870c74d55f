from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Boolean, Float, ForeignKey, Integer, String, Text, UniqueConstraint, false, select
from sqlalchemy.orm import Mapped, mapped_column, relationship

from webapp.extensions import Model
from webapp.models._types import JSONType, UTCDateTime, utcnow

if TYPE_CHECKING:  # the class itself is resolved by name through SQLAlchemy's registry
    from webapp.models.stimuli import Stimulus


class Study(Model):
    """A study: one design run on one stimulus set, with a lifecycle."""

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(80), unique=True)
    title: Mapped[str] = mapped_column(String(200))
    design: Mapped[str] = mapped_column(String(80))  # key in experiments.designs
    design_snapshot: Mapped[dict] = mapped_column(JSONType, default=dict)
    stimulus_set: Mapped[str] = mapped_column(String(80))
    status: Mapped[str] = mapped_column(String(20), default="draft")  # draft|open|paused|closed
    # How a closed study treats participants already in it: "finish" (they may complete) or
    # "stop" (their next call ends the session as "stopped"; what is stored is kept).
    close_mode: Mapped[str | None] = mapped_column(String(10))
    # Optional cap on participants (first sessions), as Prolific has places; None: no cap.
    max_participants: Mapped[int | None] = mapped_column(Integer)
    exclusion_rules_version: Mapped[str | None] = mapped_column(String(40))
    # The configuration version participants now get: 1 until the study is changed after it
    # was first opened; every version a participant could run is frozen in StudyVersion.
    config_version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    subjects: Mapped[list["Subject"]] = relationship(back_populates="study")


class StudyVersion(Model):
    """A study's configuration as participants ran it, frozen when the study opened (version
    1) or when an opened study was changed (each change a new version); never updated."""

    __table_args__ = (UniqueConstraint("study_id", "version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("study.id"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    design_snapshot: Mapped[dict] = mapped_column(JSONType)
    stimulus_set: Mapped[str] = mapped_column(String(80))
    max_participants: Mapped[int | None] = mapped_column(Integer)
    created_by: Mapped[str | None] = mapped_column(String(80))  # a username, or None (CLI)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class CellCount(Model):
    """Participants per between-subject cell of a study: first human sessions that did not end
    at consent.  Entry and consent keep it in their write transactions, so assigning the
    least-filled cell reads a few rows instead of every session of the study."""

    study_id: Mapped[int] = mapped_column(ForeignKey("study.id"), primary_key=True)
    cell: Mapped[str] = mapped_column(String(80), primary_key=True)
    participants: Mapped[int] = mapped_column(Integer, default=0)


class Subject(Model):
    """A participant (recruitment id) or a model (model id) within one study."""

    __table_args__ = (UniqueConstraint("study_id", "kind", "external_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("study.id"), index=True)
    kind: Mapped[str] = mapped_column(String(10))  # "human" | "model"
    external_id: Mapped[str] = mapped_column(String(200))
    recruitment: Mapped[dict] = mapped_column(JSONType, default=dict)
    # sha256 hex of the resume key the participant's first browser holds in a cookie
    # (webapp.participant.resume): their entry link resumes only there.  None: a model, or a
    # participant who entered before keys existed (a researcher's resume link gives one).
    resume_key_hash: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    study: Mapped[Study] = relationship(back_populates="subjects")
    sessions: Mapped[list["Session"]] = relationship(back_populates="subject")


def _current_study_version(context) -> int | None:
    """The version of the study a new session enters, read in the inserting transaction (the
    participant path inserts sessions with Core, so this is a column default, not ORM code)."""
    subject_id = context.get_current_parameters().get("subject_id")
    if subject_id is None:
        return None
    subject, study = Subject.__table__, Study.__table__
    return context.connection.scalar(
        select(study.c.config_version).join(subject, subject.c.study_id == study.c.id)
        .where(subject.c.id == subject_id))


class Session(Model):
    """One sitting of a subject (or one model run), with its seeded schedule."""

    __table_args__ = (UniqueConstraint("subject_id", "session_number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    subject_id: Mapped[int] = mapped_column(ForeignKey("subject.id"), index=True)
    token: Mapped[str] = mapped_column(String(64), unique=True)
    session_number: Mapped[int] = mapped_column(Integer, default=1)
    seed: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20), default="started")
    schedule: Mapped[list] = mapped_column(JSONType, default=list)
    condition: Mapped[dict] = mapped_column(JSONType, default=dict)  # key mapping, between factors
    device_info: Mapped[dict] = mapped_column(JSONType, default=dict)
    available_from: Mapped[datetime | None] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    excluded: Mapped[bool] = mapped_column(Boolean, default=False)
    exclusion_reasons: Mapped[list] = mapped_column(JSONType, default=list)
    # Run by the built-in simulated participant (development, tests, researcher previews):
    # excluded by default from every analysis.
    simulated: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The browser tab that holds the session (one at a time; a newer tab takes it over).
    active_client: Mapped[str | None] = mapped_column(String(64))
    # Each time a page took the session up again after another had held it (a reload, a new
    # tab, a researcher's resume link): webapp.participant.sessions.claim.
    resumes: Mapped[list | None] = mapped_column(JSONType, default=list)
    # The study's configuration version this session ran (StudyVersion.version): filled in
    # when the session is stored, from the study it enters.
    study_version: Mapped[int | None] = mapped_column(Integer, default=_current_study_version)
    # A researcher's preview from the dashboard: also simulated; never in exports or reports.
    preview: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    subject: Mapped[Subject] = relationship(back_populates="sessions")
    trials: Mapped[list["Trial"]] = relationship(back_populates="session")


class Trial(Model):
    """One trial in the canonical shape; ``(session_id, client_uuid)`` stores it at most once."""

    __table_args__ = (
        UniqueConstraint("session_id", "client_uuid"),
        UniqueConstraint("session_id", "trial_index"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("session.id"), index=True)
    client_uuid: Mapped[str] = mapped_column(String(36))
    trial_index: Mapped[int] = mapped_column(Integer)
    trial_type: Mapped[str] = mapped_column(String(40))
    block: Mapped[str | None] = mapped_column(String(40))
    stimulus_id: Mapped[int | None] = mapped_column(ForeignKey("stimulus.id"), index=True)
    direction: Mapped[str | None] = mapped_column(String(10))
    correct_response: Mapped[str | None] = mapped_column(Text)
    response: Mapped[str | None] = mapped_column(Text)
    correct: Mapped[bool | None] = mapped_column(Boolean)
    rt_ms: Mapped[float | None] = mapped_column(Float)
    onset_method: Mapped[str | None] = mapped_column(String(40))
    dropped_frames: Mapped[int | None] = mapped_column(Integer)
    excluded: Mapped[bool] = mapped_column(Boolean, default=False)
    exclusion_reasons: Mapped[list] = mapped_column(JSONType, default=list)
    extra: Mapped[dict] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The server's clock when the participant's POST of this trial arrived (None for model
    # runs): what the plausibility rules (experiments/plausibility.py) hold the client to.
    received_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    session: Mapped[Session] = relationship(back_populates="trials")
    stimulus: Mapped["Stimulus"] = relationship()


class MediaServed(Model):
    """When the server first served the media of a session's scheduled position (a clip, or
    any frame of a frame set): a trial whose answer arrived before its media left the server
    was not seen (experiments/plausibility.py).  One row per position, never updated."""

    session_id: Mapped[int] = mapped_column(ForeignKey("session.id"), primary_key=True)
    trial_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    served_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
