"""Tiny test clips (32x32, 12 frames) drawn with numpy: nothing is downloaded."""
import numpy as np

TINY_FRAMES, TINY_SIZE = 12, 32


def moving_square_frames(count: int = TINY_FRAMES, size: int = TINY_SIZE, width=None) -> np.ndarray:
    """A bright square sliding over a gradient: every frame differs clearly from the next."""
    width = width or size
    ys, xs = np.mgrid[0:size, 0:width]
    frames = np.empty((count, size, width, 3), np.uint8)
    for k in range(count):
        img = np.stack([xs * 4 + 40, ys * 4 + 40, np.full_like(xs, 90)], axis=-1).astype(float)
        x0 = 2 + 2 * k
        img[8:20, x0:x0 + 8] = (240, 230, 40)
        frames[k] = np.clip(img, 0, 255).astype(np.uint8)
    return frames
