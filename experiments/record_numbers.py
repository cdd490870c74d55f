"""The numbers of a stored trial record's fields, read without trusting them.

Fields stored through the participant API are validated, but the rules also read records
from CSV files and simulations, where a cell may be empty (NaN), a bool, text or missing.
The exclusion, plausibility and timing-quality rules read every numeric field here.
"""
from __future__ import annotations

import math


def number(value) -> float | None:
    """``value`` as a float; None for None, a bool (True is not 1 ms), text that is not a
    number and NaN (an empty CSV cell). Infinities and negative numbers are kept."""
    if value is None or isinstance(value, bool):
        return None
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(result) else result


def count(value) -> float | None:
    """A finite number >= 0 (a count of frames, a duration), else None."""
    result = number(value)
    return result if result is not None and math.isfinite(result) and result >= 0 else None
