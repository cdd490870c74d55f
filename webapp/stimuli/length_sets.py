"""A clip-length set from a stored set: every main clip cut to the n frames around its middle
at each level (:mod:`experiments.length_sweep`), plus full-length practice clips, stored as a
new set. The practice clips are never clips that are cut: practice feedback tells a practice
clip's true direction, which would tell every cut's of it.

A new set, never clips added to the source set: a running study's schedules read its whole
set, and cuts added to it would become main clips of designs that do not exclude them.
"""
from __future__ import annotations

import difflib
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments import length_sweep
from experiments.catalog_records import ClipRecord
from experiments.stimuli import ClipSpec
from experiments.synthetic import TRA_SPLIT
from webapp.extensions import db
from webapp.models import SourceClip
from webapp.stimuli import catalog

PRACTICE = "practice"
NOT_SOURCES = (PRACTICE, "catch", TRA_SPLIT, length_sweep.SPLIT)


def _spec(clip: ClipRecord, split: str | None) -> ClipSpec:
    forward = clip.clip("forward")
    if forward is None:
        raise ValueError(f"clip {clip.clip_key!r} has no forward video to cut")
    return ClipSpec(clip.clip_key, Path(forward.path), list(clip.categories),
                    annotation_brief=clip.annotation_brief,
                    annotation_comprehensive=clip.annotation_comprehensive, split=split)


def import_length_set(source_set: str, stimulus_set: str, levels: Sequence[int], root: Path,
                      n_practice: int = 4,
                      rng: np.random.Generator | None = None) -> list[SourceClip]:
    """Store set ``stimulus_set``: the cuts of ``source_set``'s main clips at ``levels`` and
    its practice clips (its own split ``practice``, else its last ``n_practice`` main clips by
    key, which are then not cut). ``rng`` draws where off-centre cuts lie; fresh entropy by
    default, as nobody may foresee it (each cut's ``first_frame`` is stored). Raises
    ValueError naming what is wrong."""
    rng = np.random.default_rng() if rng is None else rng
    stored = catalog.stimulus_sets()
    if stimulus_set in stored:
        raise ValueError(f"stimulus set {stimulus_set!r} is already stored; give a new name")
    if source_set not in stored:
        close = difflib.get_close_matches(source_set, stored, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"no such stimulus set {source_set!r}{hint}; stored: "
                         f"{', '.join(sorted(stored)) or 'none'}")
    clips = catalog.clip_records(db.session.connection(), source_set)
    sources = [c for c in clips if c.split not in NOT_SOURCES]
    practice = [c for c in clips if c.split == PRACTICE]
    if not practice and n_practice:
        sources, practice = sources[:-n_practice], sources[-n_practice:]
    if len(sources) < 1:
        raise ValueError(f"stimulus set {source_set!r} has no main clips to cut "
                         f"({len(clips)} clips, {len(practice)} kept for practice)")
    with tempfile.TemporaryDirectory() as folder:
        specs = [_spec(c, PRACTICE) for c in practice]
        for clip in sources:
            specs += length_sweep.length_specs(_spec(clip, None), levels, Path(folder), rng)
        return catalog.import_clips(specs, stimulus_set, root, frame_set_sizes=())
