"""Fall: free fall and bouncing under gravity, a dropped box, and a pot that shatters."""
from __future__ import annotations

import numpy as np

from experiments.synthetic import canvas as cv
from experiments.synthetic.physics import bounce_height, particles, rest_time
from experiments.synthetic.scene import Scene, pick_color, rgb

ROOM = ((200, 205, 215), (235, 235, 238))
FLOOR = (150, 120, 90)


def sample_ball(rng) -> dict:
    return {"drop_m": float(rng.uniform(1.6, 2.4)), "restitution": float(rng.uniform(0.45, 0.75)),
            "vx_px_s": float(rng.choice([-1, 1]) * rng.uniform(10, 40)),
            "radius_px": float(rng.uniform(9, 14)), "color": pick_color(rng, ("white",)),
            "start_x": float(rng.uniform(120, 200)), "delay_s": 0.2}


def render_ball(p: dict) -> np.ndarray:
    t, r = cv.times(), p["radius_px"]
    drop = p["drop_m"] * cv.PX_PER_M
    height = bounce_height(drop, p["restitution"], cv.GRAVITY, t, delay=p["delay_s"])
    # Rolling friction slows the ball once it rests on the floor.
    stop = p["delay_s"] + rest_time(drop, p["restitution"], cv.GRAVITY)
    moving = np.minimum(t, stop) + np.clip(t - stop, 0, 0.5) * (1 - np.clip(t - stop, 0, 0.5))
    xs = p["start_x"] + p["vx_px_s"] * moving
    base = cv.backdrop(*ROOM, FLOOR)
    frames = []
    for x, h in zip(xs, height):
        img = base.copy()
        shadow = max(0.25, 1 - h / 250)
        cv.ellipse(img, (x, cv.GROUND_Y + 2), r * 1.2 * shadow, 3 * shadow, (60, 45, 35), 0.5)
        center = (x, cv.GROUND_Y - r - h)
        cv.disc(img, center, r, rgb(p["color"]))
        cv.disc(img, (center[0] - r / 3, center[1] - r / 3), r / 3, (255, 255, 255), 0.45)
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_ball(p: dict) -> tuple[str, str]:
    stop = p["delay_s"] + rest_time(p["drop_m"] * cv.PX_PER_M, p["restitution"], cv.GRAVITY)
    end = (f"comes to rest on the floor after about {stop:.1f} s" if stop < 3
           else "is still bouncing, lower each time, when the clip ends")
    if p["restitution"] >= 1.0:
        brief = f"A {p['color']} ball is dropped and bounces back to the same height every time."
        rebound = ("rebounds perfectly elastically (restitution 1.0), returning to its release "
                   "height on every bounce, and it is still bouncing when the clip ends")
    else:
        brief = f"A {p['color']} ball is dropped, falls to the floor and bounces lower and lower."
        rebound = (f"rebounds with restitution {p['restitution']:.2f}: each bounce is lower than "
                   f"the one before as energy is lost, and the ball {end}")
    full = (f"A {p['color']} ball is released {p['drop_m']:.1f} m above a wooden floor"
            f"{', drifting sideways' if p['vx_px_s'] else ''}. It speeds up as it falls, hits "
            f"the floor and {rebound}. Its shadow sharpens as the ball nears the floor.")
    return brief, full


def sample_box(rng) -> dict:
    return {"drop_m": float(rng.uniform(1.5, 2.3)), "spin_rad_s": float(rng.uniform(-5, 5)),
            "width_px": float(rng.uniform(28, 44)), "height_px": float(rng.uniform(20, 32)),
            "color": pick_color(rng, ("white",)), "x": float(rng.uniform(110, 210)),
            "restitution": 0.25, "delay_s": 0.15}


def _box_pose(p: dict, t: np.ndarray):
    """Height of the box's centre above its resting height, and its angle, over time."""
    w, h = p["width_px"], p["height_px"]
    fall = bounce_height(p["drop_m"] * cv.PX_PER_M, p["restitution"], cv.GRAVITY, t,
                         delay=p["delay_s"])
    landed = np.maximum.accumulate((fall <= 0) & (t > p["delay_s"]))
    t_land = t[landed.argmax()] if landed.any() else np.inf
    angle = p["spin_rad_s"] * np.clip(t - p["delay_s"], 0, None)
    # After landing the box tips onto its nearest flat side and stays there.
    at_land = p["spin_rad_s"] * max(t_land - p["delay_s"], 0.0) if np.isfinite(t_land) else 0.0
    flat = np.round(at_land / (np.pi / 2)) * (np.pi / 2)
    settle = np.exp(-np.clip(t - t_land, 0, None) * 9.0)
    angle = np.where(t > t_land, flat + (at_land - flat) * settle, angle)
    reach = 0.5 * (w * np.abs(np.sin(angle)) + h * np.abs(np.cos(angle)))
    return fall + reach, angle


def render_box(p: dict) -> np.ndarray:
    centre_h, angle = _box_pose(p, cv.times())
    base = cv.backdrop(*ROOM, FLOOR)
    frames = []
    for h, a in zip(centre_h, angle):
        img = base.copy()
        cv.ellipse(img, (p["x"], cv.GROUND_Y + 2), p["width_px"] * 0.7, 3, (60, 45, 35), 0.45)
        centre = (p["x"], cv.GROUND_Y - h)
        cv.rect(img, centre, p["width_px"], p["height_px"], rgb(p["color"]), angle=a)
        cv.rect(img, centre, p["width_px"] * 0.9, 4, np.array(rgb(p["color"])) * 0.7, angle=a)
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_box(p: dict) -> tuple[str, str]:
    brief = f"A {p['color']} box tumbles down, lands on the floor with a small bounce and settles."
    full = (f"A {p['color']} taped cardboard box is dropped from {p['drop_m']:.1f} m, spinning "
            f"as it falls. It hits the floor, bounces slightly, tips over onto its nearest flat "
            f"side and lies still for the rest of the clip.")
    return brief, full


def sample_pot(rng) -> dict:
    n = int(rng.integers(14, 22))
    return {"drop_m": float(rng.uniform(1.7, 2.4)), "x": float(rng.uniform(120, 200)),
            "color": pick_color(rng, ("white", "yellow")), "radius_px": 14.0, "delay_s": 0.1,
            "shard_vx": [float(v) for v in rng.normal(0, 90, n)],
            "shard_vy": [float(v) for v in -rng.uniform(60, 220, n)],
            "shard_size": [float(v) for v in rng.uniform(3, 7, n)],
            "shard_angle": [float(v) for v in rng.uniform(0, np.pi, n)]}


def render_pot(p: dict) -> np.ndarray:
    t = cv.times()
    drop, r = p["drop_m"] * cv.PX_PER_M, p["radius_px"]
    t_hit = p["delay_s"] + np.sqrt(2 * drop / cv.GRAVITY)
    height = np.clip(drop - 0.5 * cv.GRAVITY * np.clip(t - p["delay_s"], 0, None) ** 2, 0, None)
    after = t[t >= t_hit] - t_hit
    n = len(p["shard_vx"])
    start = np.tile([p["x"], cv.GROUND_Y - r], (n, 1))
    vel = np.stack([p["shard_vx"], p["shard_vy"]], axis=1)
    # The pot lands within the first second, so ``after`` spans many frames.
    shards = particles(start, vel, after, cv.GRAVITY, drag=0.5, floor_y=cv.GROUND_Y - 2)
    base = cv.backdrop(*ROOM, FLOOR)
    color = np.array(rgb(p["color"]))
    frames = []
    for i, time in enumerate(t):
        img = base.copy()
        if time < t_hit:
            centre = (p["x"], cv.GROUND_Y - r - height[i])
            cv.polygon(img, [(centre[0] - r, centre[1] - r), (centre[0] + r, centre[1] - r),
                             (centre[0] + 0.7 * r, centre[1] + r), (centre[0] - 0.7 * r, centre[1] + r)],
                       color)
            cv.rect(img, (centre[0], centre[1] - r), 2.3 * r, 4, color * 0.8)
        else:
            k = i - int(np.argmax(t >= t_hit))
            for j, (x, y) in enumerate(shards[k]):
                a = p["shard_angle"][j] + (0.0 if y >= cv.GROUND_Y - 3 else 6 * after[k])
                cv.rect(img, (x, y - p["shard_size"][j] / 2), p["shard_size"][j] * 1.6,
                        p["shard_size"][j], color * (0.75 + 0.25 * (j % 2)), angle=a)
            for j in range(6):  # a dust cloud spreading from the impact and settling
                spread = 8 + 40 * (1 - np.exp(-2.5 * after[k]))
                cv.disc(img, (p["x"] + (j - 2.5) * spread / 3, cv.GROUND_Y - 6 - spread / 5),
                        4 + spread / 4, (190, 180, 170), alpha=0.35 * np.exp(-1.5 * after[k]))
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_pot(p: dict) -> tuple[str, str]:
    brief = f"A {p['color']} clay pot falls to the floor and shatters into pieces."
    full = (f"A {p['color']} clay flower pot falls from {p['drop_m']:.1f} m straight down. When "
            f"it hits the wooden floor it breaks into {len(p['shard_vx'])} shards that fly "
            f"outwards, arc under gravity, bounce and slide to a stop scattered around the impact "
            f"point, while a small cloud of dust spreads out and fades.")
    return brief, full


BALL = Scene("bouncing_ball", ("Fall",), sample_ball, render_ball, describe_ball)
BOX = Scene("dropped_box", ("Fall",), sample_box, render_box, describe_box)
POT = Scene("shattering_pot", ("Fall", "Diffusion"), sample_pot, render_pot, describe_pot)
