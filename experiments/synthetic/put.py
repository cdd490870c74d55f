"""Put: material added by hand -- blocks stacked by a gripper, balls poured into a jar."""
from __future__ import annotations

import numpy as np

from experiments.synthetic import canvas as cv
from experiments.synthetic.physics import ease
from experiments.synthetic.scene import Scene, pick_color, rgb

ROOM = ((215, 220, 228), (238, 238, 240))
TABLE = (140, 110, 80)
ARM = (90, 95, 110)


def sample_stack(rng) -> dict:
    n = int(rng.integers(3, 6))
    return {"blocks": n, "block_w_px": float(rng.uniform(36, 50)),
            "block_h_px": float(rng.uniform(18, 24)), "x": float(rng.uniform(130, 190)),
            "colors": [pick_color(rng, ("white",)) for _ in range(n)],
            "jitter_px": [float(v) for v in rng.uniform(-4, 4, n)]}


def _gripper(img, x, y_bottom, w, closed: bool) -> None:
    half = w / 2 + (2 if closed else 7)
    cv.segment(img, (x, -5), (x, y_bottom - 16), 5, ARM)
    cv.rect(img, (x, y_bottom - 16), 2 * half + 6, 5, ARM)
    for sign in (-1, 1):
        cv.rect(img, (x + sign * (half + 1), y_bottom - 8), 4, 18, ARM)


def render_stack(p: dict) -> np.ndarray:
    n, w, h = p["blocks"], p["block_w_px"], p["block_h_px"]
    period = 2.8 / n  # carry down (55%), release (10%), go back up (35%)
    base = cv.backdrop(*ROOM, TABLE)
    frames = []
    for time in cv.times():
        img = base.copy()
        grip = None
        for k in range(n):
            u = (time - 0.1 - k * period) / period
            x = p["x"] + p["jitter_px"][k]
            rest_y = cv.GROUND_Y - k * h  # bottom of the k-th block when placed
            if u >= 0.55:
                cv.rect(img, (x, rest_y - h / 2), w, h, rgb(p["colors"][k]))
            if 0 <= u < 0.55:  # carried in from above the frame
                y = rest_y - (rest_y + 10) * (1 - ease(u / 0.55))
                cv.rect(img, (x, y - h / 2), w, h, rgb(p["colors"][k]))
                grip = (x, y - h + 8, True)
            elif 0.55 <= u < 1:
                grip = (x, rest_y - h + 8 - (rest_y + 10) * ease((u - 0.65) / 0.35), u < 0.65)
        if grip is not None:
            _gripper(img, grip[0], grip[1], w, grip[2])
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_stack(p: dict) -> tuple[str, str]:
    colors = ", ".join(p["colors"][:-1]) + f" and {p['colors'][-1]}"
    brief = f"A gripper stacks {p['blocks']} blocks one on top of another into a tower."
    full = (f"A robotic gripper on an arm brings blocks down from above, one at a time, and sets "
            f"each on top of the last, releasing it and rising out of view to fetch the next. "
            f"The {colors} blocks build up into a slightly uneven tower of {p['blocks']} on the "
            f"table.")
    return brief, full


def sample_jar(rng) -> dict:
    n = int(rng.integers(8, 15))
    return {"balls": n, "x": float(rng.uniform(150, 190)), "ball_r_px": 6.0,
            "color": pick_color(rng, ("white", "brown")),
            "release_s": sorted(float(v) for v in rng.uniform(0.3, 2.2, n)),
            "cup": pick_color(rng, ("white",))}


def _slots(n: int, x: float, r: float) -> list[tuple[float, float]]:
    """Where the balls come to rest: rows of three in a jar three balls wide."""
    return [(x + (k % 3 - 1) * 2.1 * r + (r if (k // 3) % 2 else 0) * 0.3,
             cv.GROUND_Y - 4 - r - (k // 3) * 1.8 * r) for k in range(n)]


def render_jar(p: dict) -> np.ndarray:
    r, x = p["ball_r_px"], p["x"]
    lip = np.array([x - 30, 95.0])
    slots = _slots(p["balls"], x, r)
    base = cv.backdrop(*ROOM, TABLE)
    for sign in (-1, 1):  # the jar: two walls and a floor, open at the top
        cv.rect(base, (x + sign * 22, cv.GROUND_Y - 40), 4, 80, (150, 190, 200))
    cv.rect(base, (x, cv.GROUND_Y - 2), 48, 4, (150, 190, 200))
    frames = []
    for time in cv.times():
        img = base.copy()
        tilt = 0.9 * ease((time - 0.1) / 0.3) * (1 - ease((time - 2.4) / 0.4))
        cv.rect(img, lip + [-14, -6], 30, 18, rgb(p["cup"]), angle=tilt)  # the hand's cup
        cv.disc(img, lip + [-32, -2], 8, (230, 190, 160))  # the hand holding it
        for k, (release, slot) in enumerate(zip(p["release_s"], slots)):
            if time < release:
                continue
            # Each ball leaves the lip with a small push and falls onto its resting place.
            fall_time = np.sqrt(2 * (slot[1] - lip[1]) / cv.GRAVITY)
            u = min((time - release) / fall_time, 1.0)
            pos = lip + (np.array(slot) - lip) * [u, u * u]
            cv.disc(img, pos, r, rgb(p["color"]))
        for sign in (-1, 1):
            cv.rect(img, (x + sign * 22, cv.GROUND_Y - 40), 4, 80, (150, 190, 200), alpha=0.6)
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_jar(p: dict) -> tuple[str, str]:
    brief = f"A hand tips a cup and pours {p['balls']} {p['color']} balls into a glass jar."
    full = (f"A hand holding a {p['cup']} cup tilts it over an empty glass jar on a table. "
            f"{p['balls']} {p['color']} balls roll out one after another, fall into the jar and "
            f"pile up on its bottom; when the cup is empty the hand tips it back upright.")
    return brief, full


STACK = Scene("block_stack", ("Put",), sample_stack, render_stack, describe_stack)
JAR = Scene("jar_fill", ("Put", "Fall"), sample_jar, render_jar, describe_jar)
