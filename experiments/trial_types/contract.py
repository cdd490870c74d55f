"""The trial-type contract as types: what a trial type's module must declare.

A module is checked against these protocols where the registries hold it
(:data:`experiments.trial_types.TRIAL_TYPES` and ``TASKS``), so mypy names what a new type's
module lacks or declares with the wrong shape.  Members are read-only properties, so a module's
``NAME = "aot"`` or ``PARAMETERS = ("fixation_ms",)`` fits; functions are ``Callable[..., R]``
where the types differ in their arguments (``build_trial`` takes a clip and a direction for one
type, a clip, a condition and a random stream for another).  What each member means:
ARCHITECTURE.md, "Adding a trial type: the recipe".
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from experiments.trial_types.base import Field


class TrialType(Protocol):
    """Every trial type: what the browser is sent and posts back, and its stored row."""

    @property
    def NAME(self) -> str: ...
    @property
    def TITLE(self) -> str: ...  # the codebook's words for it
    @property
    def PARAMETERS(self) -> tuple[str, ...]: ...  # the params keys the browser is sent
    @property
    def FIELDS(self) -> tuple[Field, ...]: ...  # the payload it accepts
    @property
    def ANSWERS(self) -> tuple[str, ...] | str: ...  # labels, or "frame_list"
    @property
    def DIRECTIONS(self) -> tuple[str, ...]: ...  # () leaves ``direction`` empty
    @property
    def METRICS(self) -> tuple[str, ...]: ...  # dotted names of analysis functions
    @property
    def MODEL_TASK(self) -> str | None: ...  # a name in analysis.vlm.tasks.TASKS, or None

    def validate(self, payload: Any, trial: Any = None,
                 key_mapping: Mapping | None = None) -> dict: ...
    @property
    def build_trial(self) -> Callable[..., dict]: ...
    # schedule.public_trial passes the scheduled trial as a Mapping.
    def public_view(self, scheduled: Any, media_url: Any) -> dict: ...
    def row_parts(self, fields: dict, scheduled: dict) -> dict: ...
    @property
    def duration_s(self) -> Callable[[Any, float], float]: ...


class TaskType(TrialType, Protocol):
    """A trial type a design can be built around (``Design.task``): it builds whole sessions."""

    def check_design(self, design: Any) -> None: ...
    def read_conditions(self, data: Any) -> tuple: ...
    def usable(self, design: Any, clip: Any) -> bool: ...
    def rotations(self, design: Any) -> int: ...
    @property
    def practice_trials(self) -> Callable[..., list[dict]]: ...
    def feedback_answer(self, scheduled: dict) -> Any: ...
    @property
    def main_trials(self) -> Callable[..., list[dict]]: ...
    def block_factors(self, scheduled: dict) -> tuple: ...
    @property
    def design_trials(self) -> Callable[..., list[dict]]: ...


def members(protocol: type) -> tuple[str, ...]:
    """The names a module must define to fit ``protocol`` (the registry test reads them)."""
    return tuple(name for klass in protocol.__mro__ if klass not in (Protocol, object)
                 for name in vars(klass) if not name.startswith("_"))
