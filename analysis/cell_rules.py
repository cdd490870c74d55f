"""What one cell of a trial table may hold, checked value by value, and how a value and the
values allowed are written in :mod:`analysis.validation`'s messages."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd

from analysis import columns as C


class JsonObject:
    """Stands for every parsed JSON object (dicts cannot be factorized)."""

    def __repr__(self):
        return "{...}"


JSON_OBJECT = JsonObject()


def blank(value) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value)) \
        or value is pd.NA or value is pd.NaT


def matches(value, pattern: str) -> bool:
    return bool(pattern) and isinstance(value, str) and re.fullmatch(pattern, value) is not None


def is_int(value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    if isinstance(value, (float, np.floating)):
        return math.isfinite(value) and float(value).is_integer()
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return False
        return math.isfinite(number) and number.is_integer()
    return False


def is_number(value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, float, np.integer, np.floating)):
        return math.isfinite(value)
    if isinstance(value, str):
        try:
            return math.isfinite(float(value))
        except ValueError:
            return False
    return False


TRUE_TEXT, FALSE_TEXT = ("true", "1", "1.0"), ("false", "0", "0.0")


def is_bool(value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, (int, float, np.integer, np.floating)):
        return value in (0, 1)
    return isinstance(value, str) and value.strip().lower() in TRUE_TEXT + FALSE_TEXT


def parsed_json(value, kind: type):
    """The parsed JSON ``kind`` of a cell, or None when it is not one."""
    if isinstance(value, tuple) and kind is list:
        return list(value)
    if value is JSON_OBJECT and kind is dict:
        return {}
    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, kind) else None


def is_json_list(value, allowed) -> bool:
    items = parsed_json(value, list)
    return items is not None and all(
        isinstance(item, str) and (not allowed or item in allowed) for item in items)


CHECKS = {
    "text": lambda value, allowed: not isinstance(value, (tuple, JsonObject)),
    "choice": lambda value, allowed: isinstance(value, str) and value in allowed,
    "integer": lambda value, allowed: is_int(value),
    "number": lambda value, allowed: is_number(value),
    "boolean": lambda value, allowed: is_bool(value),
    "json_list": is_json_list,
    "json_object": lambda value, allowed: parsed_json(value, dict) is not None,
}


def allowed_text(name: str, rule: C.ColumnRule) -> str:
    if rule.note:
        return rule.note
    empty = " or empty" if rule.blank else ""
    if rule.kind == "choice":
        return one_of([*rule.allowed, *(["empty"] if rule.blank else [])], quote=rule.allowed)
    if rule.kind == "json_list":
        if name == "categories":
            return (f"a JSON list of category names ({', '.join(rule.allowed)}; exact "
                    f'spelling), e.g. ["Fall", "Diffusion"]{empty}')
        return f'a JSON list of text, e.g. ["timeout"]{empty}'
    if rule.kind == "text" and not rule.blank:
        return "any text (not empty)"
    return {"text": "any text", "integer": "a whole number", "number": "a finite number",
            "boolean": "true or false (or 1 or 0)",
            "json_object": 'a JSON object, e.g. {"key": "f"}'}[rule.kind] + empty


def one_of(values, quote=None) -> str:
    """``'F', 'B' or empty``: the values in ``quote`` (default: all) are quoted."""
    quote = values if quote is None else quote
    shown = [repr(v) if v in quote else str(v) for v in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def shown(value) -> str:
    if blank(value):
        return "empty"
    if isinstance(value, tuple):
        return repr(json.dumps(list(value)))
    return repr(value if not isinstance(value, (np.generic,)) else value.item())
