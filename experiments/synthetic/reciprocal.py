"""Reciprocal: cyclic motion -- a swinging pendulum and a mass bobbing on a spring."""
from __future__ import annotations

import numpy as np

from experiments.synthetic import canvas as cv
from experiments.synthetic.physics import pendulum_angles
from experiments.synthetic.scene import Scene, pick_color, rgb

WALL = ((220, 222, 228), (200, 204, 212))
PIVOT = np.array([160.0, 28.0])


def sample_pendulum(rng) -> dict:
    return {"length_px": float(rng.uniform(110, 160)), "length_m": float(rng.uniform(0.25, 0.6)),
            "theta0_rad": float(rng.uniform(0.35, 0.8)),
            "omega0_rad_s": 0.0, "damping_1_s": float(rng.uniform(0.0, 0.15)),
            "bob_px": float(rng.uniform(10, 15)), "color": pick_color(rng, ("white",)),
            "start_side": int(rng.choice([-1, 1]))}


def render_pendulum(p: dict) -> np.ndarray:
    length = p["length_px"]
    # A table-top pendulum drawn large: its own scale, so the period fits the clip.
    gravity_px = 9.81 * length / p["length_m"]
    angles = p["start_side"] * pendulum_angles(p["theta0_rad"], p["omega0_rad_s"], length,
                                               p["damping_1_s"], gravity_px, cv.times())
    base = cv.backdrop(*WALL)
    cv.rect(base, (160, PIVOT[1] - 6), 120, 8, (90, 80, 70))
    frames = []
    for angle in angles:
        img = base.copy()
        bob = PIVOT + length * np.array([np.sin(angle), np.cos(angle)])
        cv.segment(img, PIVOT, bob, 2.5, (60, 60, 60))
        cv.disc(img, PIVOT, 4, (40, 40, 40))
        cv.disc(img, bob, p["bob_px"], rgb(p["color"]))
        cv.disc(img, bob - p["bob_px"] / 3, p["bob_px"] / 3, (255, 255, 255), 0.4)
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_pendulum(p: dict) -> tuple[str, str]:
    period = 2 * np.pi * np.sqrt(p["length_m"] / 9.81)
    d = p["damping_1_s"]
    decay = ("without losing any height" if d == 0 else
             "its swings dying away quickly" if d >= 1.5 else
             "its swings shrinking visibly" if d >= 0.3 else "losing almost no height")
    brief = f"A pendulum with a {p['color']} bob swings back and forth, {decay}."
    full = (f"A {p['color']} metal bob hangs from a pivot on a rod {p['length_m'] * 100:.0f} cm "
            f"long. Released {np.degrees(p['theta0_rad']):.0f} degrees from vertical, it swings "
            f"to and fro with a period of about {period:.1f} s, {decay} (damping {d:.2f} per "
            f"second).")
    return brief, full


def sample_spring(rng) -> dict:
    return {"rest_y_px": float(rng.uniform(125, 150)), "amplitude_px": float(rng.uniform(20, 35)),
            "frequency_hz": float(rng.uniform(0.8, 1.5)), "damping_ratio": float(rng.uniform(0, 0.04)),
            "mass_px": float(rng.uniform(26, 36)), "color": pick_color(rng, ("white",)),
            "coils": 7}


def _spring(img, top: float, bottom: float, coils: int) -> None:
    ys = np.linspace(top, bottom, 2 * coils + 1)
    xs = 160 + np.array([0] + [(-1) ** k * 10 for k in range(2 * coils - 1)] + [0])
    for k in range(len(ys) - 1):
        cv.segment(img, (xs[k], ys[k]), (xs[k + 1], ys[k + 1]), 2, (70, 70, 80))


def render_spring(p: dict) -> np.ndarray:
    t = cv.times()
    omega = 2 * np.pi * p["frequency_hz"]
    envelope = np.exp(-p["damping_ratio"] * omega * t)
    centre = p["rest_y_px"] + p["amplitude_px"] * envelope * np.cos(omega * t)
    base = cv.backdrop(*WALL)
    cv.rect(base, (160, 16), 120, 10, (90, 80, 70))
    frames = []
    for y in centre:
        img = base.copy()
        top_of_mass = y - p["mass_px"] / 2
        _spring(img, 21, top_of_mass, p["coils"])
        cv.rect(img, (160, y), p["mass_px"] * 1.3, p["mass_px"], rgb(p["color"]))
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_spring(p: dict) -> tuple[str, str]:
    brief = f"A {p['color']} weight bobs up and down on a spring."
    full = (f"A {p['color']} weight hangs from a coil spring attached to a beam. It oscillates up "
            f"and down about {p['frequency_hz']:.1f} times a second with an amplitude of "
            f"{p['amplitude_px'] / cv.PX_PER_M * 100:.0f} cm, the spring stretching and "
            f"compressing, with hardly any loss of amplitude.")
    return brief, full


PENDULUM = Scene("pendulum", ("Reciprocal",), sample_pendulum, render_pendulum, describe_pendulum)
SPRING = Scene("spring_mass", ("Reciprocal",), sample_spring, render_spring, describe_spring)
