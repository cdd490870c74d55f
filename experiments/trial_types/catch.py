"""Catch (attention) trial: a video that names the key to press; same fields as aot.

The browser runs it as an arrow-of-time trial (``PRESENTED_AS``), so nothing it is sent tells
which trials check attention; only the video itself says which key to press.  The server
knows that key and scores ``response`` against the label it has in the participant's mapping.

Catch trials belong to no design's task: the schedule adds them to the main blocks of any
design whose catalog has a catch video for each of its response keys, and shows only those
(``schedule.catch_pool``).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from experiments.catalog_records import CatchRecord
from experiments.trial_types import aot
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

NAME = "catch"
TITLE = "attention check"
PRESENTED_AS = aot.NAME
PARAMETERS = aot.PARAMETERS  # the same as aot's, or the params would give catch trials away
FIELDS = VIDEO_FIELDS
ANSWERS = aot.ANSWERS
DIRECTIONS = ("forward",)  # the video is played as recorded
METRICS = ("exclusions",)  # the attention checks' step of the exclusion flow
MODEL_TASK = None  # models are not checked for attention


def validate(payload, trial=None, key_mapping: Mapping | None = None) -> dict:
    return validate_video(payload, PRESENTED_AS, key_mapping)


def build_trial(design: Design, record: CatchRecord, key_mapping: Mapping) -> dict:
    """A catch trial whose answer is the label of the instructed key in ``key_mapping``."""
    stimulus = record.stimulus
    return {"trial_type": NAME, "stimulus_id": stimulus.id, "public_id": stimulus.public_id,
            "source_clip_id": None, "clip_key": None, "categories": [], "direction": "forward",
            "correct_response": key_mapping[record.instructed_key],
            "instructed_key": record.instructed_key, "params": video_params(design)}


def public_view(scheduled: dict, media_url) -> dict:
    return video_public_view(scheduled, media_url, PRESENTED_AS)


def row_parts(fields: dict, scheduled: dict) -> dict:
    parts = video_row_parts(fields, scheduled)
    parts["extra"]["instructed_key"] = scheduled["instructed_key"]
    return parts


duration_s = video_duration_s
