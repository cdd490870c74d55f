"""Trial types, one module each; ``TRIAL_TYPES`` maps a type name to its module.

Every module declares ``NAME``, ``FIELDS`` (the browser payload it accepts) and
``validate(payload, trial=None) -> dict`` raising :class:`PayloadError` (a ValueError).  A
module may declare ``PRESENTED_AS``: the type the browser is told it is and posts back
(catch trials are presented as arrow-of-time trials, so the schedule does not give them away).
"""
from experiments.trial_types import aot, catch, frame_order
from experiments.trial_types.base import Field, PayloadError, is_technical

TRIAL_TYPES = {aot.NAME: aot, catch.NAME: catch, frame_order.NAME: frame_order}


def presented_type(name: str) -> str:
    """The trial type the browser sees for a scheduled trial of type ``name``."""
    return getattr(TRIAL_TYPES[name], "PRESENTED_AS", name)


BROWSER_TYPES = tuple(sorted({presented_type(name) for name in TRIAL_TYPES}))


def validate(payload, trial=None) -> dict:
    """Validate a payload by its own ``trial_type`` (one the browser is shown); with the
    scheduled ``trial``, by that trial's type, whose presented type the payload must name."""
    if not isinstance(payload, dict):
        raise PayloadError("wrong_type", "body must be a JSON object")
    name = payload.get("trial_type")
    if not isinstance(name, str) or name not in BROWSER_TYPES:
        raise PayloadError("unknown_trial_type", f"trial_type must be one of {list(BROWSER_TYPES)}")
    if trial is None:
        return TRIAL_TYPES[name].validate(payload)
    if presented_type(trial["trial_type"]) != name:
        raise PayloadError("trial_type_mismatch", f"trial {trial['trial_index']} is a "
                           f"{presented_type(trial['trial_type'])!r} trial")
    return TRIAL_TYPES[trial["trial_type"]].validate(payload, trial)


__all__ = ["BROWSER_TYPES", "TRIAL_TYPES", "Field", "PayloadError", "is_technical",
           "presented_type", "validate"]
