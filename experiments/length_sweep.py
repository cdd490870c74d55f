"""Clip-length sweeps: how much of a clip a person needs to tell its direction.

A length sweep's levels are numbers of frames shown from the clip's middle. Each source clip
is cut to the n frames around its middle at every level, and each cut is a clip of its own
(split :data:`SPLIT`, params ``length_of``, ``n_frames`` and ``first_frame``), prepared like
any other: H.264 from the same decoded frames in both directions, frame-exact reversal
checked, both files padded to one size, hashed. So the reversed trial at level n plays the
*same* n frames backwards: forward and reversed show the same content and the same amount of
motion, and only the order differs.

Around the middle, not from the start (as the first version cut): cuts that all began at the
clip's first frame shared it, first in every forward cut and last in every reversed one, so a
participant who compared the ends of one clip's cuts knew each one's direction. Centred cuts
are nested symmetrically: comparing two tells only whether they play the same way or not, as
a fixed design's two presentations of a clip do. Where a cut cannot be exactly centred (its
length and the clip's differ in parity), the extra frame lies before or after it by a fair
coin drawn when the set is made, so every arrangement of a clip's cuts is as likely as its
mirror image.

Pre-cut files, not the whole clip stopped by the runner: a participant who can fetch the
whole file can see every frame, so a level would only be a request. With cut files the server
sends exactly n frames, and every video of an adaptive session is padded to the size of the
largest it may show (``webapp.stimuli.presentations``), so sizes tell neither the level nor
the direction. The cost (``bench/length_stimuli.py``) is preparation time and disk in
proportion to the sum of the levels.

The sweep is read by the adaptive schedule like a TRA sweep (:func:`labels`), one sweep over
all clips of the set: a level shown again shows another clip where the set has several.
"""
from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

from experiments import media
from experiments.stimuli import ClipSpec

SPLIT = "length-sweep"
SWEEP = "length"
PARAMETER = "n_frames"
MIN_FRAMES = 2  # one frame has no direction


def is_length_clip(params) -> bool:
    return "length_of" in params


def labels(params) -> dict:
    """A length clip's sweep labels, as ``experiments.synthetic.sweep_labels`` gives a TRA
    clip's: ``scenario`` (the sweep), ``parameter`` and ``parameter_value`` (frames shown)."""
    return {"scenario": SWEEP, "parameter": PARAMETER,
            "parameter_value": float(int(params[PARAMETER]))}


def parse_levels(text: str) -> tuple[int, ...]:
    """``"2,4,8"`` -> (2, 4, 8): at least 3 distinct whole numbers of frames, each at least
    :data:`MIN_FRAMES`; a ValueError says what is wrong."""
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"levels must be whole numbers of frames separated by commas, "
                         f"got {text!r}") from None
    if len(levels) < 3 or len(set(levels)) != len(levels) or min(levels) < MIN_FRAMES:
        raise ValueError(f"levels need at least 3 distinct numbers of frames, each at least "
                         f"{MIN_FRAMES}; got {text!r}")
    return tuple(sorted(levels))


def clip_key(source_key: str, n_frames: int) -> str:
    return f"{source_key}-mid{n_frames:04d}"


def first_frames(n_source: int, levels: Sequence[int], rng: np.random.Generator) -> dict[int, int]:
    """Level -> the source frame where its cut starts: centred on the clip, the odd frame out
    before or after by a fair coin (so the arrangement is as likely as its mirror image)."""
    return {n: (n_source - n) // 2 + int((n_source - n) % 2 and rng.integers(2)) for n in levels}


def length_specs(source: ClipSpec, levels: Sequence[int], folder: Path,
                 rng: np.random.Generator) -> list[ClipSpec]:
    """One spec per level for ``source`` (a decodable video): the n frames around its middle
    (:func:`first_frames`) written losslessly into ``folder``, so the prepared cut is one
    encoding from the source's frames. A source shorter than the longest level is an error
    naming the clip."""
    from experiments.synthetic import write_lossless  # video tooling only when cutting

    info = media.probe(source.path)
    if info.frame_count < max(levels):
        raise ValueError(f"clip {source.clip_key!r} has {info.frame_count} frames; the longest "
                         f"level is {max(levels)}")
    starts = first_frames(info.frame_count, levels, rng)
    # only the frames the cuts show are held: a long natural clip need not fit in memory
    begin = min(starts.values())
    end = max(start + n for n, start in starts.items())
    frames = media.decode_frames(source.path, range(begin, end))
    rate = Fraction(info.fps).limit_denominator(1001)
    Path(folder).mkdir(parents=True, exist_ok=True)
    specs = []
    for n in levels:
        key = clip_key(source.clip_key, n)
        path = Path(folder) / f"{key}.mkv"
        cut = frames[starts[n] - begin:starts[n] - begin + n]
        write_lossless(cut, path, fps=rate)  # type: ignore[arg-type]
        specs.append(ClipSpec(key, path, list(source.categories),
                              annotation_brief=source.annotation_brief,
                              annotation_comprehensive=source.annotation_comprehensive,
                              split=SPLIT, params={"length_of": source.clip_key, PARAMETER: n,
                                                   "first_frame": starts[n]}))
    return specs
