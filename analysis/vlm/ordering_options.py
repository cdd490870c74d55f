"""The options of a run that ordering tasks read (annotation, span, hints), and those a
study's trials set themselves: their defaults and the requests that are refused."""
from __future__ import annotations

from collections.abc import Mapping

from analysis.vlm.items import HINT_CONFIGS
from analysis.vlm.order_items import check_hints
from analysis.vlm.tasks import TASKS

# Ordering options left out of a request (None) take these values.
ORDERING_DEFAULTS = {"annotation": "brief", "span": "medium", "hints": "none"}


def check_ordering_options(options: Mapping) -> None:
    """Refuse hints a task cannot use, or that leave nothing to order."""
    hints = options.get("hints")
    if hints in (None, "none"):
        return
    if options["task"] != "frame_order":
        raise ValueError(f"--hints {hints}: only for --task frame_order, "
                         f"not --task {options['task']}")
    if hints not in HINT_CONFIGS:
        raise ValueError(f"--hints {hints!r} is not one of {tuple(HINT_CONFIGS)}")
    if options.get("n_frames") is not None:
        check_hints(hints, options["n_frames"])


def study_options(options: Mapping, task: str, design_name: str) -> dict:
    """The options of a run on a study whose design's trials ask ``task``: options that
    the trials set themselves (a frame order's frames, annotation and hints) are refused."""
    given = [name for name in TASKS[task].trial_options if options.get(name) is not None]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise ValueError(f"{flags}: design {design_name!r}'s trials set these (each "
                         "condition's frames, annotation and hints); drop them, or use --set "
                         "to ask about the stimuli without the study's design")
    return {**options, "task": task}
