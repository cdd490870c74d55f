"""Catch (attention) trial: a video that names the key to press; same fields as aot.

The browser runs it as an arrow-of-time trial (``PRESENTED_AS``), so nothing it is sent tells
which trials check attention; only the video itself says which key to press.  The server
knows that key and scores ``response`` against the label it has in the participant's mapping.
"""
from experiments.trial_types import aot
from experiments.trial_types.video import VIDEO_FIELDS, validate_video

NAME = "catch"
PRESENTED_AS = aot.NAME
FIELDS = VIDEO_FIELDS


def validate(payload, trial=None) -> dict:
    return validate_video(payload, PRESENTED_AS)
