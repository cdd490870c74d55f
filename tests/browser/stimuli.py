"""A tiny stimulus set for the whole-session browser tests: short, small clips that a
participant can tell apart (a square moving and growing), stored through the real catalog."""
from pathlib import Path

import numpy as np

from experiments import media
from experiments.categories import CATEGORIES
from experiments.stimuli import ClipSpec

FPS = 30
N_FRAMES = 18  # 0.6 s: trials stay fast, and 8-frame sets and thirds still fit
SIZE = (48, 64)


def _frames(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    h, w = SIZE
    background = rng.integers(40, 200, size=3, dtype=np.uint8)
    colour = rng.integers(0, 255, size=3, dtype=np.uint8)
    frames = np.empty((N_FRAMES, h, w, 3), np.uint8)
    for t in range(N_FRAMES):
        frames[t] = background
        side = 6 + t // 2
        x = 2 + 2 * t
        frames[t, 8:8 + side, x:x + side] = colour
    return frames


def tiny_specs(folder: Path, per_category: int = 2) -> list[ClipSpec]:
    specs = []
    for c, category in enumerate(CATEGORIES):
        for k in range(per_category):
            key = f"{category.lower()}-{k}"
            path = folder / f"{key}.mp4"
            media.encode_browser_mp4(_frames(100 * c + k), path, fps=FPS)
            specs.append(ClipSpec(
                clip_key=key, path=path, categories=[category],
                annotation_brief=f"A square moves ({category}).",
                annotation_comprehensive=f"A {category} square grows and moves right."))
    return specs
