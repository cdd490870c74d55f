"""Pixel-statistics observers: classic, training-free baselines for the arrow of time, not
models.

They need no weights, no GPU and no download, so a new lab can run ``run-models`` at once and
see a model-shaped observer beside people.  Each reads only the pixels of the test clip (the
last video of a request; the prompt and demonstrations are ignored), computes one statistic
``a`` in [-1, 1] that is positive when the clip plays forward by its cue, and answers ``F``
(``a > 0``), ``B`` (``a < 0``) or nothing (no cue at all); its label scores are
``p(F) = 1 / (1 + exp(-SLOPE a))``.  They are the hand-built cues that learned methods
(Pickup et al. 2014, "Seeing the arrow of time", CVPR; Wei et al. 2018, "Learning and using
the arrow of time", CVPR) were compared with, without any learning:

``entropy`` (the thermodynamic arrow): the Shannon entropy of each frame's grey levels rises
in forward time as ink spreads, sparks scatter, things break and mix;
``a = (H_second - H_first) / max(H_first, H_second)`` over the clip's two halves.  On the
built-in set's rendered frames (seed 0, 8 clips per category, each forward and reversed) it
answers 62 of 96 trials right at 10 fps, 60 of 96 at 2 fps.

``motion-energy`` (dissipation): friction, damping and inelastic collisions take energy out of
motion, so forward motion tends to die down; the energy of a step is the mean absolute
difference of consecutive grey frames, ``a = (E_first - E_second) / (E_first + E_second)``.
It is fooled by processes that gather speed (a fall, a cut that happens late): 52 of 96 on
the built-in set at 10 fps, chance.

Both are blind to a process whose statistic does not change (a car at constant speed).
"""
from __future__ import annotations

import json
import math
from importlib import metadata

import numpy as np

from analysis.vlm.backends.base import Backend, Generation, GenerationParams, LabelScores, Request

SLOPE = 6.0  # |a| = 0.37 (energy twice as large in one half) gives p = 0.9
VERSION = "1"  # changes with the statistic, so the cache never mixes two versions


class MotionBackend(Backend):
    name = "motion"

    def __init__(self, model: str):
        if model not in STATISTICS:
            raise ValueError(f"--backend motion: --model {model!r} is not one of its "
                             f"statistics {tuple(STATISTICS)}")
        self.model_id = model
        # Entropy compares the frames of two halves (2 frames do); motion energy compares
        # the steps between frames of two halves (2 steps: 3 frames).
        self.min_frames = MIN_FRAMES[model]

    def describe(self) -> dict:
        return {"backend": self.name, "model": self.model_id, "weights_sha256": None,
                "revision": f"{self.model_id}-v{VERSION}", "slope": SLOPE,
                "kind": "training-free pixel statistic (not a model)",
                "libraries": {"numpy": metadata.version("numpy")}}

    def render(self, request: Request) -> str:
        """The prompt with pixels elided: the statistic ignores it, the cache keys on it."""
        return json.dumps([{"role": m["role"], "content": [
            p if p["type"] == "text" else {"type": p["type"], "visual": p["visual"]}
            for p in m["content"]]} for m in request.messages], sort_keys=True)

    def generate(self, requests: list[Request], params: GenerationParams
                 ) -> list[Generation | Exception]:
        out: list[Generation | Exception] = []
        for request in requests:
            try:
                a = STATISTICS[self.model_id](_test_clip(request, self.min_frames))
            except ValueError as error:
                out.append(error)
                continue
            text = "no motion: cannot tell" if a is None else ("F" if a > 0 else "B")
            out.append(Generation(text, 0, 0, {"motion_asymmetry": a}))
        return out

    def score(self, requests: list[Request], labels: tuple[str, ...]
              ) -> list[LabelScores | Exception]:
        out: list[LabelScores | Exception] = []
        for request in requests:
            try:
                a = STATISTICS[self.model_id](_test_clip(request, self.min_frames)) or 0.0
            except ValueError as error:
                out.append(error)
                continue
            p_forward = 1.0 / (1.0 + math.exp(-SLOPE * a))
            p = {"F": p_forward, "B": 1.0 - p_forward}
            out.append(LabelScores({label: math.log(p[label]) if p.get(label) else -math.inf
                                    for label in labels},
                                   {label: [label] for label in labels},
                                   {"motion_asymmetry": a}))
        return out


def _test_clip(request: Request, min_frames: int) -> np.ndarray:
    videos = [v for v in request.visuals if v.kind == "video"]
    if not videos:
        raise ValueError("the motion baseline answers which way a clip plays (--task aot); "
                         "it cannot order frames")
    frames = videos[-1].frames
    if len(frames) < min_frames:
        raise ValueError(f"the motion baseline needs at least {min_frames} frames of a clip, got "
                         f"{len(frames)}; raise --fps or give --n-frames")
    return frames


def _halves(values: np.ndarray) -> tuple[float, float]:
    """Mean of the first and of the second half of ``values`` (an odd middle counts half in
    each)."""
    half = len(values) / 2
    weights = np.clip(half - np.arange(len(values)), 0, 1)
    return float(values @ weights) / half, float(values @ weights[::-1]) / half


def entropy_change(frames: np.ndarray) -> float | None:
    """``(H_second - H_first) / max(H_first, H_second)`` of the frames' grey-level entropy
    (nats) in each half of a clip, in [-1, 1]; None for a clip of one flat grey.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> frames = np.zeros((8, 16, 16, 3), np.uint8)
    >>> for t in range(8):  # ink spreads: more and more pixels take other greys
    ...     frames[t, :, :2 * t] = rng.integers(0, 256, (16, 2 * t, 1))
    >>> entropy_change(frames) > 0, entropy_change(frames[::-1]) < 0
    (True, True)
    """
    grey = frames.astype(np.float32).mean(axis=-1).astype(np.uint8).reshape(len(frames), -1)
    counts = np.stack([np.bincount(frame, minlength=256) for frame in grey]) / grey.shape[1]
    logs = np.log(counts, where=counts > 0, out=np.zeros_like(counts))
    first, second = _halves(-(counts * logs).sum(axis=1))
    top = max(first, second)
    return None if top == 0 else (second - first) / top


def energy_change(frames: np.ndarray) -> float | None:
    """``(E_first - E_second) / (E_first + E_second)`` of a clip's motion energy in each
    half, in [-1, 1]; None for a clip without motion.

    Examples
    --------
    >>> import numpy as np
    >>> frames = np.zeros((9, 8, 20, 3), np.uint8)
    >>> for t, x in enumerate([0, 4, 7, 9, 10, 10, 10, 10, 10]):  # slows down, then rests
    ...     frames[t, :, x:x + 4] = 255
    >>> energy_change(frames) > 0, energy_change(frames[::-1]) < 0
    (True, True)
    """
    grey = frames.astype(np.float32).mean(axis=-1)
    first, second = _halves(np.abs(np.diff(grey, axis=0)).mean(axis=(1, 2)))
    total = first + second
    return None if total == 0 else (first - second) / total


STATISTICS = {"entropy": entropy_change, "motion-energy": energy_change}
MIN_FRAMES = {"entropy": 2, "motion-energy": 3}
