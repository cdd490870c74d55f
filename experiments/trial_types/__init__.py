"""Trial types, one module each: the registry ``TRIAL_TYPES`` maps a type name to its module.

Adding a trial type is one module here and one line in ``TRIAL_TYPES`` (the whole recipe:
ARCHITECTURE.md, "Adding a trial type").  Every module declares

* ``NAME`` and ``TITLE`` (a few words for the codebook); ``PARAMETERS``, the ``params`` keys
  the browser is sent; ``FIELDS``, the browser payload it accepts, and
  ``validate(payload, trial=None, key_mapping=None) -> dict`` raising :class:`PayloadError`
  (a ValueError; ``key_mapping``: the session's response key -> answer label, or None);
  ``ANSWERS``, how its rows code ``response`` and ``correct_response``;
* ``DIRECTIONS``: the playback directions its rows store (``()``: none, ``direction`` is
  empty on its rows);
* ``build_trial(design, ...)``: one scheduled trial (a plain dict; server-only keys such as
  ``correct_response`` and ``direction`` never reach the browser);
* ``public_view(trial, media_url) -> dict``: what the browser may see of a scheduled trial
  (:func:`experiments.schedule.public_trial` keeps of its ``params`` only the declared
  ``PARAMETERS``);
* ``row_parts(fields, trial) -> dict``: the type's columns of the stored row (``direction``,
  ``response``, ``onset_method``, ``dropped_frames``) and what it adds to ``extra``;
* ``duration_s(design, clip_s) -> float``: about how long one of its trials takes (the
  consent text's session length);
* ``METRICS``: the report sections that read its rows (ids of
  ``analysis.report.registry.SECTIONS``; the report shows a section only when a type names
  it, or it is study-wide), and ``MODEL_TASK``: the model task that asks its question of
  models (None: models never see it).  Plain names: experiments never imports analysis.

A module may declare ``PRESENTED_AS``: the type the browser is told it is and posts back
(catch trials are presented as arrow-of-time trials, so the schedule does not give them away).

A type that a design can name as its ``task`` (``TASKS``) also builds whole sessions for
:mod:`experiments.schedule`: ``check_design``, ``read_conditions(data)`` (its conditions in a
design snapshot), ``usable(design, clip)``, ``rotations(design)`` (between-subject rotations
of clips over conditions), ``practice_trials``, ``feedback_answer``,
``main_trials(design, plan)``, ``block_factors(trial)`` and ``design_trials``.

Every list of types is derived from the registry when it is read (``BROWSER_TYPES``,
``DIRECTIONLESS`` here, the analysis columns, the codebook), so a type is in all of them
once it is in ``TRIAL_TYPES``, even one a test registers at run time.
"""
from collections.abc import Mapping

from experiments.trial_types import aot, catch, frame_order
from experiments.trial_types.base import Field, PayloadError, is_technical

TRIAL_TYPES = {aot.NAME: aot, catch.NAME: catch, frame_order.NAME: frame_order}
# Types a design can be built around; catch trials join any design's main blocks.
TASKS = {aot.NAME: aot, frame_order.NAME: frame_order}
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
           "PayloadError", "browser_types", "directionless", "is_technical", "presented_type",
           "validate"]
