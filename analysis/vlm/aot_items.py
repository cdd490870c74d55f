"""Arrow-of-time model items: each clip in its direction, with the TOMATO variants (full,
shuffled, single frame), AoT-PsyPhyBENCH demonstrations, and a check that every stored
reversed clip is the frame-exact reverse of its forward clip."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from analysis import columns as C
from analysis.vlm import prompt_sets, prompts
from analysis.vlm.backends.base import Request
from analysis.vlm.items import Item, seeded_rng
from analysis.vlm.sampling import Visual, load_video, subset
from experiments.catalog_records import StimulusRecord

if TYPE_CHECKING:
    from analysis.vlm.tasks import TaskSpec


def _video(stimulus: StimulusRecord, spec: TaskSpec) -> Visual:
    if stimulus.kind == "frame_set":
        raise ValueError("frame sets are shown as images, not videos")
    return load_video(stimulus.path, fps=spec.fps, n_frames=spec.n_frames,
                      mirrored=stimulus.direction == C.BACKWARD,
                      metadata_fps=spec.metadata_fps, sha256=stimulus.sha256)


def _variant(video: Visual, spec: TaskSpec, stimulus: StimulusRecord) -> Visual:
    """TOMATO conditions: the full clip, its frames shuffled, or one random frame."""
    n = len(video.frame_indices)
    rng = seeded_rng(spec, stimulus.id, 1)
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
    check_frames(tests, videos, spec, MIN_FRAMES)
    checks = reversal_checks(tests, videos)
    items = []
    for stimulus in tests:
        test = _variant(videos[stimulus.id], spec, stimulus)
        for order in spec.label_orders:
            request = Request(prompts.aot_messages(spec.setting, order,
                                                    language=spec.prompt_language), [*demo_visuals, test])
            extra: dict[str, object] = {C.EXTRA_SETTING: spec.setting, C.EXTRA_LABEL_ORDER: order,
                     C.EXTRA_TASK_VARIANT: spec.task_variant, "demo_item_ids": demo_ids}
            if spec.prompt_language != prompt_sets.PAPER_LANGUAGE:  # an observer of its own
                extra[C.EXTRA_PROMPT_LANGUAGE] = spec.prompt_language
            if stimulus.source_clip_id in checks:
                extra["reversal_mad"] = checks[stimulus.source_clip_id]
            items.append(Item(f"aot:{stimulus.id}:{order}", C.AOT, stimulus, request,
                              ("F", "B"), "F" if stimulus.direction == C.FORWARD else "B", extra))
    return items


MIN_FRAMES = 2  # one frame has no arrow of time


def check_frames(stimuli: list[StimulusRecord], videos: dict[int, Visual], spec: TaskSpec,
                 minimum: int, who: str = "the arrow of time") -> None:
    """Refuse, before any call, clips sampled to fewer than ``minimum`` frames, naming them
    and the ``--fps`` that gives each enough (a short cut at 2 fps is one frame: no arrow of
    time, yet a model answers it)."""
    short = [s for s in stimuli if len(videos[s.id].frame_indices) < minimum]
    if not short:
        return
    sampled = f"--fps {spec.fps:g}" if spec.fps is not None else f"--n-frames {spec.n_frames}"
    named = ", ".join(f"stimulus {s.id} ({videos[s.id].total_frames} frames at "
                      f"{videos[s.id].native_fps:g} fps)" for s in short[:5])
    more = f" and {len(short) - 5} more" if len(short) > 5 else ""
    if any(videos[s.id].total_frames < minimum for s in short):
        remedy = f"leave out clips of fewer than {minimum} frames"
    else:  # the sample's step must fit (minimum - 1) times into the clip's frames
        fps = max(videos[s.id].native_fps * (minimum - 1) / (videos[s.id].total_frames - 1)
                  for s in short)
        remedy = f"--fps {math.ceil(fps * 100) / 100:g} or --n-frames {minimum} gives each at least {minimum}"
    raise ValueError(f"{len(short)} clips are sampled to fewer than {minimum} frames by "
                     f"{sampled}, and {who} needs {minimum}: {named}{more}; {remedy}")


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


def aot_trial_items(trials: list[dict], by_id: dict[int, StimulusRecord], spec: TaskSpec,
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
