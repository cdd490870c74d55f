"""A model item (one trial a model is asked) and the seeded randomness every item builder
draws from: ``numpy.random.default_rng([seed, stimulus_id, ...])``, so the same seed gives
every model exactly the same presentations (EGO-FLIGHT sec. 3.3)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from analysis import columns as C
from analysis.vlm import prompts
from analysis.vlm.backends.base import Request
from analysis.vlm.parsers import parse_arrow_of_time, parse_choice, parse_frame_order
from experiments.catalog_records import StimulusRecord

if TYPE_CHECKING:  # the task registry imports the item builders, which import this module
    from analysis.vlm.tasks import TaskSpec

HINT_CONFIGS = {"none": (), "1&3": (1, 3), "2&4": (2, 4)}


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


def seeded_rng(spec: TaskSpec, *parts: int) -> np.random.Generator:
    return np.random.default_rng([spec.seed, *parts])
