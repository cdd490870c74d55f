"""Arrow-of-time trial: a clip, then "forward" or "backward" with one of two keys.

``response`` is "F" or "B" (the browser maps the key through the session's key mapping),
or null after a timeout.  The server adds ``correct_response`` and ``direction``.

Each clip is shown once forward and once reversed over a design's two sessions: session 1
shows half of a participant's clips each way (alternating within categories), session 2
every clip the other way.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from experiments.catalog_records import ClipRecord
from experiments.trial_types.plan import SessionPlan
from experiments.trial_types.video import (
    VIDEO_FIELDS,
    validate_video,
    video_duration_s,
    video_params,
    video_public_view,
    video_row_parts,
)

if TYPE_CHECKING:
    from experiments.designs import Design

NAME = "aot"
TITLE = "arrow-of-time 2AFC"
PARAMETERS = ("fixation_ms",)  # what params the browser is sent (video_params)
FIELDS = VIDEO_FIELDS
ANSWERS = ("F", "B")  # how response and correct_response are coded
DIRECTIONS = ("forward", "backward")
# The report sections that read its rows (analysis.report.registry.SECTIONS)
METRICS = ("aot", "participants", "categories", "pairs", "rt", "accuracy_model",
           "human_vs_model", "tests", "non_response", "tra_sweep", "aot_length", "subjects",
           "benchmark")
MODEL_TASK = "aot"


def validate(payload, trial=None, key_mapping: Mapping | None = None) -> dict:
    return validate_video(payload, NAME, key_mapping)


def check_design(design: Design) -> None:
    if design.sessions not in (1, 2):
        raise ValueError("an arrow-of-time design has one session or two (one per direction)")


def read_conditions(data) -> tuple:
    if data:
        raise ValueError("an arrow-of-time design has no conditions")
    return ()


def usable(design: Design, clip: ClipRecord) -> bool:
    return all(clip.clip(direction) is not None for direction in DIRECTIONS)


def rotations(design: Design) -> int:
    return 1  # no Latin square: every participant sees every clip both ways


def build_trial(design: Design, clip: ClipRecord, direction: str) -> dict:
    stimulus = clip.clip(direction)
    if stimulus is None:  # usable() keeps such clips out of a design
        raise ValueError(f"clip {clip.clip_key!r} has no {direction} stimulus")
    return {"trial_type": NAME, "stimulus_id": stimulus.id, "public_id": stimulus.public_id,
            "source_clip_id": clip.id, "clip_key": clip.clip_key,
            "categories": list(clip.categories), "direction": direction,
            "correct_response": "F" if direction == "forward" else "B",
            "params": video_params(design)}


def practice_trials(design: Design, clips: list[ClipRecord], rng: np.random.Generator) -> list[dict]:
    """Half of the practice clips forward, half reversed, in random order."""
    directions = list(DIRECTIONS) * (len(clips) // 2 + 1)
    trials = [build_trial(design, clip, directions[i]) for i, clip in enumerate(clips)]
    return [trials[i] for i in rng.permutation(len(clips))]


def feedback_answer(scheduled: dict) -> str:
    return scheduled["correct_response"]


def session1_directions(clips: Sequence[ClipRecord], seed: int) -> dict[int, str]:
    """Direction of each clip in session 1: alternating within categories, so both the
    session and every category are half forward, half backward (within one clip)."""
    rng = np.random.default_rng([int(seed), 0])  # the participant's stream (experiments.schedule)
    keys = rng.random(len(clips))
    ordered = sorted(range(len(clips)), key=lambda i: (clips[i].primary_category, keys[i]))
    first = int(rng.integers(2))
    return {clips[i].id: DIRECTIONS[(rank + first) % 2] for rank, i in enumerate(ordered)}


def main_trials(design: Design, plan: SessionPlan) -> list[dict]:
    if design.repeats_per_direction:  # a psychometric design: every clip both ways, n times
        return [build_trial(design, clip, direction) for clip in plan.clips
                for direction in DIRECTIONS for _ in range(design.repeats_per_direction)]
    directions = session1_directions(plan.clips, plan.seed)
    if plan.session_number % 2 == 0:  # even sessions show every clip the other way
        directions = {clip_id: _other(d) for clip_id, d in directions.items()}
    return [build_trial(design, clip, directions[clip.id]) for clip in plan.clips]


def _other(direction: str) -> str:
    return "backward" if direction == "forward" else "forward"


def block_factors(scheduled: dict) -> tuple:
    """Blocks balance categories first, then directions."""
    return tuple(scheduled["categories"][:1]), scheduled["direction"]


def design_trials(design: Design, clips: list[ClipRecord], rng: np.random.Generator) -> list[dict]:
    """Every clip in each direction."""
    return [build_trial(design, clip, direction) for clip in clips for direction in DIRECTIONS]


def public_view(scheduled: dict, media_url) -> dict:
    return video_public_view(scheduled, media_url, NAME)


def row_parts(fields: dict, scheduled: dict) -> dict:
    return video_row_parts(fields, scheduled)


duration_s = video_duration_s
