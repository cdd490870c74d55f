"""Field declarations and validation shared by the trial types (jsPsych-style plugins).

Each trial type declares the fields its browser payload may hold; ``validate`` refuses
anything else.  Errors are :class:`PayloadError` (a ``ValueError``) with a machine
``code`` and a human ``message``, which the API turns into a 400 answer.
"""
from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

MAX_INDEX = 100_000
MAX_MS = 3_600_000.0  # one hour: no single trial lasts longer
# JSON may spell half of a UTF-16 pair ("\ud800"); Python decodes it to a lone surrogate,
# which is no Unicode text: UTF-8 cannot encode it, so neither SQLite nor PostgreSQL stores it.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class PayloadError(ValueError):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Field:
    """One declared field: ``kind`` is number | int | bool | str | uuid | list | object."""

    name: str
    kind: str
    required: bool = False
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple | None = None
    max_length: int | None = None  # strings and lists
    items: "Field | None" = None  # list items
    keys: "tuple[Field, ...] | None" = None  # object fields
    default: object = None
    # A measurement of the browser (a frame interval, a frame count): out of its bounds it
    # says the browser could not measure (a background tab paints at ~1 Hz), not that the
    # payload is forged, so the trial is kept as technical with the reason (out_of_bounds)
    # and the value left out, instead of being refused and lost.
    measurement: bool = False

    def check(self, value, where: str):
        if value is None:
            if self.nullable:
                return None
            raise PayloadError("wrong_type", f"{where} must not be null")
        return _CHECKS[self.kind](self, value, where)


def _number(spec: Field, value, where: str) -> float:
    # bool is an int subclass in Python: refuse it explicitly, JSON true is not a number.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PayloadError("wrong_type", f"{where} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise PayloadError("non_finite", f"{where} must be finite")
    _range(spec, value, where)
    return float(value)


def _int(spec: Field, value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and math.isfinite(value):
            value = int(value)  # JSON 3.0 is the integer 3
        else:
            raise PayloadError("wrong_type", f"{where} must be an integer")
    _range(spec, value, where)
    return value


def _range(spec: Field, value, where: str) -> None:
    if (spec.minimum is not None and value < spec.minimum) or \
            (spec.maximum is not None and value > spec.maximum):
        raise PayloadError("out_of_range", f"{where} = {value} is outside "
                                           f"[{spec.minimum}, {spec.maximum}]")


def _bool(spec: Field, value, where: str) -> bool:
    if not isinstance(value, bool):
        raise PayloadError("wrong_type", f"{where} must be true or false")
    return value


def _str(spec: Field, value, where: str) -> str:
    if not isinstance(value, str):
        raise PayloadError("wrong_type", f"{where} must be a string")
    # Control characters (NUL above all: PostgreSQL text refuses it) are never meaningful here.
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise PayloadError("invalid_string", f"{where} contains control characters")
    if _LONE_SURROGATE.search(value):
        raise PayloadError("invalid_string", f"{where} contains a lone UTF-16 surrogate "
                                             "(not valid Unicode)")
    if spec.max_length is not None and len(value) > spec.max_length:
        raise PayloadError("out_of_range", f"{where} is longer than {spec.max_length} characters")
    if spec.choices is not None and value not in spec.choices:
        raise PayloadError("out_of_range", f"{where} must be one of {list(spec.choices)}")
    return value


def _uuid(spec: Field, value, where: str) -> str:
    if not isinstance(value, str):
        raise PayloadError("wrong_type", f"{where} must be a UUID string")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise PayloadError("invalid_uuid", f"{where} is not a UUID") from None


def _list(spec: Field, value, where: str) -> list:
    if not isinstance(value, list):
        raise PayloadError("wrong_type", f"{where} must be a list")
    if spec.max_length is not None and len(value) > spec.max_length:
        raise PayloadError("out_of_range", f"{where} has more than {spec.max_length} items")
    items = spec.items
    if items is None:
        raise TypeError(f"list field {spec.name!r} declares no items")
    return [items.check(item, f"{where}[{i}]") for i, item in enumerate(value)]


def _object(spec: Field, value, where: str) -> dict:
    if not isinstance(value, Mapping):
        raise PayloadError("wrong_type", f"{where} must be an object")
    if spec.keys is None:
        raise TypeError(f"object field {spec.name!r} declares no keys")
    return check_fields(value, spec.keys, where)


_CHECKS = {"number": _number, "int": _int, "bool": _bool, "str": _str, "uuid": _uuid,
           "list": _list, "object": _object}


def check_fields(payload, declared: tuple[Field, ...], where: str = "body") -> dict:
    """Check ``payload`` against ``declared``: unknown keys, missing required fields, types."""
    if not isinstance(payload, Mapping):
        raise PayloadError("wrong_type", f"{where} must be a JSON object")
    by_name = {spec.name: spec for spec in declared}
    unknown = sorted(k for k in payload if k not in by_name)
    if unknown:
        raise PayloadError("unknown_field", f"{where}: undeclared field(s) {unknown}")
    result: dict = {}
    left_out: list[str] = []
    for spec in declared:
        label = spec.name if where == "body" else f"{where}.{spec.name}"
        if spec.name not in payload:
            if spec.required:
                raise PayloadError("missing_field", f"{label} is required")
            result[spec.name] = spec.default
            continue
        try:
            result[spec.name] = spec.check(payload[spec.name], label)
        except PayloadError as error:
            if not (spec.measurement and error.code == "out_of_range"):
                raise
            result[spec.name] = None
            left_out.append(error.message)
    return result | ({OUT_OF_BOUNDS: left_out} if left_out else {})


# The key under which check_fields lists the measurements it left out (see Field.measurement).
OUT_OF_BOUNDS = "out_of_bounds"


class _Range(TypedDict):
    minimum: float
    maximum: float


MS: _Range = {"minimum": 0.0, "maximum": MAX_MS}

# A presentation during which the page left fullscreen is a technical event, not the
# participant's answer or miss.  Leaving fullscreen can swallow the answer key (WebKitGTK leaves
# it on Escape, f and F and keeps the key), so a timeout then says nothing about the
# participant; and an answer given after the exit (the second F, or a key right after Escape)
# has an RT that includes the exit and may not even answer that clip.  The browser offers such
# a trial again at most twice (MAX_REOFFERS in static/js/runner.js) and sends one event per
# such presentation with the trial it finally stores, so a trial carries at most three;
# exactly three means the stored presentation left fullscreen too: the trial is flagged
# technical (see is_technical), whether it timed out or was answered.
FULLSCREEN_EXITED_TIMEOUT = "fullscreen_exited_timeout"
FULLSCREEN_EXITED_ANSWER = "fullscreen_exited_answer"
MAX_TECHNICAL_EVENTS = 3
TECHNICAL_EVENT = Field("technical_event", "object", keys=(
    Field("kind", "str", required=True,
          choices=(FULLSCREEN_EXITED_TIMEOUT, FULLSCREEN_EXITED_ANSWER)),
    # Which presentation of the trial left fullscreen (1 = the first).
    Field("presentation", "int", required=True, minimum=1, maximum=MAX_TECHNICAL_EVENTS),
))

# Input a trial took no answer from because it came before the trial could take one (the
# static/js/monitor.js MAX_IGNORED_INPUTS is the same cap); t_ms is from the trial's own zero
# (a clip's onset, the frames' appearance), so earlier input is negative.
MAX_IGNORED_INPUTS = 100


def ignored_inputs_field(kinds: tuple[str, ...], earliest_ms: float = -MAX_MS,
                         latest_ms: float = MAX_MS) -> Field:
    """A trial type's ``ignored_inputs``: the kinds of input its browser module ignores, and
    the bounds of the ``t_ms`` it can ignore one at (:func:`check_ignored_inputs` makes the
    upper one strict)."""
    return Field("ignored_inputs", "list", max_length=MAX_IGNORED_INPUTS, default=(),
                 items=Field("ignored_input", "object", keys=(
                     Field("t_ms", "number", required=True, minimum=earliest_ms,
                           maximum=latest_ms),
                     Field("kind", "str", required=True, choices=kinds),
                 )))


def check_ignored_inputs(fields: dict, before_ms: float) -> None:
    """Refuse ignored input at or after ``before_ms`` (from then on the trial takes input as
    an answer, so none is ignored) or out of time order (the browser notes each as it
    comes); normalise the list."""
    inputs = fields["ignored_inputs"] = list(fields["ignored_inputs"] or [])
    times = [item["t_ms"] for item in inputs]
    if any(t >= before_ms for t in times):
        raise PayloadError("out_of_range", f"ignored_inputs: t_ms must be below {before_ms:g} "
                                           "(the trial took input as an answer from then on)")
    if times != sorted(times):
        raise PayloadError("inconsistent", "ignored_inputs must be in time order")


COMMON_FIELDS = (
    Field("client_uuid", "uuid", required=True),
    Field("trial_index", "int", required=True, minimum=0, maximum=MAX_INDEX),
    Field("trial_type", "str", required=True, max_length=40),
    Field("rt_ms", "number", required=True, nullable=True, **MS),
    Field("timed_out", "bool", required=True),
    Field("focus_lost", "bool", default=False),
    Field("fullscreen_exited", "bool", default=False),
    # Shown before a reload interrupted it, and shown again from its start after the reload.
    Field("restarted", "bool", default=False),
    Field("technical_events", "list", max_length=MAX_TECHNICAL_EVENTS, items=TECHNICAL_EVENT,
          default=()),
)


def reject_inconsistent(fields: dict) -> None:
    if fields["timed_out"] and fields.get("response") is not None:
        raise PayloadError("inconsistent", "a timed-out trial has no response")
    if not fields["timed_out"] and "response" in fields and fields["response"] is None:
        raise PayloadError("inconsistent", "a trial that did not time out has a response")


def technical_event_kind(fields: dict) -> str | None:
    """The technical event a presentation is (it left fullscreen, and timed out or was
    answered), or None."""
    if not fields["fullscreen_exited"]:
        return None
    return FULLSCREEN_EXITED_TIMEOUT if fields["timed_out"] else FULLSCREEN_EXITED_ANSWER


def check_technical_events(fields: dict) -> None:
    """Refuse technical events the runner cannot have sent, and normalise them to a list.

    The technical flag excuses a trial, so the server takes it only in the one shape the
    runner produces: the cap of events, the last one the stored presentation's own (it left
    fullscreen, and timed out or was answered as the event says).  A presentation that left
    fullscreen below the cap is refused too, answered or not: the runner would have offered
    that trial again.
    """
    events = fields["technical_events"] = list(fields["technical_events"] or [])
    if [event["presentation"] for event in events] != list(range(1, len(events) + 1)):
        raise PayloadError("inconsistent", "technical_events must number the presentations "
                                           "1, 2, ... in order")
    kind = technical_event_kind(fields)
    if kind is None:
        if len(events) == MAX_TECHNICAL_EVENTS:
            raise PayloadError("inconsistent", f"a trial with {MAX_TECHNICAL_EVENTS} technical "
                                               "events must be stored with fullscreen exited")
        return
    if len(events) < MAX_TECHNICAL_EVENTS:
        raise PayloadError("inconsistent", "a trial that left fullscreen (timed out or "
                                           "answered) is offered again until it has "
                                           f"{MAX_TECHNICAL_EVENTS} technical events")
    if events[-1]["kind"] != kind:
        raise PayloadError("inconsistent", f"the last technical event must be {kind!r}: the "
                                           "stored presentation's own")


def is_technical(fields: dict) -> bool:
    """Whether a validated trial is stored for a technical reason (the page left fullscreen
    every time it was offered, the stored presentation included, whether it timed out or was
    answered; or a measurement of the browser was out of its bounds): excluded from
    analysis, it never counts against the participant."""
    return len(fields["technical_events"]) == MAX_TECHNICAL_EVENTS or bool(technical_reasons(fields))


def technical_reasons(fields: dict) -> list[str]:
    """Why the browser's measurements of a validated trial were left out (its out-of-bounds
    fields, each with its value and bounds)."""
    return list(fields.get(OUT_OF_BOUNDS) or [])
