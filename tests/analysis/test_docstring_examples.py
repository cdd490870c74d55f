"""The Examples sections of the analysis docstrings run and give what they show."""
import doctest
import importlib

import pytest

MODULES = ["aot", "bootstrap", "diagnostics", "exclusions", "intervals", "loading", "ordering", "pairs",
           "participant_sdt", "rt", "simulate", "tra"]


@pytest.mark.parametrize("name", MODULES)
def test_examples(name):
    module = importlib.import_module(f"analysis.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
