"""The trial-type registry is the one list of trial types: every registered type and design
passes the recipe's checks (tests/trial_type_recipe.py), and every other list is derived from
the registry."""
import types

import pytest

from analysis import columns as C
from experiments import trial_types
from experiments.designs import DESIGNS
from experiments.trial_types import ATTENTION_CHECK, TASKS, TRIAL_TYPES
from tests.trial_type_recipe import design_problems, module_problems, text_problems


@pytest.mark.parametrize("name", sorted(TRIAL_TYPES))
def test_every_trial_type_declares_the_whole_unit(name):
    assert module_problems(name) == []


@pytest.mark.parametrize("name", sorted(TRIAL_TYPES))
def test_every_trial_type_has_its_texts_in_every_shipped_language(name):
    assert text_problems(name) == []


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_every_design_ships_its_study_file(name):
    assert design_problems(name) == []


def test_other_lists_of_trial_types_are_derived_from_the_registry():
    assert set(TASKS) <= set(TRIAL_TYPES) and ATTENTION_CHECK in TRIAL_TYPES
    assert set(TRIAL_TYPES) <= set(C.TRIAL_TYPES)
    assert set(C.TRIAL_TYPES) - set(TRIAL_TYPES) == {"pair_order"}  # model-only
    assert set(trial_types.DIRECTIONLESS) == {n for n, m in TRIAL_TYPES.items() if not m.DIRECTIONS}
    assert set(C.DIRECTIONLESS_TRIAL_TYPES) == {*trial_types.DIRECTIONLESS, "pair_order"}
    assert set(C.ANSWER_CODES) == set(C.TRIAL_TYPES)


def test_derived_lists_follow_the_registry_when_it_changes(monkeypatch):
    """Nothing copies the registry at import: a type registered later is in every list."""
    toy = types.SimpleNamespace(NAME="toy", ANSWERS=("F", "B"), DIRECTIONS=())
    monkeypatch.setitem(TRIAL_TYPES, "toy", toy)
    assert "toy" in trial_types.BROWSER_TYPES and "toy" in trial_types.DIRECTIONLESS
    assert "toy" in C.TRIAL_TYPES and C.ANSWER_CODES["toy"] == ("F", "B")
    assert "toy" in C.COLUMN_RULES["trial_type"].allowed
    assert "'toy'" in C.COLUMN_RULES["direction"].note
