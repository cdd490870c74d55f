from datetime import datetime

from sqlalchemy import Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from webapp.extensions import Model
from webapp.models._types import JSONType, UTCDateTime, utcnow


class SourceClip(Model):
    """One source video of a stimulus set, with its multi-label categories and annotations."""

    __table_args__ = (UniqueConstraint("stimulus_set", "clip_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    stimulus_set: Mapped[str] = mapped_column(String(80), index=True)
    clip_key: Mapped[str] = mapped_column(String(160))
    categories: Mapped[list] = mapped_column(JSONType, default=list)
    annotation_brief: Mapped[str | None] = mapped_column(Text)
    annotation_comprehensive: Mapped[str | None] = mapped_column(Text)
    split: Mapped[str | None] = mapped_column(String(40))
    # Generator parameters, benchmark metadata, original path ...
    params: Mapped[dict] = mapped_column(JSONType, default=dict)
    duration_s: Mapped[float] = mapped_column(Float)
    fps: Mapped[float] = mapped_column(Float)
    frame_count: Mapped[int] = mapped_column(Integer)
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    stimuli: Mapped[list["Stimulus"]] = relationship(back_populates="source_clip")


class Stimulus(Model):
    """An immutable, hashed artefact shown on a trial: a clip in one direction, or a frame set.

    ``path`` is relative to the stimulus root; ``public_id`` is the opaque handle used in URLs.
    """

    id: Mapped[int] = mapped_column(primary_key=True)
    public_id: Mapped[str] = mapped_column(String(40), unique=True)
    source_clip_id: Mapped[int] = mapped_column(ForeignKey("source_clip.id"), index=True)
    kind: Mapped[str] = mapped_column(String(20))  # "clip" | "frame_set"
    direction: Mapped[str | None] = mapped_column(String(10))  # "forward" | "backward" for clips
    frame_indices: Mapped[list | None] = mapped_column(JSONType)
    path: Mapped[str] = mapped_column(String(400))
    sha256: Mapped[str] = mapped_column(String(64))
    # Published benchmark item id (e.g. "00001_rev"), so a result row traces to its item.
    item_id: Mapped[str | None] = mapped_column(String(80), index=True)
    meta: Mapped[dict] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    source_clip: Mapped[SourceClip] = relationship(back_populates="stimuli")
