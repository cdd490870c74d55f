"""Still-frame trial (a toy type): one frame of a clip, answered F or B, no playback
direction.  It shows the first frame of the clip's forward file and asks a question."""
from __future__ import annotations

from collections.abc import Mapping

from experiments.trial_types.video import (
    VIDEO_FIELDS,
    validate_video,
    video_params,
    video_public_view,
    video_row_parts,
)

NAME = "still"
TITLE = "still frame 2AFC"
PARAMETERS = ("fixation_ms",)
FIELDS = VIDEO_FIELDS
ANSWERS = ("F", "B")
DIRECTIONS: tuple[str, ...] = ()
METRICS = ("exclusions",)
MODEL_TASK = None


def validate(payload, trial=None, key_mapping: Mapping | None = None) -> dict:
    return validate_video(payload, NAME, key_mapping)


def build_trial(design, clip) -> dict:
    stimulus = clip.clip("forward")  # its first frame stands for the still
    return {"trial_type": NAME, "stimulus_id": stimulus.id, "public_id": stimulus.public_id,
            "source_clip_id": clip.id, "clip_key": clip.clip_key,
            "categories": list(clip.categories), "direction": None,
            "correct_response": "F" if clip.id % 2 else "B",
            "params": {**video_params(design), "server_only": clip.clip_key}}


def public_view(scheduled, media_url) -> dict:
    return video_public_view(scheduled, media_url, NAME)


def row_parts(fields: dict, scheduled: dict) -> dict:
    return video_row_parts(fields, scheduled)


def duration_s(design, clip_s: float) -> float:
    return design.fixation_ms / 1000 + 1.0


# A design's task also builds whole sessions:
def check_design(design) -> None:
    return None


def read_conditions(data) -> tuple:
    return ()


def usable(design, clip) -> bool:
    return clip.clip("forward") is not None


def rotations(design) -> int:
    return 1


def practice_trials(design, clips, rng) -> list[dict]:
    return [build_trial(design, clip) for clip in clips]


def feedback_answer(scheduled: dict) -> str:
    return scheduled["correct_response"]


def main_trials(design, plan) -> list[dict]:
    return [build_trial(design, clip) for clip in plan.clips]


def block_factors(scheduled: dict) -> tuple:
    return tuple(scheduled["categories"][:1]), ""


def design_trials(design, clips, rng) -> list[dict]:
    return [build_trial(design, clip) for clip in clips]
