"""Division: material cut apart by a tool -- a loaf sliced by a knife, a block split by a wedge."""
from __future__ import annotations

import numpy as np

from experiments.synthetic import canvas as cv
from experiments.synthetic.physics import ease
from experiments.synthetic.scene import Scene, pick_color, rgb

KITCHEN = ((225, 215, 200), (240, 235, 225))
TABLE = (150, 105, 70)
STEEL = (185, 190, 200)


def sample_knife(rng) -> dict:
    return {"cuts": int(rng.integers(1, 4)), "length_px": float(rng.uniform(150, 200)),
            "thickness_px": float(rng.uniform(30, 42)),
            "loaf": ["brown", "orange", "yellow"][int(rng.integers(3))],
            "slice_px": float(rng.uniform(22, 34)), "slide_px": float(rng.uniform(10, 18))}


def _knife(img, x, y_edge) -> None:
    cv.polygon(img, [(x - 1.5, y_edge), (x + 1.5, y_edge), (x + 4, y_edge - 70), (x - 3, y_edge - 70)],
               STEEL)
    cv.rect(img, (x, y_edge - 84), 9, 30, (60, 40, 30))


def render_knife(p: dict) -> np.ndarray:
    n = p["cuts"]
    left = 160 - p["length_px"] / 2
    right = left + p["length_px"]
    top = cv.GROUND_Y - p["thickness_px"]
    # Slices come off the right end, one after another.
    cut_x = [right - (k + 1) * p["slice_px"] for k in range(n)]
    window = 2.6 / n  # each cut: knife down (40%), back up (30%), slice slides off (30%)
    base = cv.backdrop(*KITCHEN, TABLE)
    color = np.array(rgb(p["loaf"]))
    frames = []
    for time in cv.times():
        img = base.copy()
        edges, shifts, knife = [right], [], None
        for k, x in enumerate(cut_x):
            u = (time - 0.2 - k * window) / window
            if u >= 0.4:  # the knife has gone through: a separate slice exists
                edges.append(x)
                shifts.append(p["slide_px"] * float(ease((u - 0.7) / 0.3)))
            if 0 < u < 0.7:
                depth = ease(u / 0.4) if u < 0.4 else 1 - ease((u - 0.4) / 0.3)
                knife = (x, top - 30 + depth * (p["thickness_px"] + 30))
        edges.append(left)
        # A slide moves the slice just cut off and every slice right of it.
        offsets = [sum(shifts[k:]) for k in range(len(shifts))] + [0.0]
        for k in range(len(edges) - 1):
            x1, x0 = edges[k] + offsets[k], edges[k + 1] + offsets[k]
            gap = 0.8 if k < len(edges) - 2 else 0.0
            cv.rect(img, ((x0 + x1) / 2 + gap, top + p["thickness_px"] / 2), x1 - x0 - gap,
                    p["thickness_px"], color)
            cv.rect(img, ((x0 + x1) / 2 + gap, top + 3), x1 - x0 - gap, 6, color * 0.8)
        if knife is not None:
            _knife(img, *knife)
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_knife(p: dict) -> tuple[str, str]:
    word = {1: "once", 2: "twice", 3: "three times"}[p["cuts"]]
    brief = f"A knife slices a {p['loaf']} loaf {word}; each cut-off slice slides away."
    full = (f"A {p['loaf']} loaf lies on a wooden table. A kitchen knife comes down from above "
            f"and cuts straight through it, then rises again; the piece that was cut off slides "
            f"a little to the side, leaving a gap. This happens {word}, so the loaf ends up in "
            f"{p['cuts'] + 1} separate pieces.")
    return brief, full


def sample_wedge(rng) -> dict:
    return {"width_px": float(rng.uniform(60, 84)), "height_px": float(rng.uniform(60, 80)),
            "block": pick_color(rng, ("white",)), "split_s": float(rng.uniform(1.1, 1.5)),
            "tip_s": float(rng.uniform(0.45, 0.7))}


def _half(cx, w, h, sign, angle):
    """Corners of one half, rotated outward about its bottom outer corner."""
    pivot = np.array([cx + sign * w / 2, cv.GROUND_Y])
    corners = np.array([[cx, cv.GROUND_Y], [cx + sign * w / 2, cv.GROUND_Y],
                        [cx + sign * w / 2, cv.GROUND_Y - h], [cx, cv.GROUND_Y - h]]) - pivot
    c, s = np.cos(sign * angle), np.sin(sign * angle)
    return corners @ np.array([[c, s], [-s, c]]) + pivot


def render_wedge(p: dict) -> np.ndarray:
    w, h, cx = p["width_px"], p["height_px"], 160.0
    base = cv.backdrop(*KITCHEN, TABLE)
    color = np.array(rgb(p["block"]))
    frames = []
    for time in cv.times():
        img = base.copy()
        drive = ease(time / p["split_s"])  # the wedge is pressed in, then the halves fall open
        # Halves topple outward, speeding up like falling bodies, and lie flat.
        fallen = np.clip((time - p["split_s"]) / p["tip_s"], 0.0, 1.0)
        opening = np.pi / 2 * fallen ** 2
        for sign in (-1, 1):
            cv.polygon(img, _half(cx, w, h, sign, opening), color * (0.9 if sign < 0 else 1.0))
        if time <= p["split_s"]:
            crack = drive * h
            cv.segment(img, (cx, cv.GROUND_Y - h), (cx, cv.GROUND_Y - h + crack), 1.5, color * 0.4)
            tip = cv.GROUND_Y - h - 40 + drive * 48
            cv.polygon(img, [(cx, tip), (cx + 9, tip - 30), (cx - 9, tip - 30)], STEEL)
            cv.rect(img, (cx, tip - 50), 6, 40, (60, 40, 30))
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_wedge(p: dict) -> tuple[str, str]:
    brief = f"A steel wedge is pressed into a {p['block']} block, which splits into two halves."
    full = (f"A {p['block']} block stands on a table. A steel wedge on a handle is pushed down "
            f"into the middle of its top; a crack runs down through the block, and after "
            f"{p['split_s']:.1f} s the block splits and its two halves topple outward and lie "
            f"flat on either side.")
    return brief, full


KNIFE = Scene("knife_cut", ("Division",), sample_knife, render_knife, describe_knife)
WEDGE = Scene("wedge_split", ("Division",), sample_wedge, render_wedge, describe_wedge)
