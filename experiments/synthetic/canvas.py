"""Anti-aliased drawing of simple shapes on float RGB images with numpy.

Each primitive touches only its bounding box and blends by pixel coverage (signed distance
clipped to one pixel), so shapes move smoothly at sub-pixel speeds.
"""
from __future__ import annotations

import numpy as np

WIDTH, HEIGHT, FPS, FRAMES = 320, 240, 30, 90
GROUND_Y = 206.0  # the floor line of side-view scenes, in pixels from the top
PX_PER_M = 60.0  # scene scale: gravity is 9.81 m/s^2 = 589 px/s^2
GRAVITY = 9.81 * PX_PER_M


def times() -> np.ndarray:
    return np.arange(FRAMES) / FPS


def backdrop(sky_top, sky_bottom, ground=None, ground_y: float = GROUND_Y) -> np.ndarray:
    """A vertical sky gradient with an optional flat ground band below ``ground_y``."""
    ramp = np.linspace(0.0, 1.0, HEIGHT, dtype=np.float32)[:, None, None]
    img = (1 - ramp) * np.asarray(sky_top, np.float32) + ramp * np.asarray(sky_bottom, np.float32)
    img = np.broadcast_to(img, (HEIGHT, WIDTH, 3)).copy()
    if ground is not None:
        top = int(ground_y)
        shade = np.linspace(1.0, 0.8, HEIGHT - top, dtype=np.float32)[:, None, None]
        img[top:] = np.asarray(ground, np.float32) * shade
        img[top] *= 0.7  # a darker edge line where the floor starts
    return img


def _box(points: np.ndarray, pad: float, img: np.ndarray):
    x0 = max(int(np.floor(points[:, 0].min() - pad)), 0)
    x1 = min(int(np.ceil(points[:, 0].max() + pad)) + 1, img.shape[1])
    y0 = max(int(np.floor(points[:, 1].min() - pad)), 0)
    y1 = min(int(np.ceil(points[:, 1].max() + pad)) + 1, img.shape[0])
    if x0 >= x1 or y0 >= y1:
        return None
    # Pixel centres as a row and a column that broadcast: no full coordinate grids.
    xs = np.arange(x0, x1, dtype=np.float32)[None, :] + 0.5
    ys = np.arange(y0, y1, dtype=np.float32)[:, None] + 0.5
    return (slice(y0, y1), slice(x0, x1)), xs, ys


def _blend(img, region, coverage, color, alpha):
    cov = (np.clip(coverage, 0.0, 1.0) * alpha)[..., None]
    img[region] = img[region] * (1 - cov) + cov * np.asarray(color, np.float32)


def disc(img, center, radius: float, color, alpha: float = 1.0) -> None:
    c = np.asarray(center, np.float32)
    found = _box(c[None], radius + 1, img)
    if found:
        region, xs, ys = found
        dist = np.hypot(xs - c[0], ys - c[1])
        _blend(img, region, radius - dist + 0.5, color, alpha)


def ellipse(img, center, rx: float, ry: float, color, alpha: float = 1.0) -> None:
    c = np.asarray(center, np.float32)
    found = _box(np.array([[c[0] - rx, c[1] - ry], [c[0] + rx, c[1] + ry]]), 1, img)
    if found and rx > 0 and ry > 0:
        region, xs, ys = found
        norm = np.hypot((xs - c[0]) / rx, (ys - c[1]) / ry)
        _blend(img, region, (1 - norm) * min(rx, ry) + 0.5, color, alpha)


def polygon(img, points, color, alpha: float = 1.0) -> None:
    """A convex polygon given by its corners in either winding order."""
    pts = np.asarray(points, np.float32)
    found = _box(pts, 1, img)
    if not found:
        return
    region, xs, ys = found
    area = np.sum(pts[:, 0] * np.roll(pts[:, 1], -1) - np.roll(pts[:, 0], -1) * pts[:, 1])
    inside = np.full((ys.shape[0], xs.shape[1]), np.inf, np.float32)
    for a, b in zip(pts, np.roll(pts, -1, axis=0)):
        edge = b - a
        length = float(np.hypot(*edge))
        if length < 1e-6:
            continue
        # Signed distance to the edge line, positive on the polygon's side.
        cross = (edge[0] * (ys - a[1]) - edge[1] * (xs - a[0])) / length
        inside = np.minimum(inside, cross if area > 0 else -cross)
    _blend(img, region, inside + 0.5, color, alpha)


def rect_corners(center, width: float, height: float, angle: float = 0.0) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    half = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], np.float32) * [width / 2, height / 2]
    return half @ np.array([[c, s], [-s, c]], np.float32) + np.asarray(center, np.float32)


def rect(img, center, width: float, height: float, color, angle: float = 0.0, alpha=1.0) -> None:
    polygon(img, rect_corners(center, width, height, angle), color, alpha)


def segment(img, p0, p1, width: float, color, alpha: float = 1.0) -> None:
    """A thick line with round caps."""
    a, b = np.asarray(p0, np.float32), np.asarray(p1, np.float32)
    found = _box(np.stack([a, b]), width / 2 + 1, img)
    if not found:
        return
    region, xs, ys = found
    ab = b - a
    t = np.clip(((xs - a[0]) * ab[0] + (ys - a[1]) * ab[1]) / max(float(ab @ ab), 1e-6), 0, 1)
    dist = np.hypot(xs - (a[0] + t * ab[0]), ys - (a[1] + t * ab[1]))
    _blend(img, region, width / 2 - dist + 0.5, color, alpha)


def to_uint8(img: np.ndarray) -> np.ndarray:
    # +0.5 then truncation rounds half up; cheaper than np.rint on every frame.
    return np.clip(img + 0.5, 0, 255).astype(np.uint8)


def splat(img, points, color, sigma: float, gain: float, max_alpha: float = 1.0) -> None:
    """Many small soft particles at once: bilinear density, Gaussian blur, blend.

    Much faster than one disc per particle for clouds of ink, smoke or sparks.
    """
    from scipy.ndimage import gaussian_filter

    pts = np.asarray(points, np.float64).reshape(-1, 2)
    found = _box(pts, 4 * sigma + 2, img) if len(pts) else None
    if not found:
        return
    region, xs, _ = found
    origin = np.array([region[1].start, region[0].start])
    pts = pts - origin - 0.5
    density = np.zeros((region[0].stop - region[0].start, xs.shape[1]), np.float32)
    x0, y0 = np.floor(pts[:, 0]).astype(int), np.floor(pts[:, 1]).astype(int)
    fx, fy = pts[:, 0] - x0, pts[:, 1] - y0
    for dx, dy, weight in ((0, 0, (1 - fx) * (1 - fy)), (1, 0, fx * (1 - fy)),
                           (0, 1, (1 - fx) * fy), (1, 1, fx * fy)):
        px, py = x0 + dx, y0 + dy
        keep = (px >= 0) & (px < density.shape[1]) & (py >= 0) & (py < density.shape[0])
        np.add.at(density, (py[keep], px[keep]), weight[keep])
    density = gaussian_filter(density, sigma, mode="constant")
    _blend(img, region, np.minimum(gain * density, max_alpha), color, 1.0)
