"""The trial-type contract as types: what a trial type's module must declare.

A module is checked against these protocols where the registries hold it
(:data:`experiments.trial_types.TRIAL_TYPES` and ``TASKS``), so mypy names a new type's
module that lacks a member or declares one with the wrong shape.  Members are read-only
properties, so a module's ``NAME = "aot"`` or ``PARAMETERS = ("fixation_ms",)`` fits; a
function whose arguments differ between types is ``Callable[..., R]`` (``build_trial`` takes
a clip and a direction for one type, a clip, a condition and a random stream for another).
Plain names, not imports, for what lives higher up (metrics, model tasks): experiments never
imports analysis.
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
    def TITLE(self) -> str: ...  # a few words for the codebook and the dashboard
    @property
    def PARAMETERS(self) -> tuple[str, ...]:
        """The ``params`` keys the browser is sent (``schedule.public_trial`` drops others)."""
    @property
    def FIELDS(self) -> tuple[Field, ...]: ...  # the browser payload it accepts
    @property
    def ANSWERS(self) -> tuple[str, ...] | str:
        """How ``response`` and ``correct_response`` are coded: labels, or "frame_list"."""
    @property
    def DIRECTIONS(self) -> tuple[str, ...]:
        """The playback directions its rows store; ``()``: ``direction`` is empty."""
    @property
    def METRICS(self) -> tuple[str, ...]: ...  # ids of the report sections that read its rows
    @property
    def MODEL_TASK(self) -> str | None: ...  # the model task asking its question, or None

    def validate(self, payload: Any, trial: Any = None,
                 key_mapping: Mapping | None = None) -> dict:
        """The validated fields, or :class:`~experiments.trial_types.base.PayloadError`;
        ``key_mapping``: the session's response key -> answer label, or None."""

    @property
    def build_trial(self) -> Callable[..., dict]:
        """One scheduled trial, a plain dict (server-only keys such as ``correct_response``
        never reach the browser)."""

    def public_view(self, scheduled: Any, media_url: Any) -> dict:
        """What the browser may see of a scheduled trial (a Mapping)."""

    def row_parts(self, fields: dict, scheduled: dict) -> dict:
        """Its columns of the stored row (``direction``, ``response``, ``onset_method``,
        ``dropped_frames``) and what it adds to ``extra``."""

    @property
    def duration_s(self) -> Callable[[Any, float], float]:
        """``(design, clip_s)``: about how long one trial takes (the consent's length)."""


class TaskType(TrialType, Protocol):
    """A type a design can be built around (``Design.task``): it builds whole sessions for
    :mod:`experiments.schedule`."""

    def check_design(self, design: Any) -> None: ...
    def read_conditions(self, data: Any) -> tuple: ...  # its conditions in a design snapshot
    def usable(self, design: Any, clip: Any) -> bool: ...
    def rotations(self, design: Any) -> int: ...  # between-subject rotations of the clips
    @property
    def practice_trials(self) -> Callable[..., list[dict]]: ...
    def feedback_answer(self, scheduled: dict) -> Any: ...  # the answer practice feedback tells
    @property
    def main_trials(self) -> Callable[..., list[dict]]: ...  # (design, SessionPlan)
    def block_factors(self, scheduled: dict) -> tuple: ...  # what blocks balance, in order
    @property
    def design_trials(self) -> Callable[..., list[dict]]: ...  # every trial a design can show


def members(protocol: type) -> tuple[str, ...]:
    """The names a module must define to fit ``protocol`` (the recipe's checks read them)."""
    return tuple(dict.fromkeys(name for klass in reversed(protocol.__mro__)
                               if klass not in (Protocol, object)
                               for name in vars(klass) if not name.startswith("_")))
