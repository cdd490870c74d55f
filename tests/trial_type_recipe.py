"""The recipe's checks (ARCHITECTURE.md, "Adding a trial type: the recipe"), each naming
what a trial type or a design still lacks.  tests/test_trial_type_registry.py runs them over
every registered type and design; tests/test_add_trial_type.py over its toy type, with every
step of the recipe and without each one."""
from analysis.report import registry as report_registry
from analysis.vlm.tasks import TASKS as MODEL_TASKS
from experiments import study_file, texts
from experiments.designs import DESIGNS
from experiments.trial_types import TASKS, TRIAL_TYPES, TaskType, TrialType
from experiments.trial_types.contract import members
from webapp.researcher import studies


def module_problems(name: str) -> list[str]:
    """Steps 1-2: the module declares the whole contract (what mypy checks, at run time too),
    is in the registries, and what it names exists; a task has a design built around it."""
    module = TRIAL_TYPES.get(name)
    if module is None:
        return [f"{name!r} is not in TRIAL_TYPES"]
    contract = TaskType if name in TASKS else TrialType
    problems = [f"{name!r} lacks {member}" for member in members(contract)
                if not hasattr(module, member)]
    if problems:
        return problems
    if module.NAME != name:
        problems.append(f"{name!r} is registered under another NAME, {module.NAME!r}")
    for section in set(module.METRICS) - {section.id for section in report_registry.SECTIONS}:
        problems.append(f"{name!r}: its report section {section!r} does not exist")
    if module.MODEL_TASK is not None and module.MODEL_TASK not in MODEL_TASKS:
        problems.append(f"{name!r}: its model task {module.MODEL_TASK!r} does not exist")
    if name in TASKS and not any(design.task == name for design in DESIGNS.values()):
        problems.append(f"{name!r}: no design in DESIGNS is built around it")
    return problems


def task_keys(task: str) -> list[str]:
    """The texts a task type gives: KEY_task_TASK for each shared text KEY that says {task}
    (the consent and the debrief)."""
    english = texts.defaults(texts.DEFAULT_LANGUAGE)
    return [f"{key}_task_{task}" for key, text in english.items()
            if "task" in texts.placeholders(text) and "_task_" not in key]


def text_problems(name: str) -> list[str]:
    """Step 3: the type's texts file gives each of its keys in every shipped language (a
    task's KEY_task_TASK among them) with only the placeholders of its English text."""
    own = texts.type_texts(TRIAL_TYPES[name])
    english = own.get(texts.DEFAULT_LANGUAGE, {})
    needed = dict.fromkeys([*english, *(task_keys(name) if name in TASKS else ())])
    problems = []
    for language in texts.SHIPPED_LANGUAGES:
        given = own.get(language, {})
        problems += [f"{name!r}: no {language} text {key!r}" for key in needed
                     if key not in given]
        problems += [f"{name!r}: {language} text {key!r} has no English one" for key in given
                     if key not in english]
        problems += [f"{name!r}: {language} text {key!r} has placeholders English has not"
                     for key, text in given.items()
                     if texts.placeholders(text) - texts.placeholders(english.get(key, ""))]
    return problems


def design_problems(design: str) -> list[str]:
    """Steps 4-5: the design is in DESIGNS and ships its study file (studies.SHIPPED_STUDIES,
    experiments/studies/DESIGN.toml), which gives exactly that design, in every shipped
    language."""
    if design not in DESIGNS:
        return [f"{design!r} is not in DESIGNS"]
    path = studies.SHIPPED_STUDIES / f"{design}.toml"
    if not path.is_file():
        return [f"{design!r} has no shipped study file {path.name}"]
    try:
        config = study_file.load(path)
    except study_file.StudyFileError as error:
        return [f"{path.name}: {error}"]
    problems = []
    if config.design.to_dict() != DESIGNS[design].to_dict():
        problems.append(f"{path.name} does not give the design {design!r} as DESIGNS has it")
    if config.languages != texts.SHIPPED_LANGUAGES:
        problems.append(f"{path.name} offers {config.languages}, not {texts.SHIPPED_LANGUAGES}")
    return problems
