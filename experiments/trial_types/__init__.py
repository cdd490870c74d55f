"""Trial types, one module each: the registry ``TRIAL_TYPES`` maps a type name to its module.

Adding a trial type is one module here and one line in ``TRIAL_TYPES``.  Every module declares

* ``NAME`` and ``TITLE`` (a few words for the codebook); ``PARAMETERS``, the ``params`` keys the browser is sent; ``FIELDS``, the browser
  payload it accepts, and ``validate(payload, trial=None) -> dict`` raising
  :class:`PayloadError` (a ValueError); ``ANSWERS``, how its rows code ``response`` and
  ``correct_response``;
* ``build_trial(design, ...)``: one scheduled trial (a plain dict; server-only keys such as
  ``correct_response`` and ``direction`` never reach the browser);
* ``public_view(trial, media_url) -> dict``: what the browser may see of a scheduled trial;
* ``row_parts(fields, trial) -> dict``: the type's columns of the stored row (``direction``,
  ``response``, ``onset_method``, ``dropped_frames``) and what it adds to ``extra``;
* ``METRICS``: the analysis functions that read its rows, and ``MODEL_TASK``: the model task
  that asks its question of models (None: models never see it).  Plain names: experiments
  never imports analysis.

A module may declare ``PRESENTED_AS``: the type the browser is told it is and posts back
(catch trials are presented as arrow-of-time trials, so the schedule does not give them away).

A type that a design can name as its ``task`` (``TASKS``) also builds whole sessions for
:mod:`experiments.schedule`: ``check_design``, ``usable(design, clip)``, ``rotations(design)``
(between-subject rotations of clips over conditions), ``practice_trials``, ``feedback_answer``,
``main_trials(design, plan)``, ``block_factors(trial)`` and ``design_trials``.
"""
from experiments.trial_types import aot, catch, frame_order
from experiments.trial_types.base import Field, PayloadError, is_technical

TRIAL_TYPES = {aot.NAME: aot, catch.NAME: catch, frame_order.NAME: frame_order}
# Types a design can be built around; catch trials join any design's main blocks.
TASKS = {aot.NAME: aot, frame_order.NAME: frame_order}
# Types whose rows have no playback direction.
DIRECTIONLESS = (frame_order.NAME,)


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


__all__ = ["BROWSER_TYPES", "DIRECTIONLESS", "TASKS", "TRIAL_TYPES", "Field", "PayloadError",
           "is_technical", "presented_type", "validate"]
