"""The one reader of a record's numeric fields, which the exclusion, plausibility and
timing-quality rules share."""
import math

import pytest

from experiments import plausibility
from experiments.record_numbers import count, number


@pytest.mark.parametrize("value, expected", [
    (12, 12.0), (2.5, 2.5), ("2.5", 2.5), (-3, -3.0), (math.inf, math.inf),
    (None, None), (True, None), (False, None), (math.nan, None), ("", None), ("abc", None),
    ([1], None), ({}, None)])
def test_a_number_is_a_float_and_anything_else_is_missing(value, expected):
    assert number(value) == expected


@pytest.mark.parametrize("value, expected", [
    (0, 0.0), (3, 3.0), ("7", 7.0), (-1, None), (math.inf, None), (math.nan, None),
    (True, None), ("three", None), (None, None)])
def test_a_count_is_finite_and_not_negative(value, expected):
    assert count(value) == expected


def test_a_clock_field_that_is_not_a_number_is_inconsistent_not_an_error():
    """A record read from a file rather than the API (which checks the type) once raised
    ValueError here: the plausibility rules had their own reader, without the guard."""
    record = {"response": "F", "rt_ms": 800.0,
              "extra": {"onset_time_ms": "soon", "key_time_ms": 1800.0}}
    assert plausibility.clock_consistent(record) is False
