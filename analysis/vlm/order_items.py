"""Frame-ordering model items (EGO-FLIGHT): the frames of a frame set or clip in a seeded
shuffle, with an annotation level and hint frames, and the model-only ordered pairs of frames."""
from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from analysis import columns as C
from analysis.vlm import prompts_order
from analysis.vlm.backends.base import Request
from analysis.vlm.items import HINT_CONFIGS, Item, seeded_rng
from analysis.vlm.sampling import Visual, images, load_video
from experiments.catalog_records import StimulusRecord

if TYPE_CHECKING:
    from analysis.vlm.tasks import TaskSpec


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
        shown = [int(i) for i in seeded_rng(spec, stimulus.id, 2).permutation(n)]
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
        rng = seeded_rng(spec, stimulus.id, 3)
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


def frame_order_trial_items(trials: list[dict], by_id: dict[int, StimulusRecord],
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


def pair_order_trial_items(trials: list[dict], by_id: dict[int, StimulusRecord],
                            spec: TaskSpec, demos, limit: int | None) -> list[Item]:
    """Pairs of the frame sets the study's trials show (a model-only task on top of them)."""
    shown = {trial["stimulus_id"]: by_id[trial["stimulus_id"]] for trial in trials}
    return pair_order_items(sorted(shown.values(), key=lambda s: s.id), spec, limit)
