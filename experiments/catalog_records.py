"""Plain records of a stimulus catalog, the input of the schedule builder (no database)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class StimulusRecord:
    """One stored stimulus, as schedules and model tasks both read it: ``id`` is the database
    id, ``public_id`` the opaque URL handle.

    The fields after ``meta`` are what a model is shown and told of it: its file, and its
    source clip's rate, length, categories and annotations (a schedule reads those from
    its :class:`ClipRecord`).
    """

    id: int
    public_id: str
    kind: str  # "clip" | "frame_set"
    direction: str | None = None
    frame_indices: tuple[int, ...] | None = None
    meta: Mapping = field(default_factory=dict)
    source_clip_id: int | None = None
    path: str = ""  # absolute: a clip file, or a frame set's folder of PNGs
    sha256: str = ""
    item_id: str | None = None  # a published benchmark item ("00001_rev")
    clip_fps: float = 0.0
    clip_frame_count: int = 0
    categories: tuple[str, ...] = ()
    annotations: Mapping = field(default_factory=dict)  # {"brief": ..., "comprehensive": ...}

    @property
    def span(self) -> str | None:
        """Frame sets: the part of the clip they cover (EGO-FLIGHT's sequence length)."""
        return self.meta.get("span")


def frame_count(stimulus: StimulusRecord) -> int:
    meta = stimulus.meta
    return int(meta.get("n_frames", meta.get("n", len(stimulus.frame_indices or ()))))


@dataclass(frozen=True)
class ClipRecord:
    """One source clip with its stimuli (both directions, frame sets)."""

    id: int
    clip_key: str
    categories: tuple[str, ...]
    stimuli: tuple[StimulusRecord, ...]
    duration_s: float = 3.0
    fps: float = 30.0
    split: str | None = None
    annotation_brief: str | None = None
    annotation_comprehensive: str | None = None
    params: Mapping = field(default_factory=dict)

    @property
    def primary_category(self) -> str:
        return self.categories[0] if self.categories else ""

    def clip(self, direction: str) -> StimulusRecord | None:
        return next((s for s in self.stimuli
                     if s.kind == "clip" and s.direction == direction), None)

    def frame_set(self, n_frames: int, span: str = "medium") -> StimulusRecord | None:
        """The frame set of ``n_frames`` frames over ``span`` (exact match: a set sampled
        over the whole clip without a span never stands in for a condition's span)."""
        return next((s for s in self.stimuli if s.kind == "frame_set"
                     and frame_count(s) == n_frames and s.meta.get("span") == span), None)

    def annotation(self, level: str) -> str | None:
        return {"brief": self.annotation_brief,
                "comprehensive": self.annotation_comprehensive}.get(level)


@dataclass(frozen=True)
class CatchRecord:
    """A catch-trial video that names the key to press (``instructed_key``)."""

    stimulus: StimulusRecord
    instructed_key: str


@dataclass(frozen=True)
class Catalog:
    clips: tuple[ClipRecord, ...]
    catch: tuple[CatchRecord, ...] = ()
