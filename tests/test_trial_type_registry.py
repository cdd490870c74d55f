"""The trial-type registry is the one list of trial types: what each type names elsewhere
(its metrics, its model task) must exist, and every other list is derived from it."""
import types

import pytest

from analysis import columns as C
from analysis.report import registry
from analysis.vlm.tasks import TASKS as MODEL_TASKS
from experiments import trial_types
from experiments.trial_types import ATTENTION_CHECK, TASKS, TRIAL_TYPES

REQUIRED = ("NAME", "TITLE", "PARAMETERS", "FIELDS", "ANSWERS", "DIRECTIONS", "METRICS",
            "MODEL_TASK", "validate", "build_trial", "public_view", "row_parts", "duration_s")
DESIGN_TASK = ("check_design", "read_conditions", "usable", "rotations", "practice_trials",
               "feedback_answer", "main_trials", "block_factors", "design_trials")


@pytest.mark.parametrize("name", sorted(TRIAL_TYPES))
def test_every_trial_type_declares_the_whole_unit(name):
    module = TRIAL_TYPES[name]
    assert module.NAME == name
    missing = [attr for attr in REQUIRED if not hasattr(module, attr)]
    missing += [attr for attr in DESIGN_TASK if name in TASKS and not hasattr(module, attr)]
    assert not missing, f"trial type {name!r} lacks {missing}"


@pytest.mark.parametrize("name", sorted(TRIAL_TYPES))
def test_named_report_sections_and_model_task_exist(name):
    module = TRIAL_TYPES[name]
    assert set(module.METRICS) <= {section.id for section in registry.SECTIONS}, module.METRICS
    assert module.MODEL_TASK is None or module.MODEL_TASK in MODEL_TASKS


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
