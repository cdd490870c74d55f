"""Catch-trial videos: a clip that says which key to press ("Press J"), for attention checks.

The instruction is drawn into the video itself, so the browser treats a catch trial like
any other clip and never learns which key is expected.  The text appears after a short
plain lead-in, as a task clip would start, and a bar fills underneath while it plays so
the file is a genuine video (frames differ) rather than a still.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from experiments.media import encode_browser_mp4
from experiments.stimuli import ClipSpec

CATCH_SET = "catch"
KEYS = ("f", "j")
WIDTH, HEIGHT, FPS = 320, 240, 30
# As long as the 3-second clips of the built-in set and AoT-PsyPhyBENCH, so that a catch
# video's length does not set it apart from the clips around it.
DURATION_S = 3.0
LEAD_IN_S = 0.2
BACKGROUND, INK = (128, 128, 128), (255, 255, 255)


def _font(size: int):
    from PIL import ImageFont  # Pillow only renders; imported where it is used

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType: the fixed bitmap font
        return ImageFont.load_default()


def render_catch_frames(key: str, width: int = WIDTH, height: int = HEIGHT, fps: int = FPS,
                        duration_s: float = DURATION_S) -> np.ndarray:
    """``(T, H, W, 3)`` uint8 frames of a grey clip reading ``Press <KEY>``."""
    from PIL import Image, ImageDraw

    if key not in KEYS:
        raise ValueError(f"catch key must be one of {KEYS}, got {key!r}")
    n_frames = round(duration_s * fps)
    text = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(text)
    font = _font(height // 5)
    label = f"Press {key.upper()}"
    left, top, right, bottom = draw.textbbox((0, 0), label, font=font)
    draw.text(((width - (right - left)) / 2 - left, (height - (bottom - top)) / 2 - top - height // 10),
              label, fill=INK, font=font)
    with_text = np.asarray(text)
    blank = np.full_like(with_text, BACKGROUND)
    frames = np.empty((n_frames, height, width, 3), np.uint8)
    bar_top, bar_bottom = int(height * 0.8), int(height * 0.8) + max(2, height // 40)
    for i in range(n_frames):
        frames[i] = blank if i < LEAD_IN_S * fps else with_text
        frames[i, bar_top:bar_bottom, : int(width * (i + 1) / n_frames)] = INK
    return frames


def catch_specs(out_dir: Path, fps: int = FPS, duration_s: float = DURATION_S) -> list[ClipSpec]:
    """Render one catch video per response key into ``out_dir`` as importable clip specs.

    Each spec carries ``params["instructed_key"]``, which the schedule reads to score the
    trial against the participant's key mapping.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = []
    for key in KEYS:
        path = out_dir / f"press-{key}.mp4"
        encode_browser_mp4(render_catch_frames(key, fps=fps, duration_s=duration_s), path, fps=fps)
        specs.append(ClipSpec(clip_key=f"press-{key}", path=path, categories=[], split=CATCH_SET,
                              params={"catch": True, "instructed_key": key,
                                      "generator": "experiments.catch", "duration_s": duration_s}))
    return specs
