"""Diffusion: ink spreading from a drop in still water, and an exploding firework."""
from __future__ import annotations

import numpy as np

from experiments.synthetic import canvas as cv
from experiments.synthetic.physics import particles
from experiments.synthetic.scene import Scene, pick_color, rgb

WATER = ((205, 225, 240), (170, 200, 225))
NIGHT = ((10, 15, 40), (35, 40, 80))


def sample_ink(rng) -> dict:
    return {"x": float(rng.uniform(110, 210)), "y": float(rng.uniform(90, 130)),
            "diffusivity_px2_s": float(rng.uniform(250, 500)), "particles": 400,
            "color": pick_color(rng, ("white", "yellow")), "drop_s": 0.4,
            "particle_seed": int(rng.integers(2**31))}


def _ink_paths(p: dict, t: np.ndarray) -> np.ndarray:
    """Brownian paths from one point: spread grows like sqrt(2 D t) after the drop lands."""
    rng = np.random.default_rng(p["particle_seed"])
    dt = t[1] - t[0]
    steps = rng.normal(0, np.sqrt(2 * p["diffusivity_px2_s"] * dt), (len(t), p["particles"], 2))
    steps[t <= p["drop_s"]] = 0.0
    return np.array([p["x"], p["y"]]) + np.cumsum(steps, axis=0)


def render_ink(p: dict) -> np.ndarray:
    t = cv.times()
    paths = _ink_paths(p, t)
    base = cv.backdrop(*WATER)
    color = rgb(p["color"])
    frames = []
    for i, time in enumerate(t):
        img = base.copy()
        if time <= p["drop_s"]:  # the drop falls in from above
            y = p["y"] - 90 * (1 - time / p["drop_s"]) ** 2
            cv.disc(img, (p["x"], y), 4, color)
        else:
            # The same ink over a growing area: the cloud widens and fades.
            cv.splat(img, paths[i], color, sigma=3.0, gain=6.0, max_alpha=0.9)
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_ink(p: dict) -> tuple[str, str]:
    brief = f"A drop of {p['color']} ink falls into still water and slowly spreads out."
    full = (f"A single drop of {p['color']} ink falls into a tank of still, pale blue water. "
            f"From the point where it lands the ink spreads out in every direction as a soft "
            f"cloud that grows wider and fainter over time (diffusivity about "
            f"{p['diffusivity_px2_s']:.0f} px^2/s), until it is a large, diluted haze.")
    return brief, full


def sample_firework(rng) -> dict:
    n = int(rng.integers(70, 110))
    angle = rng.uniform(0, 2 * np.pi, n)
    speed = rng.uniform(60, 160, n)
    return {"x": float(rng.uniform(110, 210)), "burst_y": float(rng.uniform(70, 100)),
            "burst_s": float(rng.uniform(0.5, 0.8)), "color": pick_color(rng, ("brown",)),
            "vx": [float(v) for v in speed * np.cos(angle)],
            "vy": [float(v) for v in speed * np.sin(angle)], "drag_1_s": 1.2}


def render_firework(p: dict) -> np.ndarray:
    t = cv.times()
    after = t - p["burst_s"]
    vel = np.stack([p["vx"], p["vy"]], axis=1)
    start = np.tile([p["x"], p["burst_y"]], (len(vel), 1))
    burst = int(np.argmax(after >= 0))
    sparks = particles(start, vel, t[burst:] - t[burst], 0.35 * cv.GRAVITY, p["drag_1_s"])
    base = cv.backdrop(*NIGHT, (25, 30, 25))
    color = np.array(rgb(p["color"]))
    frames = []
    for i, time in enumerate(t):
        img = base.copy()
        if after[i] < 0:  # the shell climbs from the ground to the burst point
            y = p["burst_y"] + (cv.GROUND_Y - p["burst_y"]) * (-after[i]) / p["burst_s"]
            cv.segment(img, (p["x"], y), (p["x"], y + 12), 2, (250, 220, 160))
        else:
            glow = float(np.exp(-1.1 * after[i]))
            centre = np.array([p["x"], p["burst_y"]])
            # Smoke left behind by the sparks lingers, spreads and thins.
            smoke = centre + (sparks[i - burst] - centre) * 0.4
            cv.splat(img, smoke, (110, 110, 125), sigma=5.0, gain=4.0, max_alpha=0.45)
            if after[i] < 0.2:
                cv.disc(img, centre, 6 + 40 * after[i], (255, 250, 220), 1 - 5 * after[i])
            cv.splat(img, sparks[i - burst], color * glow + 60 * glow, sigma=1.0, gain=6.0)
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_firework(p: dict) -> tuple[str, str]:
    brief = f"A firework shell rises and bursts into {p['color']} sparks that spread and fall."
    full = (f"At night a firework shell climbs from the ground on a bright trail and bursts after "
            f"{p['burst_s']:.1f} s. {len(p['vx'])} {p['color']} sparks shoot outward in all "
            f"directions from the burst point, slow down in the air, curve downward under gravity "
            f"and dim as they burn out, leaving a drifting cloud of smoke that spreads and thins.")
    return brief, full


INK = Scene("ink_drop", ("Diffusion",), sample_ink, render_ink, describe_ink)
FIREWORK = Scene("firework", ("Diffusion", "Fall"), sample_firework, render_firework,
                 describe_firework)
