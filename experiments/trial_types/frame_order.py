"""Frame-ordering trial: N shuffled frames put in time order by drag or keyboard.

Orders are lists of frame labels (0-based indices into the trial's ``stimulus.frames``)
slot by slot, earliest first.  ``moves`` records every move.  With the scheduled trial
given, both orders must be permutations of its labels and hint frames must not move.

A design's conditions (:class:`OrderingCondition`) are this type's parameters.  Each
participant sees every clip once, in one condition; which clip goes with which condition
rotates across participants (a Latin square over the study's clips).  Frame orders have no
playback direction: ``direction`` is empty on their rows.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from experiments.catalog_records import ClipRecord
from experiments.trial_types.base import (
    COMMON_FIELDS,
    MAX_MS,
    Field,
    PayloadError,
    check_fields,
    check_ignored_inputs,
    check_technical_events,
    ignored_inputs_field,
)
from experiments.trial_types.plan import SessionPlan

if TYPE_CHECKING:
    from experiments.designs import Design

NAME = "frame_order"
TITLE = "frame ordering"
MAX_FRAMES = 16
SPANS = ("short", "medium", "long")
ANNOTATIONS = ("none", "brief", "comprehensive")
# What params the browser is sent (see build_trial()).
PARAMETERS = ("n_frames", "presented_order", "hint_positions", "annotation", "condition",
              "max_response_ms")
METRICS = ("ordering", "non_response")  # report sections (analysis.report.registry)
MODEL_TASK = "frame_order"
# Answers are JSON lists of presented frame labels 1..N (analysis.columns.FRAME_LIST).
ANSWERS = "frame_list"
DIRECTIONS = ()  # frame orders have no playback direction
ORDERING_S = 15.0  # rough seconds to order the frames, when the time limit allows


@dataclass(frozen=True)
class OrderingCondition:
    """One frame-ordering condition (EGO-FLIGHT Table 8)."""

    name: str
    n_frames: int = 4
    span: str = "medium"
    annotation: str = "brief"
    hint_positions: tuple[int, ...] = ()

    def __post_init__(self):
        if self.span not in SPANS or self.annotation not in ANNOTATIONS:
            raise ValueError(f"condition {self.name!r}: span must be one of {SPANS} and "
                             f"annotation one of {ANNOTATIONS}")
        if any(not 0 <= h < self.n_frames for h in self.hint_positions):
            raise ValueError(f"condition {self.name!r}: hints outside 0..{self.n_frames - 1}")
        if len(self.hint_positions) >= self.n_frames - 1:
            raise ValueError(f"condition {self.name!r}: hints leave nothing to order")


MOVE = Field("move", "object", keys=(
    Field("t_ms", "number", required=True, minimum=0.0, maximum=MAX_MS),
    Field("from", "int", required=True, minimum=0, maximum=MAX_FRAMES - 1),
    Field("to", "int", required=True, minimum=0, maximum=MAX_FRAMES - 1),
    Field("via", "str", required=True, choices=("mouse", "touch", "keyboard")),
))
LABEL = Field("label", "int", minimum=0, maximum=MAX_FRAMES - 1)
# Done takes no click in the first DONE_GUARD_MS after the frames appear: MIN_INPUT_MS in
# static/js/trials/frame_order.js (keep the two equal).  So an answer comes no sooner, and an
# ignored click no later.
DONE_GUARD_MS = 300.0
# Clicks on Done the browser ignored because they came before the frames were on screen long
# enough (the second click of a double-click on the previous Done); t_ms from the frames'
# appearance (0 for a click before they were painted).
IGNORED_INPUTS = ignored_inputs_field(("click",), earliest_ms=0.0, latest_ms=DONE_GUARD_MS)

FIELDS = COMMON_FIELDS + (
    Field("initial_order", "list", required=True, max_length=MAX_FRAMES, items=LABEL),
    Field("final_order", "list", required=True, max_length=MAX_FRAMES, items=LABEL),
    Field("moves", "list", max_length=500, items=MOVE, default=()),
    IGNORED_INPUTS,
)


def validate(payload, trial=None, key_mapping=None) -> dict:
    """The validated fields (``key_mapping`` is the video trials' business: no keys here)."""
    fields = check_fields(payload, FIELDS)
    if fields["trial_type"] != NAME:
        raise PayloadError("trial_type_mismatch", f"payload is a {fields['trial_type']!r} trial")
    fields["moves"] = list(fields["moves"] or [])
    check_ignored_inputs(fields, before_ms=DONE_GUARD_MS)
    _check_rt(fields)
    check_technical_events(fields)
    if trial is not None:
        _check_against(fields, trial)
    return fields


def _check_rt(fields: dict) -> None:
    """An answer is a click on Done, no sooner than its guard; a timeout has no RT."""
    rt = fields["rt_ms"]
    if fields["timed_out"]:
        if rt is not None:
            raise PayloadError("inconsistent", "a timed-out trial has no rt_ms")
    elif rt is None:
        raise PayloadError("inconsistent", "a trial that did not time out has its rt_ms")
    elif rt < DONE_GUARD_MS:
        raise PayloadError("out_of_range", f"rt_ms = {rt:g} is below {DONE_GUARD_MS:g}: Done "
                                           "takes no click that soon")


def _check_against(fields: dict, trial) -> None:
    n = int(trial["params"]["n_frames"])
    for name in ("initial_order", "final_order"):
        if sorted(fields[name]) != list(range(n)):
            raise PayloadError("out_of_range", f"{name} must be a permutation of 0..{n - 1}")
    if fields["initial_order"] != list(trial["params"]["presented_order"]):
        raise PayloadError("inconsistent", "initial_order differs from the presented order")
    for slot in trial["params"]["hint_positions"]:
        if fields["final_order"][slot] != fields["initial_order"][slot]:
            raise PayloadError("inconsistent", f"hint frame in slot {slot} was moved")
    if any(move["from"] >= n or move["to"] >= n for move in fields["moves"]):
        raise PayloadError("out_of_range", f"a move names a slot beyond {n - 1}")


# --- building trials -----------------------------------------------------------------------

def check_design(design: Design) -> None:
    if not design.conditions:
        raise ValueError(f"design {design.name!r}: frame ordering needs conditions")


def read_conditions(data) -> tuple[OrderingCondition, ...]:
    """The conditions of a design snapshot (:meth:`experiments.designs.Design.from_dict`)."""
    return tuple(OrderingCondition(**{**c, "hint_positions": tuple(c.get("hint_positions", ()))})
                 for c in data)


def practice_condition(design: Design) -> OrderingCondition:
    base = next((c for c in design.conditions if c.n_frames == 2), None) or design.conditions[0]
    return OrderingCondition("practice", n_frames=base.n_frames, span="medium", annotation="brief")


def usable(design: Design, clip: ClipRecord) -> bool:
    practice = practice_condition(design)
    needed = {(c.n_frames, c.span) for c in design.conditions} | {(practice.n_frames, practice.span)}
    return all(clip.frame_set(n, span) is not None for n, span in needed)


def rotations(design: Design) -> int:
    return len(design.conditions)


def presented_frames(condition: OrderingCondition, rng: np.random.Generator) -> list[int]:
    """Chronological index of the frame at each presented slot (label).

    Hint frames sit at their true slot; the others are a uniformly random permutation of
    the remaining frames (the identity included: excluding it would let 2-frame trials be
    solved by always swapping).
    """
    free = [i for i in range(condition.n_frames) if i not in condition.hint_positions]
    shuffled = iter(rng.permutation(free).tolist())
    return [i if i in condition.hint_positions else next(shuffled) for i in range(condition.n_frames)]


def build_trial(design: Design, clip: ClipRecord, condition: OrderingCondition,
          rng: np.random.Generator) -> dict:
    stimulus = clip.frame_set(condition.n_frames, condition.span)
    if stimulus is None:  # usable() keeps such clips out of a design
        raise ValueError(f"clip {clip.clip_key!r} has no {condition.n_frames}-frame "
                         f"{condition.span} set")
    frames = presented_frames(condition, rng)
    # Analysis labels frames by presented slot, 1-based, listed in true time order.
    correct = [frames.index(t) + 1 for t in range(condition.n_frames)]
    return {"trial_type": NAME, "stimulus_id": stimulus.id,
            "public_id": stimulus.public_id, "source_clip_id": clip.id,
            "clip_key": clip.clip_key, "categories": list(clip.categories),
            "direction": None, "correct_response": json.dumps(correct), "frames": frames,
            "condition": condition.name, "span": condition.span,
            "annotation_level": condition.annotation,
            "hint_labels": [h + 1 for h in condition.hint_positions],
            "params": {"n_frames": condition.n_frames,
                       "presented_order": list(range(condition.n_frames)),
                       "hint_positions": list(condition.hint_positions),
                       "annotation": clip.annotation(condition.annotation),
                       "condition": condition.name, "max_response_ms": design.max_ordering_ms}}


def practice_trials(design: Design, clips: list[ClipRecord], rng: np.random.Generator) -> list[dict]:
    condition = practice_condition(design)
    return [build_trial(design, clip, condition, rng) for clip in clips]


def feedback_answer(scheduled: dict) -> list[int]:
    """The true order as the browser counts slots (from 0)."""
    return [label - 1 for label in json.loads(scheduled["correct_response"])]


def main_trials(design: Design, plan: SessionPlan) -> list[dict]:
    conditions = design.conditions
    position = {c.id: i for i, c in enumerate(plan.study_clips)}  # the Latin square's rows
    return [build_trial(design, clip,
                        conditions[(position[clip.id] + plan.rotation) % len(conditions)], plan.rng)
            for clip in plan.clips]


def block_factors(scheduled: dict) -> tuple:
    """Blocks balance conditions first, then categories."""
    return scheduled["condition"], tuple(scheduled["categories"][:1])


def design_trials(design: Design, clips: list[ClipRecord], rng: np.random.Generator) -> list[dict]:
    """Every clip in every condition."""
    return [build_trial(design, clip, condition, rng)
            for clip in clips for condition in design.conditions]


def public_view(scheduled: dict, media_url) -> dict:
    """Frames by presented slot only: never a stimulus id or a frame's time index."""
    index = scheduled["trial_index"]
    frames = [media_url(index, slot) for slot in range(len(scheduled["frames"]))]
    return {"trial_index": index, "trial_type": NAME, "block": scheduled["block"],
            "stimulus": {"url": None, "frames": frames}, "params": dict(scheduled["params"])}


def row_parts(fields: dict, scheduled: dict) -> dict:
    response = None if fields["timed_out"] else json.dumps([i + 1 for i in fields["final_order"]])
    return {"direction": None,  # also for schedules stored before frame orders lost "forward"
            "response": response, "onset_method": None, "dropped_frames": None,
            "extra": dict(initial_order=fields["initial_order"], final_order=fields["final_order"],
                          moves=fields["moves"], ignored_inputs=fields["ignored_inputs"],
                          hint_frames=scheduled["hint_labels"], condition=scheduled["condition"],
                          n_frames=scheduled["params"]["n_frames"], span=scheduled["span"],
                          annotation_level=scheduled["annotation_level"],
                          presented_frames=scheduled["frames"])}


def duration_s(design: Design, clip_s: float) -> float:
    return min(ORDERING_S, design.max_ordering_ms / 1000)
