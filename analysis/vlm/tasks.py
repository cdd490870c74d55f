"""Turn stimuli into model items: arrow of time (with TOMATO diagnostics), frame ordering,
ordered pairs.  Every random choice (frame shuffles, pair presentation) comes from
``numpy.random.default_rng([seed, stimulus_id, ...])``, so the same seed gives every model
exactly the same presentations (EGO-FLIGHT sec. 3.3).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

from analysis import columns as C
from analysis.vlm import prompts, prompts_order
from analysis.vlm.backends.base import Request
from analysis.vlm.parsers import parse_arrow_of_time, parse_choice, parse_frame_order
from analysis.vlm.sampling import Visual, images, load_video, subset
from experiments.catalog_records import StimulusRecord

HINT_CONFIGS = {"none": (), "1&3": (1, 3), "2&4": (2, 4)}
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

    def sampling(self) -> dict:
        return {"fps": self.fps, "n_frames": self.n_frames, "metadata_fps": self.metadata_fps}


@dataclass
class Item:
    """One model trial: a request, how to parse and score it, and its canonical fields."""

    key: str
    trial_type: str
    stimulus: StimulusRecord
    request: Request
    labels: tuple[str, ...]
    correct_response: object
    extra: dict
    n_frames_order: int = 0  # frame-ordering items: number of frames to parse

    def parse(self, text: str | None):
        if self.trial_type == C.FRAME_ORDER:
            return parse_frame_order(text, self.n_frames_order)
        if self.labels == ("F", "B"):
            return parse_arrow_of_time(text)
        return parse_choice(text, self.labels)

    @property
    def scorable(self) -> bool:
        """Logit scoring applies where the answer is the first generated token: not to frame
        orders, and not to chain-of-thought settings, whose answer follows the reasoning."""
        chain_of_thought = self.extra.get(C.EXTRA_SETTING) in prompts.COT_SETTINGS
        return self.trial_type != C.FRAME_ORDER and not chain_of_thought


def _rng(spec: TaskSpec, *parts: int) -> np.random.Generator:
    return np.random.default_rng([spec.seed, *parts])


def _video(stimulus: StimulusRecord, spec: TaskSpec) -> Visual:
    if stimulus.kind == "frame_set":
        raise ValueError("frame sets are shown as images, not videos")
    return load_video(stimulus.path, fps=spec.fps, n_frames=spec.n_frames,
                      mirrored=stimulus.direction == C.BACKWARD,
                      metadata_fps=spec.metadata_fps, sha256=stimulus.sha256)


def _variant(video: Visual, spec: TaskSpec, stimulus: StimulusRecord) -> Visual:
    """TOMATO conditions: the full clip, its frames shuffled, or one random frame."""
    n = len(video.frame_indices)
    rng = _rng(spec, stimulus.id, 1)
    if spec.task_variant == "shuffled":
        return subset(video, [int(i) for i in rng.permutation(n)])
    if spec.task_variant == "single_frame":
        return subset(video, [int(rng.integers(n))])
    return video


def aot_items(stimuli: list[StimulusRecord], spec: TaskSpec,
              demos: dict[str, StimulusRecord] | None = None,
              limit: int | None = None) -> list[Item]:
    """Arrow-of-time items: one per clip stimulus and label order; demo clips left out.

    ``demos`` maps benchmark item ids to stimuli; few-shot and CoT settings need theirs
    (AoT-PsyPhyBENCH sec. 4.2: demonstrations are excluded from the test set).
    """
    demos = demos or {}
    demo_ids = [item_id for item_id, _ in prompts.demonstrations(spec.setting)]
    missing = [d for d in demo_ids if d not in demos]
    if missing:
        raise ValueError(f"setting {spec.setting!r} needs demonstration clips {missing}, "
                         "which are not in this stimulus set")
    demo_visuals = [_video(demos[d], spec) for d in demo_ids]
    tests = [s for s in stimuli if s.kind == "clip" and s.item_id not in demo_ids]
    if limit is not None:  # decode only the clips the first ``limit`` items show
        tests = tests[:-(-limit // len(spec.label_orders))]
    videos = {s.id: _video(s, spec) for s in tests}
    checks = reversal_checks(tests, videos)
    items = []
    for stimulus in tests:
        test = _variant(videos[stimulus.id], spec, stimulus)
        for order in spec.label_orders:
            request = Request(prompts.aot_messages(spec.setting, order), [*demo_visuals, test])
            extra: dict[str, object] = {C.EXTRA_SETTING: spec.setting, C.EXTRA_LABEL_ORDER: order,
                     C.EXTRA_TASK_VARIANT: spec.task_variant, "demo_item_ids": demo_ids}
            if stimulus.source_clip_id in checks:
                extra["reversal_mad"] = checks[stimulus.source_clip_id]
            items.append(Item(f"aot:{stimulus.id}:{order}", C.AOT, stimulus, request,
                              ("F", "B"), "F" if stimulus.direction == C.FORWARD else "B", extra))
    return items


def reversal_checks(stimuli: list[StimulusRecord],
                    videos: dict[int, Visual]) -> dict[int | None, float]:
    """Check each backward sample against the flipped forward sample of its source clip.

    Raises ``ValueError`` (via ``experiments.reversal.check_alignment``) when a stored
    reversed clip is not the frame-exact reverse; returns the mean absolute difference
    (codec noise, grey levels) per source clip.
    """
    from experiments.reversal import check_alignment

    by_clip: dict[int | None, dict[str | None, Visual]] = {}
    for s in stimuli:
        by_clip.setdefault(s.source_clip_id, {})[s.direction] = videos[s.id]
    out: dict[int | None, float] = {}
    for clip_id, pair in by_clip.items():
        if C.FORWARD in pair and C.BACKWARD in pair:
            forward, backward = pair[C.FORWARD].frames, pair[C.BACKWARD].frames
            try:
                stats = check_alignment(forward[::-1], backward)
            except ValueError as error:
                raise ValueError(f"source clip {clip_id}: stored reversed clip is not the "
                                 f"reverse of the forward clip: {error}") from error
            out[clip_id] = round(stats["mad_mean"], 4)
    return out


def _frames_for_order(stimulus: StimulusRecord, spec: TaskSpec) -> Visual:
    """The frames to order, in true temporal order (a frame set's own indices if it has them)."""
    if stimulus.kind == "frame_set":
        from PIL import Image

        files = sorted(Path(stimulus.path).glob("frame_*.png"))
        if len(files) != len(stimulus.frame_indices or ()):
            raise ValueError(f"frame set {stimulus.id}: {len(files)} files for "
                             f"{len(stimulus.frame_indices or ())} indices")
        frames = np.stack([np.array(Image.open(f).convert("RGB")) for f in files])
        indices = list(stimulus.frame_indices or ())
        return Visual("video", frames, indices, stimulus.clip_fps, stimulus.clip_frame_count,
                      stimulus.clip_fps, stimulus.sha256)
    if spec.n_frames is None:
        raise ValueError("frame ordering from clips needs n_frames")
    return load_video(stimulus.path, n_frames=spec.n_frames, sha256=stimulus.sha256)


def _resize(visuals: list[Visual], size: int | None) -> list[Visual]:
    """EGO-FLIGHT shows 224x224 frames; resizing happens before hashing, so it is keyed."""
    if size is None:
        return visuals
    from PIL import Image

    for visual in visuals:
        frame = Image.fromarray(visual.frames[0]).resize((size, size), Image.Resampling.BICUBIC)
        visual.frames = np.array(frame)[None]
        visual.meta["resized_to"] = size
    return visuals


def _context(stimulus: StimulusRecord, level: str) -> str | None:
    if level == "none":
        return None
    text = stimulus.annotations.get(level)
    if not text:
        raise ValueError(f"stimulus {stimulus.id} has no {level} annotation")
    return text


def check_hints(hints: str, n: int) -> None:
    """Refuse hints that name a position beyond ``n`` frames or leave nothing to order."""
    positions = HINT_CONFIGS[hints]
    if positions and (max(positions) > n or len(positions) >= n - 1):
        raise ValueError(f"--hints {hints} gives away positions {list(positions)} of "
                         f"{n}-frame items, which leaves nothing to order; use --hints none "
                         "or more frames (--n-frames)")


def frame_order_items(stimuli: list[StimulusRecord], spec: TaskSpec,
                      limit: int | None = None) -> list[Item]:
    """EGO-FLIGHT frame ordering: seeded shuffles, annotation level, optional hints."""
    items: list[Item] = []
    for stimulus in order_sources(stimuli, spec.n_frames, spec.span)[:limit]:
        frames = _frames_for_order(stimulus, spec)
        n = len(frames.frame_indices)
        check_hints(spec.hints, n)
        shown = [int(i) for i in _rng(spec, stimulus.id, 2).permutation(n)]
        correct = [shown.index(t) + 1 for t in range(n)]  # labels in chronological order
        hints = {correct[pos - 1]: pos for pos in HINT_CONFIGS[spec.hints]}
        text = prompts_order.frame_order_text(n, _context(stimulus, spec.annotation),
                                              hints or None, spec.prompt_style)
        request = Request(prompts_order.frame_order_messages(n, text),
                          _resize(images(frames, shown), spec.image_size))
        extra = {C.EXTRA_CONDITION: _condition(n, spec), C.EXTRA_HINT_FRAMES: sorted(hints),
                 "span": stimulus.span,
                 "presented_frame_indices": [frames.frame_indices[i] for i in shown],
                 "annotation": spec.annotation, "prompt_style": spec.prompt_style}
        items.append(Item(f"order:{stimulus.id}", C.FRAME_ORDER, stimulus, request,
                          (), correct, extra, n_frames_order=n))
    return items


def order_sources(stimuli: list[StimulusRecord], n_frames: int | None,
                  span: str | None = "medium") -> list[StimulusRecord]:
    """The stored frame sets of ``n_frames`` frames over ``span`` (else over the whole clip),
    else the forward clips to sample from."""
    sets = [s for s in stimuli if s.kind == "frame_set"
            and (n_frames is None or len(s.frame_indices or ()) == n_frames)]
    for wanted in (span, None):
        chosen = [s for s in sets if s.span == wanted]
        if chosen:
            return chosen
    return [s for s in stimuli if s.kind == "clip" and s.direction == C.FORWARD]


def _condition(n: int, spec: TaskSpec) -> str:
    hint = "" if spec.hints == "none" else f", hint {spec.hints}"
    return f"{n} frames, {spec.annotation} annotation{hint}"


def pair_order_items(stimuli: list[StimulusRecord], spec: TaskSpec,
                     limit: int | None = None) -> list[Item]:
    """Ordered pairs of frames: all C(n, 2) pairs, shown in both orders or one seeded order."""
    items: list[Item] = []
    for stimulus in order_sources(stimuli, spec.n_frames, spec.span):
        if limit is not None and len(items) >= limit:
            break
        frames = _frames_for_order(stimulus, spec)
        context = _context(stimulus, spec.annotation)
        rng = _rng(spec, stimulus.id, 3)
        for early, late in combinations(range(len(frames.frame_indices)), 2):
            orders = (("AB", "BA") if spec.pair_presentation == "both"
                      else (str(rng.choice(["AB", "BA"])),))
            for order in orders:
                shown = [early, late] if order == "AB" else [late, early]
                request = Request(prompts_order.pairwise_messages(context),
                                  _resize(images(frames, shown), spec.image_size))
                pair_id = f"{stimulus.id}:{early}-{late}"
                extra = {C.EXTRA_PAIR_ORDER: str(order), C.EXTRA_PAIR_ID: pair_id,
                         "presented_frame_indices": [frames.frame_indices[i] for i in shown]}
                items.append(Item(f"pair:{pair_id}:{order}", C.PAIR_ORDER, stimulus, request,
                                  ("A", "B"), "A" if order == "AB" else "B", extra))
    return items


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


def _aot_trial_items(trials: list[dict], by_id: dict[int, StimulusRecord], spec: TaskSpec,
                     demos: dict[str, StimulusRecord] | None, limit: int | None) -> list[Item]:
    """Each arrow-of-time trial's clip, in its direction."""
    shown = []
    for trial in trials:
        stimulus = by_id[trial["stimulus_id"]]
        if stimulus.direction != trial["direction"]:
            raise ValueError(f"trial {trial['trial_index']}: stimulus {stimulus.id} plays "
                             f"{stimulus.direction}, the trial {trial['direction']}")
        shown.append(stimulus)
    return aot_items(shown, spec, demos, limit)


def _frame_order_trial_items(trials: list[dict], by_id: dict[int, StimulusRecord],
                             spec: TaskSpec, demos, limit: int | None) -> list[Item]:
    """Each frame-ordering trial as a participant sees it: its frames in their presented
    order, its annotation and hint frames, its condition's name."""
    return [_frame_order_trial_item(trial, by_id[trial["stimulus_id"]], spec)
            for trial in trials[:limit]]


def _frame_order_trial_item(trial: dict, stimulus: StimulusRecord, spec: TaskSpec) -> Item:
    params = trial["params"]
    frames = _frames_for_order(stimulus, spec)
    # Slot s (the model's image s + 1) holds label presented_order[s], which shows the
    # chronological frame trial["frames"][label].
    labels = [int(label) for label in params["presented_order"]]
    shown = [int(trial["frames"][label]) for label in labels]
    n = len(shown)
    correct = [shown.index(t) + 1 for t in range(n)]  # images in chronological order
    hints = {slot + 1: shown[slot] + 1 for slot in params["hint_positions"]}
    text = prompts_order.frame_order_text(n, params["annotation"], hints or None,
                                          spec.prompt_style)
    request = Request(prompts_order.frame_order_messages(n, text),
                      _resize(images(frames, shown), spec.image_size))
    extra = {C.EXTRA_CONDITION: trial["condition"], C.EXTRA_HINT_FRAMES: sorted(hints),
             "n_frames": n, "span": trial["span"], "annotation_level": trial["annotation_level"],
             "presented_frames": shown,
             "presented_frame_indices": [frames.frame_indices[i] for i in shown],
             "prompt_style": spec.prompt_style}
    return Item(f"order:{stimulus.id}:{trial['condition']}", C.FRAME_ORDER, stimulus, request,
                (), correct, extra, n_frames_order=n)


def _pair_order_trial_items(trials: list[dict], by_id: dict[int, StimulusRecord],
                            spec: TaskSpec, demos, limit: int | None) -> list[Item]:
    """Pairs of the frame sets the study's trials show (a model-only task on top of them)."""
    shown = {trial["stimulus_id"]: by_id[trial["stimulus_id"]] for trial in trials}
    return pair_order_items(sorted(shown.values(), key=lambda s: s.id), spec, limit)


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


# Model tasks by name: a trial type names its own in MODEL_TASK (experiments/trial_types/);
# pair_order is a model-only task (EGO-FLIGHT's pairwise order) with no human trial type.
TASKS: dict[str, ModelTask] = {
    "aot": ModelTask(aot_items, _aot_trial_items, asks=C.AOT, prompt_settings=True,
                     sampled_at_rate=True),
    "frame_order": ModelTask(
        lambda stimuli, spec, demos, limit: frame_order_items(stimuli, spec, limit),
        _frame_order_trial_items, asks=C.FRAME_ORDER, logit_scored=False,
        trial_options=("annotation", "hints", "span", "n_frames")),
    "pair_order": ModelTask(
        lambda stimuli, spec, demos, limit: pair_order_items(stimuli, spec, limit),
        _pair_order_trial_items, asks=C.FRAME_ORDER),
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
