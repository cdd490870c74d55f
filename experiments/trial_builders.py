"""Builders of single scheduled trials (a plain dict each) for :mod:`experiments.schedule`.

Server-only keys: ``stimulus_id``, ``source_clip_id``, ``direction``, ``correct_response``,
``frames`` (the chronological index of the frame at each presented slot), ``condition``,
``hint_labels``, ``instructed_key``.  ``params`` is what the browser may see.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from experiments.catalog_records import CatchRecord, ClipRecord
from experiments.designs import Design, OrderingCondition


def video_params(design: Design) -> dict:
    """What the browser is told of a video trial: the same for every video trial of a study.
    A clip's length (and so its response window) comes from the video itself, so that the
    schedule cannot tell catch videos from the study's clips by their duration."""
    return {"fixation_ms": design.fixation_ms}


def aot_trial(design: Design, clip: ClipRecord, direction: str) -> dict:
    stimulus = clip.clip(direction)
    return {"trial_type": "aot", "stimulus_id": stimulus.id, "public_id": stimulus.public_id,
            "source_clip_id": clip.id, "clip_key": clip.clip_key,
            "categories": list(clip.categories), "direction": direction,
            "correct_response": "F" if direction == "forward" else "B",
            "params": video_params(design)}


def catch_trial(design: Design, record: CatchRecord, key_mapping: Mapping) -> dict:
    stimulus = record.stimulus
    return {"trial_type": "catch", "stimulus_id": stimulus.id, "public_id": stimulus.public_id,
            "source_clip_id": None, "clip_key": None, "categories": [], "direction": "forward",
            "correct_response": key_mapping[record.instructed_key],
            "instructed_key": record.instructed_key, "params": video_params(design)}


def presented_frames(condition: OrderingCondition, rng: np.random.Generator) -> list[int]:
    """Chronological index of the frame at each presented slot (label).

    Hint frames sit at their true slot; the others are a uniformly random permutation of
    the remaining frames (the identity included: excluding it would let 2-frame trials be
    solved by always swapping).
    """
    free = [i for i in range(condition.n_frames) if i not in condition.hint_positions]
    shuffled = iter(rng.permutation(free).tolist())
    return [i if i in condition.hint_positions else next(shuffled) for i in range(condition.n_frames)]


def ordering_trial(design: Design, clip: ClipRecord, condition: OrderingCondition,
                   rng: np.random.Generator) -> dict:
    stimulus = clip.frame_set(condition.n_frames, condition.span)
    frames = presented_frames(condition, rng)
    # Analysis labels frames by presented slot, 1-based, listed in true time order.
    correct = [frames.index(t) + 1 for t in range(condition.n_frames)]
    return {"trial_type": "frame_order", "stimulus_id": stimulus.id,
            "public_id": stimulus.public_id, "source_clip_id": clip.id,
            "clip_key": clip.clip_key, "categories": list(clip.categories),
            "direction": "forward", "correct_response": json.dumps(correct), "frames": frames,
            "condition": condition.name, "span": condition.span,
            "annotation_level": condition.annotation,
            "hint_labels": [h + 1 for h in condition.hint_positions],
            "params": {"n_frames": condition.n_frames,
                       "presented_order": list(range(condition.n_frames)),
                       "hint_positions": list(condition.hint_positions),
                       "annotation": clip.annotation(condition.annotation),
                       "condition": condition.name, "max_response_ms": design.max_ordering_ms}}


def practice_condition(design: Design) -> OrderingCondition:
    base = next((c for c in design.conditions if c.n_frames == 2), None) or design.conditions[0]
    return OrderingCondition("practice", n_frames=base.n_frames, span="medium", annotation="brief")
