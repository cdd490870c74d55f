"""Arrow-of-time trial: a clip, then "forward" or "backward" with one of two keys.

``response`` is "F" or "B" (the browser maps the key through the session's key mapping),
or null after a timeout.  The server adds ``correct_response`` and ``direction``.
"""
from experiments.trial_types.video import VIDEO_FIELDS, validate_video

NAME = "aot"
FIELDS = VIDEO_FIELDS


def validate(payload, trial=None) -> dict:
    return validate_video(payload, NAME)
