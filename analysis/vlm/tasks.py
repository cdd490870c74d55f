"""The model tasks: a run's item settings (:class:`TaskSpec`), the registry of tasks
(:data:`TASKS`: arrow of time in :mod:`analysis.vlm.aot_items`, frame ordering and ordered
pairs in :mod:`analysis.vlm.order_items`), and the items of a run on a stimulus set or a study.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from analysis import columns as C
from analysis.vlm import prompt_sets, prompts, prompts_order
from analysis.vlm.aot_items import aot_items, aot_trial_items
from analysis.vlm.items import HINT_CONFIGS, Item
from analysis.vlm.order_items import (
    frame_order_items,
    frame_order_trial_items,
    pair_order_items,
    pair_order_trial_items,
)
from experiments.catalog_records import StimulusRecord

PAIR_PRESENTATIONS = ("both", "random")


@dataclass(frozen=True)
class TaskSpec:
    """Everything about a run's items that is not the model."""

    task: str = "aot"
    setting: str = "zero-shot"
    fps: float | None = 2.0
    n_frames: int | None = None
    metadata_fps: str = "sampled"
    label_orders: tuple[str, ...] = ("FB",)
    task_variant: str = "full"
    annotation: str = "brief"
    hints: str = "none"
    prompt_style: str = "open"
    # The prompt set's language (analysis.vlm.prompt_sets): the papers' English by default.
    prompt_language: str = prompt_sets.PAPER_LANGUAGE
    pair_presentation: str = "both"
    image_size: int | None = 224
    span: str = "medium"
    seed: int = 0

    def __post_init__(self):
        checks = [(self.task, tuple(TASKS)), (self.setting, prompts.AOT_SETTINGS),
                  (self.task_variant, C.TASK_VARIANTS[:3]),
                  (self.annotation, prompts_order.ANNOTATION_LEVELS),
                  (self.hints, tuple(HINT_CONFIGS)), (self.pair_presentation, PAIR_PRESENTATIONS)]
        for value, allowed in checks:
            if value not in allowed:
                raise ValueError(f"{value!r} is not one of {allowed}")
        if not set(self.label_orders) <= set(C.LABEL_ORDERS) or not self.label_orders:
            raise ValueError(f"label orders must be from {C.LABEL_ORDERS}")
        twice = sorted({o for o in self.label_orders if self.label_orders.count(o) > 1})
        if twice:  # each would ask every clip twice, and count it twice in the report
            raise ValueError(f"label order {', '.join(twice)} is given twice in "
                             f"--label-orders {','.join(self.label_orders)}")
        # A set: FB,BF and BF,FB ask the same items, so they are one run (canonical order).
        object.__setattr__(self, "label_orders", tuple(
            o for o in C.LABEL_ORDERS if o in self.label_orders))
        prompt_sets.check(self.prompt_language, self.task, self.setting)

    def sampling(self) -> dict:
        return {"fps": self.fps, "n_frames": self.n_frames, "metadata_fps": self.metadata_fps}


def build_items(stimuli: list[StimulusRecord], spec: TaskSpec,
                demos: dict[str, StimulusRecord] | None = None,
                limit: int | None = None) -> list[Item]:
    """The items of a run on a set's stimuli, in a deterministic order: all, or the first
    ``limit`` (only the stimuli those show are decoded)."""
    stimuli = sorted(stimuli, key=lambda s: s.id)
    return TASKS[spec.task].items(stimuli, spec, demos, limit)[:limit]


def trial_items(trials: list[dict], records: list[StimulusRecord], spec: TaskSpec,
                demos: dict[str, StimulusRecord] | None = None,
                limit: int | None = None) -> list[Item]:
    """The items of a run on a study: built from the trials its design can show
    (``experiments.schedule.design_trials``), in their order, so that a model sees what a
    participant would; model-only options of ``spec`` (label orders, TOMATO variants,
    settings, pairs) apply on top."""
    by_id = {record.id: record for record in records}
    return TASKS[spec.task].from_trials(trials, by_id, spec, demos, limit)[:limit]


@dataclass(frozen=True)
class ModelTask:
    """A model task: its items from a set's stimuli (``items``) and from a study's scheduled
    trials (``from_trials``), and what about it a run's settings depend on."""

    items: Callable[..., list[Item]]  # (stimuli, spec, demos, limit)
    from_trials: Callable[..., list[Item]]  # (trials, stimuli by id, spec, demos, limit)
    asks: str  # the trial type (a design's task) whose trials a study run is built from
    prompt_settings: bool = False  # AoT-PsyPhyBENCH settings: demonstrations, chain of thought
    logit_scored: bool = True  # a first-token answer (frame orders are lists)
    sampled_at_rate: bool = False  # frames sampled at a frame rate (else stored frame sets)
    trial_options: tuple[str, ...] = ()  # options a study's trials set (not the run)
    ignores: tuple[str, ...] = ()  # TaskSpec fields its items never read (not its identity)


# Model tasks by name: a trial type names its own in MODEL_TASK (experiments/trial_types/);
# pair_order is a model-only task (EGO-FLIGHT's pairwise order) with no human trial type.
TASKS: dict[str, ModelTask] = {
    "aot": ModelTask(aot_items, aot_trial_items, asks=C.AOT, prompt_settings=True,
                     sampled_at_rate=True,
                     ignores=("annotation", "hints", "span", "prompt_style",
                              "pair_presentation", "image_size")),
    "frame_order": ModelTask(
        lambda stimuli, spec, demos, limit: frame_order_items(stimuli, spec, limit),
        frame_order_trial_items, asks=C.FRAME_ORDER, logit_scored=False,
        trial_options=("annotation", "hints", "span", "n_frames")),
    "pair_order": ModelTask(
        lambda stimuli, spec, demos, limit: pair_order_items(stimuli, spec, limit),
        pair_order_trial_items, asks=C.FRAME_ORDER),
}


def design_task(design_name: str, design_type: str, model_task: str | None,
                task: str | None) -> str:
    """The model task of a run on a study whose design is built around ``design_type``
    (whose trial type names ``model_task``): ``task`` if the design's trials can ask it,
    else its own.

    Raises
    ------
    ValueError
        For a task the design's trials cannot ask, naming the design and its task.
    """
    if model_task is None:
        raise ValueError(f"design {design_name!r} ({design_type} trials) asks models nothing")
    if task is None:
        return model_task
    if TASKS[task].asks != design_type:
        others = [name for name, t in TASKS.items() if t.asks == design_type]
        raise ValueError(f"--task {task}: design {design_name!r} shows {design_type} trials, "
                         f"whose task is {model_task!r}; use --task {' or '.join(others)}, "
                         "or --set for the stimuli without the study's design")
    return task
