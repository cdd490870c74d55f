"""Trial types, one module each; ``TRIAL_TYPES`` maps a type name to its module.

Every module declares ``NAME``, ``FIELDS`` (the browser payload it accepts) and
``validate(payload, trial=None) -> dict`` raising :class:`PayloadError` (a ValueError).
"""
from experiments.trial_types import aot, catch, frame_order
from experiments.trial_types.base import Field, PayloadError

TRIAL_TYPES = {aot.NAME: aot, catch.NAME: catch, frame_order.NAME: frame_order}


def validate(payload, trial=None) -> dict:
    """Validate a payload by its own ``trial_type`` (checked against ``trial`` when given)."""
    if not isinstance(payload, dict):
        raise PayloadError("wrong_type", "body must be a JSON object")
    name = payload.get("trial_type")
    if not isinstance(name, str) or name not in TRIAL_TYPES:
        raise PayloadError("unknown_trial_type",
                           f"trial_type must be one of {sorted(TRIAL_TYPES)}")
    if trial is not None and trial["trial_type"] != name:
        raise PayloadError("trial_type_mismatch",
                           f"trial {trial['trial_index']} is a {trial['trial_type']!r} trial")
    return TRIAL_TYPES[name].validate(payload, trial)


__all__ = ["TRIAL_TYPES", "Field", "PayloadError", "validate"]
