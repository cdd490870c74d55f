"""Tiny synthetic videos named by AoT-PsyPhyBENCH's real clip ids, for import tests.

One clip is encoded once per folder and copied under every name, so the full 212-clip list
costs one encode.  Its frames ramp in brightness, so frame k and frame N-1-k always differ
by far more than codec noise and a file that is not reversed cannot pass the flip check.
"""
import shutil
from pathlib import Path

import numpy as np

from experiments import media
from experiments.reversal import reverse_clip_checked

N_FRAMES, SIZE, FPS = 10, 16, 10


def ramp_frames(n: int = N_FRAMES, size: int = SIZE) -> np.ndarray:
    frames = np.zeros((n, size, size, 3), np.uint8)
    for k in range(n):
        frames[k] = 30 + 20 * k
        frames[k, k % size, :, 0] = 250  # a moving line, so the clip is not a flat field
    return frames


def write_benchmark_videos(folder: Path, clip_ids, reversed_ids=(), wrong_reversed_ids=()) -> Path:
    """``ID.mp4`` for every id, ``ID_rev.mp4`` (a true flip) for ``reversed_ids`` and a
    forward copy misnamed ``ID_rev.mp4`` for ``wrong_reversed_ids``."""
    folder.mkdir(parents=True, exist_ok=True)
    template = folder / ".template.mp4"
    media.encode_browser_mp4(ramp_frames(), template, fps=FPS)
    flipped = folder / ".template_rev.mp4"
    if reversed_ids:
        reverse_clip_checked(template, flipped)
    for clip_id in clip_ids:
        shutil.copyfile(template, folder / f"{clip_id}.mp4")
    for clip_id in reversed_ids:
        shutil.copyfile(flipped, folder / f"{clip_id}_rev.mp4")
    for clip_id in wrong_reversed_ids:
        shutil.copyfile(template, folder / f"{clip_id}_rev.mp4")
    template.unlink()
    flipped.unlink(missing_ok=True)
    return folder
