"""AoT-PsyPhyBENCH's evaluation protocol as data: settings, test items, demonstrations,
frame rates and decoding parameters per model family (Matta et al., sec. 4).

The prompt texts themselves live with the model runner (``analysis.vlm.prompts``); this
module says *which* items and demonstrations a setting uses and how each model family is
sampled, so the runner and the report agree on one definition.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from experiments.benchmarks import aot_psyphybench as bench

# Figures 2 and 3: the Simple CoT traces (not in the release files), for the same two
# videos as the multi-step traces.
SIMPLE_COT_TRACES = {
    "00058": ("The sequence of events shows a building being demolished, with a wrecking machine "
              "tearing parts of it down. This process makes physical sense. Therefore, the video "
              "is playing forward.\nF"),
    "00012_rev": (
        "This scene appears to take place on the water, where a large splash is occurring. It "
        "looks like an explosion happened underwater. The splash is very large at the beginning "
        "but gradually becomes smaller and eventually converges to a single point. In the "
        "background, I can see a bridge and a boat or cruise ship on the left side, floating on "
        "the water. The boat seems to be moving, but it is difficult to tell whether it is moving "
        "forward or in reverse. Since the splash starts out large and gradually converges to a "
        "small point, it contradicts the physical law that an explosion should begin small and "
        "expand outward. Therefore, this video is being played backward.\nB"),
}


@dataclass(frozen=True)
class Setting:
    """One prompting setting of the paper (sec. 4.1-4.3)."""

    name: str
    demos: str  # "none" | "few_shot" | "simple_cot" | "multi_step_cot"
    n_demos: int
    instruction: str  # which user instruction: "sec. 4.1", "Figure 6", "Figure 7"
    tables: tuple[int, ...]  # where the paper reports it


SETTINGS = {
    "zero-shot": Setting("zero-shot", "none", 0, "sec. 4.1", (2, 4, 7, 9, 12)),
    "few-shot-2": Setting("few-shot-2", "few_shot", 2, "sec. 4.1", (3, 5, 8, 10)),
    "few-shot-4": Setting("few-shot-4", "few_shot", 4, "sec. 4.1", (3, 8)),
    "simple-cot": Setting("simple-cot", "simple_cot", 2, "Figure 6", (5, 10)),
    "multi-step-cot": Setting("multi-step-cot", "multi_step_cot", 2, "Figure 7", (5, 10)),
}


def setting(name: str) -> Setting:
    """The setting called ``name`` (the paper's spelling, which the runner stores too)."""
    try:
        return SETTINGS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown setting {name!r}; choose from {list(SETTINGS)}") from None


def demonstrations(name: str) -> tuple[bench.Demonstration, ...]:
    """The demonstrations of a setting, in the paper's order (empty for zero-shot).

    Few-shot settings take the first ``n`` of the 4 released demonstrations (00058 F,
    00012_rev B, 00186 F, 00271_rev B), so 2-shot shows one forward and one backward clip;
    both CoT settings use 00058 and 00012_rev (sec. 4.3), with the Simple traces of
    Figures 2-3 or the released multi-step traces.
    """
    spec = setting(name)
    if spec.demos == "none":
        return ()
    if spec.demos == "multi_step_cot":
        return bench.read_demonstrations(bench.MULTI_STEP_COT_JSON)[: spec.n_demos]
    few_shot = bench.read_demonstrations(bench.FEW_SHOT_JSON)
    if spec.demos == "few_shot":
        return few_shot[: spec.n_demos]
    by_id = {demo.item_id: demo for demo in few_shot}
    return tuple(bench.Demonstration(item_id, by_id[item_id].clip_id, by_id[item_id].direction,
                                     by_id[item_id].label, trace)
                 for item_id, trace in SIMPLE_COT_TRACES.items())


def excluded_item_ids(name: str) -> list[str]:
    """Items left out of a setting's test set: the 4 demonstration videos, in any setting
    that shows demonstrations.

    Sec. 4.2: "These four demonstration videos were excluded from the test set".  The same
    4 are left out of 2-shot and CoT runs too, so every demonstration setting is scored on
    the same 420 items and Tables 3 and 5 compare like with like.
    """
    if setting(name).demos == "none":
        return []
    return [demo.item_id for demo in bench.read_demonstrations(bench.FEW_SHOT_JSON)]


def setting_items(name: str, items: tuple[bench.BenchmarkItem, ...] | None = None
               ) -> list[bench.BenchmarkItem]:
    """The items a setting is scored on: 424 for zero-shot, 420 with demonstrations."""
    items = bench.read_items() if items is None else items
    excluded = set(excluded_item_ids(name))
    return [item for item in items if item.item_id not in excluded]


@dataclass(frozen=True)
class ModelFamily:
    """Frame rate and decoding parameters the paper used for a family (sec. 4.6)."""

    name: str
    pattern: str  # regex on the lower-cased model name without its hub owner
    fps: float
    decoding: dict = field(default_factory=dict)  # empty: the API's defaults
    api: bool = False


_OPEN = {"temperature": 0.6, "top_p": 0.95}
MODEL_FAMILIES = (
    ModelFamily("Qwen2-VL", r"qwen2[-_]?vl", 2.0, _OPEN),
    ModelFamily("Qwen2.5-VL", r"qwen2\.5[-_ ]?vl", 2.0, _OPEN),
    ModelFamily("QVQ", r"^qvq", 2.0, _OPEN),
    ModelFamily("Cosmos-Reason1", r"cosmos[-_]?reason1", 4.0,
                {**_OPEN, "repetition_penalty": 1.05}),
    ModelFamily("GPT-4o / GPT-4.1", r"^gpt-4(o|\.1)", 4.0,
                {**_OPEN, "frequency_penalty": 0.0}, api=True),
    ModelFamily("OpenAI reasoning (o3, o4-mini, GPT-5)", r"^(o3|o4-mini|gpt-5)", 4.0, {}, api=True),
    ModelFamily("Gemini-2.5-Pro", r"^gemini-2\.5-pro", 4.0,
                {"temperature": 1.0, "top_p": 0.95}, api=True),
)


# A hub cache folder: <HF_HOME>/hub/models--<org>--<name>/snapshots/<commit>
_SNAPSHOT = re.compile(r"models--([^/\\]+?)--([^/\\]+)[/\\]snapshots[/\\][^/\\]+$")


def model_name(model: str) -> str:
    """The name ``model`` goes by: a hub snapshot folder's hub id (``org/name``), else
    ``model`` without a trailing slash.

    Examples
    --------
    >>> model_name("/hf/hub/models--nvidia--Cosmos-Reason1-7B/snapshots/3f2a/")
    'nvidia/Cosmos-Reason1-7B'
    """
    model = model.strip().rstrip("/\\")
    snapshot = _SNAPSHOT.search(model)
    return f"{snapshot[1]}/{snapshot[2]}" if snapshot else model


def model_family(model: str) -> ModelFamily:
    """The paper's family of ``model`` (hub id, served name, local path or hub snapshot).

    Raises
    ------
    ValueError
        For a model outside the paper's families: its frame rate must then be given.
    """
    base = re.split(r"[/\\]", model_name(model))[-1].lower()
    for family in MODEL_FAMILIES:
        if re.search(family.pattern, base):
            return family
    raise ValueError(f"{model!r} is not one of the paper's model families "
                     f"({', '.join(f.name for f in MODEL_FAMILIES)}); give its fps explicitly")


def protocol_fps(model: str, override: float | None = None) -> float:
    """Sec. 4.6: 2 fps for Qwen2-VL, Qwen2.5-VL and QVQ; 4 fps for Cosmos and the APIs."""
    if override is not None:
        if override <= 0:
            raise ValueError(f"fps must be positive, got {override}")
        return float(override)
    return model_family(model).fps


# For models outside the paper's families: the rate the paper used for the open models.
DEFAULT_FPS = 2.0


def default_fps(model: str) -> float:
    """``run-models``' sampling rate when none is given: the paper's rate for its families
    (sec. 4.6), else :data:`DEFAULT_FPS`.

    Examples
    --------
    >>> default_fps("Qwen/Qwen2.5-VL-7B-Instruct"), default_fps("gpt-4o"), default_fps("my-vlm")
    (2.0, 4.0, 2.0)
    """
    try:
        return model_family(model).fps
    except ValueError:
        return DEFAULT_FPS


def select_for_setting(name: str, stimuli: list) -> tuple[list, list[str]]:
    """The clip stimuli of a setting's test items, and the item ids with no stimulus.

    ``stimuli`` are any records with ``kind`` and ``item_id`` (stored ``Stimulus`` rows or
    the runner's ``StimulusRecord``); frame sets and clips of other sets are left out.
    """
    wanted = [item.item_id for item in setting_items(name)]
    wanted_set = set(wanted)
    chosen = [s for s in stimuli if s.kind == "clip" and s.item_id in wanted_set]
    found = {s.item_id for s in chosen}
    return chosen, [item_id for item_id in wanted if item_id not in found]
