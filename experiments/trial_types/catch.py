"""Catch (attention) trial: a video that names the key to press; same fields as aot.

The server knows which key the video names and scores ``response`` against the label
that key has in the participant's key mapping.
"""
from experiments.trial_types.video import VIDEO_FIELDS, validate_video

NAME = "catch"
FIELDS = VIDEO_FIELDS


def validate(payload, trial=None) -> dict:
    return validate_video(payload, NAME)
