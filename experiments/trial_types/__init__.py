"""Trial types, one module each: the registry ``TRIAL_TYPES`` maps a type name to its module.

What a module declares is the typed contract of :mod:`experiments.trial_types.contract`
(``TrialType``; ``TaskType`` for a type a design can name as its ``task``, in ``TASKS``),
which mypy checks on the registries below.  A type's participant texts are the TOML file
beside its module (``aot.toml``), read by :mod:`experiments.texts`.  The whole recipe for a
new type: ARCHITECTURE.md, "Adding a trial type: the recipe".

A module may declare ``PRESENTED_AS``: the type the browser is told it is and posts back
(catch trials are presented as arrow-of-time trials, so the schedule does not give them away).

Every list of types is derived from the registry when it is read (``BROWSER_TYPES``,
``DIRECTIONLESS`` here, the analysis columns, the codebook, the shipped texts), so a type is
in all of them once it is in ``TRIAL_TYPES``, even one a test registers at run time.
"""
from collections.abc import Mapping

from experiments.trial_types import aot, catch, frame_order
from experiments.trial_types.base import Field, PayloadError, is_technical, technical_reasons
from experiments.trial_types.contract import TaskType, TrialType

# Typed with the contract: mypy refuses a module here that lacks a member or declares one
# with the wrong shape.
TRIAL_TYPES: dict[str, TrialType] = {aot.NAME: aot, catch.NAME: catch,
                                     frame_order.NAME: frame_order}
# Types a design can be built around; catch trials join any design's main blocks.
TASKS: dict[str, TaskType] = {aot.NAME: aot, frame_order.NAME: frame_order}
# The attention check: the schedule adds its trials to the main blocks of any design, and the
# exclusion rules score them on their own.
ATTENTION_CHECK = catch.NAME


def presented_type(name: str) -> str:
    """The trial type the browser sees for a scheduled trial of type ``name``."""
    return getattr(TRIAL_TYPES[name], "PRESENTED_AS", name)


def browser_types() -> tuple[str, ...]:
    """The types the browser is shown and posts back (``BROWSER_TYPES``)."""
    return tuple(sorted({presented_type(name) for name in TRIAL_TYPES}))


def directionless() -> tuple[str, ...]:
    """Types whose rows have no playback direction: they declare ``DIRECTIONS = ()``
    (``DIRECTIONLESS``)."""
    return tuple(name for name, module in TRIAL_TYPES.items() if not module.DIRECTIONS)


_DERIVED = {"BROWSER_TYPES": browser_types, "DIRECTIONLESS": directionless}


def __getattr__(name: str) -> tuple[str, ...]:
    # Derived lists are read from the registry each time, never copied at import.
    if name in _DERIVED:
        return _DERIVED[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def validate(payload, trial=None, key_mapping: Mapping | None = None) -> dict:
    """Validate a payload by its own ``trial_type`` (one the browser is shown); with the
    scheduled ``trial``, by that trial's type, whose presented type the payload must name.
    With the session's ``key_mapping`` (condition["key_mapping"]), a key-press answer must
    name one of its keys and that key's label."""
    if not isinstance(payload, dict):
        raise PayloadError("wrong_type", "body must be a JSON object")
    name, shown = payload.get("trial_type"), browser_types()
    if not isinstance(name, str) or name not in shown:
        raise PayloadError("unknown_trial_type", f"trial_type must be one of {list(shown)}")
    if trial is None:
        return TRIAL_TYPES[name].validate(payload, None, key_mapping)
    if presented_type(trial["trial_type"]) != name:
        raise PayloadError("trial_type_mismatch", f"trial {trial['trial_index']} is a "
                           f"{presented_type(trial['trial_type'])!r} trial")
    return TRIAL_TYPES[trial["trial_type"]].validate(payload, trial, key_mapping)


__all__ = ["ATTENTION_CHECK", "BROWSER_TYPES", "DIRECTIONLESS", "TASKS", "TRIAL_TYPES", "Field",
           "PayloadError", "TaskType", "TrialType", "browser_types", "directionless",
           "is_technical", "technical_reasons", "presented_type", "validate"]
