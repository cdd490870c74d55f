"""Catch-trial videos: a clip that shows one keyboard key, for attention checks.

The video draws no words, only the key itself as a keycap (a rounded key with its upper-case
letter), so it asks the same of a participant in every language; the instructions, which are
translated, say that such a key is to be pressed.  The key is drawn into the video itself, so
the browser treats a catch trial like any other clip and never learns which key is expected.
The keycap appears after a short plain lead-in, as a task clip would start, and a bar fills
underneath while it plays so the file is a genuine video (frames differ) rather than a still.
Participants are never served the stored video itself: each presentation is a variant of its
own (``render_catch_frames`` with ``rng``; webapp.stimuli.presentations), so that no file is
the same twice.
"""
from __future__ import annotations

import math
import string
from pathlib import Path

import numpy as np

from experiments.media import encode_browser_mp4
from experiments.stimuli import ClipSpec

CATCH_SET = "catch"
# Every key a study file accepts as a response key (one lower-case letter or digit), so that
# whichever two a study chooses, the set has a video for each.
KEYS = tuple(string.ascii_lowercase + string.digits)
# Stored in every clip's params, so that a stored set says which drawing its videos have
# (plain "experiments.catch": the words "Press J"; "/2": a keycap with no words, f and j
# only; "/3": the same keycaps for every key in KEYS).
GENERATOR = "experiments.catch/3"
WIDTH, HEIGHT, FPS = 320, 240, 30
# As long as the 3-second clips of the built-in set and AoT-PsyPhyBENCH, so that a catch
# video's length does not set it apart from the clips around it.
DURATION_S = 3.0
# The keycap appears after LEAD_IN_S and stays to the clip's end; a presentation's variant
# moves that onset by up to LEAD_IN_JITTER_S either way.
LEAD_IN_S = 0.2
LEAD_IN_JITTER_S = 0.1
BACKGROUND, INK = (128, 128, 128), (255, 255, 255)
# Black on white inside a black outline: the letter stands out as on a real key, and the
# key stands out from the grey whatever the display's contrast.
KEY_EDGE, KEY_SIDE, KEY_FACE, KEY_LETTER = (0, 0, 0), (200, 200, 200), (255, 255, 255), (0, 0, 0)


def _font(size: int):
    from PIL import ImageFont  # Pillow only renders; imported where it is used

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType: the fixed bitmap font
        return ImageFont.load_default()


def keycap_box(width: int, height: int) -> tuple[int, int, int, int]:
    """``(left, top, right, bottom)`` of the square key: centred across the frame, and
    centred above the progress bar where a clip's subject would be."""
    side = round(height * 0.45)
    left, top = (width - side) // 2, round(height * 0.4) - side // 2
    return left, top, left + side - 1, top + side - 1


def _draw_keycap(draw, box: tuple[int, int, int, int], letter: str) -> None:
    """A key seen from the front: its outlined base, a lighter top face set in (deeper at
    the bottom, where a real key shows its front side) and the letter centred on that face."""
    left, top, right, bottom = box
    side = right - left + 1
    draw.rounded_rectangle(box, radius=max(1, side // 8), fill=KEY_SIDE, outline=KEY_EDGE,
                           width=max(1, side // 36))
    inset = max(1, side // 10)
    face = (left + inset, top + inset // 2, right - inset, bottom - 2 * inset)
    draw.rounded_rectangle(face, radius=max(1, side // 12), fill=KEY_FACE)
    font, stroke = _font(max(1, side * 3 // 5)), side // 50  # a bold letter, legible at a glance
    g_left, g_top, g_right, g_bottom = draw.textbbox((0, 0), letter, font=font, stroke_width=stroke)
    centre_x, centre_y = (face[0] + face[2]) / 2, (face[1] + face[3]) / 2
    draw.text((centre_x - (g_left + g_right) / 2, centre_y - (g_top + g_bottom) / 2), letter,
              fill=KEY_LETTER, font=font, stroke_width=stroke, stroke_fill=KEY_LETTER)


def min_frames(catch_frames: int, catch_fps: float, fps: float) -> int:
    """Frames at ``fps`` that a variant of a stored catch clip (``catch_frames`` at
    ``catch_fps``) needs: as long as that clip, so that its key, shown from the lead-in
    (:data:`LEAD_IN_S` give or take :data:`LEAD_IN_JITTER_S`) to the end, is on screen as long
    as the catch set was made to show it, less at most the jitter."""
    return math.ceil(catch_frames * fps / catch_fps - 1e-9)  # float error never adds a frame


def render_catch_frames(key: str, width: int = WIDTH, height: int = HEIGHT, fps: float = FPS,
                        duration_s: float = DURATION_S, n_frames: int | None = None,
                        rng: np.random.Generator | None = None) -> np.ndarray:
    """``(T, H, W, 3)`` uint8 frames of a grey clip showing the keycap of ``key``.

    With ``rng``, one presentation's own variant (webapp.stimuli.presentations): the lead-in
    and the key's place shift a little and faint waves drift over the grey, so that every
    frame, and so every byte of the encoded file, differs between presentations while the
    key reads the same."""
    from PIL import Image, ImageDraw

    if key not in KEYS:
        raise ValueError(f"catch key must be one lower-case letter or digit, got {key!r}")
    n_frames = round(duration_s * fps) if n_frames is None else n_frames
    dx, dy, lead_in_s, background = 0, 0, LEAD_IN_S, None
    if rng is not None:
        dx, dy = (int(d) for d in rng.integers(-(width // 25), width // 25 + 1, 2))
        lead_in_s += rng.uniform(-LEAD_IN_JITTER_S, LEAD_IN_JITTER_S)
        background = _waves(rng, n_frames, width, height, fps)
    image = Image.new("RGB", (width, height), BACKGROUND)
    left, top, right, bottom = keycap_box(width, height)
    _draw_keycap(ImageDraw.Draw(image), (left + dx, top + dy, right + dx, bottom + dy),
                 key.upper())
    with_key = np.asarray(image)
    keycap = np.any(with_key != BACKGROUND, axis=-1)
    # the keycap's pixels are copied within its bounding box only (the rest of the mask is
    # empty): a few times faster than masking the whole frame, the same pixels
    rows, cols = np.flatnonzero(keycap.any(1)), np.flatnonzero(keycap.any(0))
    box = (slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1)) if rows.size else \
        (slice(0, 0), slice(0, 0))
    key_pixels, key_mask = with_key[box], keycap[box][..., None]
    frames = np.empty((n_frames, height, width, 3), np.uint8)
    if background is None:
        frames[:] = BACKGROUND
    bar_top, bar_bottom = int(height * 0.8), int(height * 0.8) + max(2, height // 40)
    for i in range(n_frames):
        if background is not None:
            frames[i] = background(i)[..., None]  # grey: R = G = B
        if i >= lead_in_s * fps:
            np.copyto(frames[i][box], key_pixels, where=key_mask)
        frames[i, bar_top:bar_bottom, : int(width * (i + 1) / n_frames)] = INK
    return frames


def _waves(rng: np.random.Generator, n_frames: int, width: int, height: int, fps: float):
    """Frame by frame, a faint (a few grey levels) wave pattern drifting over the grey, in a
    direction, wavelength and speed of its own: the frames of a presentation carry motion
    like a clip's, and no two presentations share a frame."""
    angle, wavelength, speed, amplitude = rng.uniform((0, 20, 0.5, 2), (2 * np.pi, 60, 2, 5))
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    phase = 2 * np.pi * (x * np.cos(angle) + y * np.sin(angle)) / wavelength
    # sin(phase + shift) from the two fixed patterns: a frame costs two multiply-adds.
    sine, cosine = amplitude * np.sin(phase), amplitude * np.cos(phase)

    def frame(i: int) -> np.ndarray:
        """The frame's grey level, one (height, width) plane."""
        shift = 2 * np.pi * speed * i / fps
        grey = sine * np.float32(np.cos(shift)) + cosine * np.float32(np.sin(shift))
        return (np.rint(grey) + BACKGROUND[0]).astype(np.uint8)
    return frame


def clip_key(key: str) -> str:
    """The stored clip key of ``key``'s video.  It names the generation: a set's rows are never
    replaced, so a newer generation is stored beside the older one's ``press-f``."""
    return f"press-{key}-v{GENERATOR.rpartition('/')[2]}"


def catch_specs(out_dir: Path, fps: int = FPS, duration_s: float = DURATION_S,
                keys: tuple[str, ...] = KEYS) -> list[ClipSpec]:
    """Render one catch video per key (every key a study may choose) into ``out_dir`` as
    importable clip specs.

    Each spec carries ``params["instructed_key"]``, which the schedule reads to score the
    trial against the participant's key mapping.  Import them together, as one set: only then
    are their files padded to one size (``catalog.import_clips``).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = []
    for key in keys:
        path = out_dir / f"press-{key}.mp4"
        encode_browser_mp4(render_catch_frames(key, fps=fps, duration_s=duration_s), path, fps=fps)
        specs.append(ClipSpec(clip_key=clip_key(key), path=path, categories=[], split=CATCH_SET,
                              params={"catch": True, "instructed_key": key,
                                      "generator": GENERATOR, "duration_s": duration_s}))
    return specs
