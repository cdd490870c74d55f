"""What a task's trial builder is given to build one participant's session."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from experiments.catalog_records import ClipRecord


@dataclass(frozen=True)
class SessionPlan:
    """One session of one participant, as :mod:`experiments.schedule` has drawn it.

    ``clips`` are the participant's clips; ``study_clips`` every main clip of the study in
    ``clip_key`` order (the rows of a Latin square); ``rotation`` the participant's
    between-subject rotation; ``rng`` the session's own random stream.
    """

    clips: list[ClipRecord]
    study_clips: list[ClipRecord]
    seed: int
    session_number: int
    rotation: int
    rng: np.random.Generator
