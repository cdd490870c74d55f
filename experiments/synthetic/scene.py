"""What a synthetic scene is: parameter sampling, rendering and description, kept apart.

``sample`` draws every random choice into a plain dict; ``render`` is a pure function of
that dict, so the recorded parameters alone reproduce a clip's pixels.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

COLORS = {
    "red": (205, 45, 40), "blue": (40, 90, 205), "green": (45, 150, 60),
    "yellow": (235, 200, 40), "orange": (235, 130, 30), "purple": (130, 60, 170),
    "teal": (30, 150, 150), "pink": (225, 110, 160), "brown": (130, 85, 45),
    "white": (235, 235, 230),
}


def pick_color(rng: np.random.Generator, exclude: tuple[str, ...] = ()) -> str:
    names = [name for name in COLORS if name not in exclude]
    return names[int(rng.integers(len(names)))]


def rgb(name: str) -> tuple[int, int, int]:
    return COLORS[name]


def side(direction: int) -> str:
    return "left to right" if direction > 0 else "right to left"


@dataclass(frozen=True)
class Scene:
    name: str
    categories: tuple[str, ...]
    sample: Callable[[np.random.Generator], dict]
    render: Callable[[dict], np.ndarray]  # (90, 240, 320, 3) uint8
    describe: Callable[[dict], tuple[str, str]]  # (brief, comprehensive), forward in time
