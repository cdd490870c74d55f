"""Frame-ordering trial: N shuffled frames put in time order by drag or keyboard.

Orders are lists of frame labels (0-based indices into the trial's ``stimulus.frames``)
slot by slot, earliest first.  ``moves`` records every move.  With the scheduled trial
given, both orders must be permutations of its labels and hint frames must not move.
"""
from experiments.trial_types.base import (COMMON_FIELDS, MAX_MS, Field, PayloadError,
                                          check_fields, check_technical_events)

NAME = "frame_order"
MAX_FRAMES = 16

MOVE = Field("move", "object", keys=(
    Field("t_ms", "number", required=True, minimum=0.0, maximum=MAX_MS),
    Field("from", "int", required=True, minimum=0, maximum=MAX_FRAMES - 1),
    Field("to", "int", required=True, minimum=0, maximum=MAX_FRAMES - 1),
    Field("via", "str", required=True, choices=("mouse", "touch", "keyboard")),
))
LABEL = Field("label", "int", minimum=0, maximum=MAX_FRAMES - 1)
# Input the browser ignored because it came before the trial was on screen long enough (the
# second click of a double-click on the previous Done); t_ms from the frames' appearance.
IGNORED_INPUT = Field("ignored_input", "object", keys=(
    Field("t_ms", "number", required=True, minimum=-MAX_MS, maximum=MAX_MS),
    Field("kind", "str", required=True, choices=("click",)),
))

FIELDS = COMMON_FIELDS + (
    Field("initial_order", "list", required=True, max_length=MAX_FRAMES, items=LABEL),
    Field("final_order", "list", required=True, max_length=MAX_FRAMES, items=LABEL),
    Field("moves", "list", max_length=500, items=MOVE, default=()),
    Field("ignored_inputs", "list", max_length=100, items=IGNORED_INPUT, default=()),
)


def validate(payload, trial=None) -> dict:
    fields = check_fields(payload, FIELDS)
    if fields["trial_type"] != NAME:
        raise PayloadError("trial_type_mismatch", f"payload is a {fields['trial_type']!r} trial")
    fields["moves"] = list(fields["moves"] or [])
    fields["ignored_inputs"] = list(fields["ignored_inputs"] or [])
    check_technical_events(fields)
    if trial is not None:
        _check_against(fields, trial)
    return fields


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
