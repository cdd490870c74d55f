"""Proceed: forward locomotion -- a walking person and a driving car."""
from __future__ import annotations

import numpy as np

from experiments.synthetic import canvas as cv
from experiments.synthetic.scene import Scene, pick_color, rgb, side

SKY = ((150, 190, 235), (215, 230, 245))
GRASS = (95, 150, 70)


def _posts(img, xs) -> None:
    for x in xs:  # static landmarks make the motion relative to the world visible
        cv.segment(img, (x, cv.GROUND_Y - 48), (x, cv.GROUND_Y), 4, (90, 70, 50))
        cv.disc(img, (x, cv.GROUND_Y - 56), 13, (50, 110, 50))


def sample_walker(rng) -> dict:
    direction = 1 if rng.random() < 0.5 else -1
    return {"direction": direction, "scale": float(rng.uniform(0.85, 1.1)),
            "cadence_hz": float(rng.uniform(0.8, 1.05)), "shirt": pick_color(rng),
            "start_x": 50.0 if direction > 0 else 270.0,
            "posts_x": sorted(float(x) for x in rng.uniform(20, 300, size=3))}


def _leg(hip, thigh_angle, knee_flex, s, d):
    thigh, shin = 20 * s, 19 * s
    knee = hip + np.array([d * np.sin(thigh_angle), np.cos(thigh_angle)]) * thigh
    shin_angle = thigh_angle - knee_flex
    ankle = knee + np.array([d * np.sin(shin_angle), np.cos(shin_angle)]) * shin
    return knee, ankle


def render_walker(p: dict) -> np.ndarray:
    s, d = p["scale"], p["direction"]
    amplitude = 0.45
    # Speed from the gait: two steps per cycle, each about 2 * leg * sin(amplitude) long.
    speed = 4 * 39 * s * np.sin(amplitude) * p["cadence_hz"] * 0.9
    base = cv.backdrop(*SKY, GRASS)
    _posts(base, p["posts_x"])
    frames = []
    for t in cv.times():
        img = base.copy()
        phase = 2 * np.pi * p["cadence_hz"] * t
        legs = []
        for offset in (np.pi, 0.0):  # far leg first, drawn darker
            angle = amplitude * np.sin(phase + offset)
            flex = 0.9 * max(0.0, np.cos(phase + offset))  # the knee bends while swinging
            legs.append((angle, flex))
        drops = [_leg(np.zeros(2), a, f, s, d)[1][1] for a, f in legs]
        hip = np.array([p["start_x"] + d * speed * t, cv.GROUND_Y - max(drops) - 2 * s])
        shoulder = hip + np.array([d * 3 * s, -32 * s])  # a slight forward lean
        for (angle, flex), shade in zip(legs, (0.6, 1.0)):
            knee, ankle = _leg(hip, angle, flex, s, d)
            color = np.array((60, 60, 90)) * shade
            cv.segment(img, hip, knee, 7 * s, color)
            cv.segment(img, knee, ankle, 6 * s, color)
            cv.segment(img, ankle, ankle + np.array([d * 7 * s, 0]), 4 * s, (40, 30, 30))
        for sign, shade in ((1, 0.6), (-1, 1.0)):  # arms swing against the legs
            a = sign * 0.5 * np.sin(phase)
            elbow = shoulder + np.array([d * np.sin(a), np.cos(a)]) * 13 * s
            hand = elbow + np.array([d * np.sin(a + 0.4), np.cos(a + 0.4)]) * 12 * s
            cv.segment(img, shoulder, elbow, 5 * s, np.array(rgb(p["shirt"])) * shade)
            cv.segment(img, elbow, hand, 4 * s, np.array((230, 190, 160)) * shade)
        cv.segment(img, hip, shoulder, 11 * s, rgb(p["shirt"]))
        head = shoulder + np.array([d * 2 * s, -11 * s])
        cv.disc(img, head, 8 * s, (230, 190, 160))
        cv.disc(img, head + np.array([d * 7.5 * s, 0.5 * s]), 2.2 * s, (220, 170, 140))  # nose
        cv.disc(img, head + np.array([d * 4 * s, -2 * s]), 1.2 * s, (30, 30, 30))  # eye
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_walker(p: dict) -> tuple[str, str]:
    brief = f"A person in a {p['shirt']} shirt walks from {side(p['direction'])} across a meadow."
    full = (f"Side view of a meadow with three trees. A person wearing a {p['shirt']} shirt walks "
            f"forward from {side(p['direction'])}, facing the way they move, at about "
            f"{p['cadence_hz']:.2f} gait cycles per second: the legs alternate, each knee bends "
            f"as the leg swings forward, the arms swing opposite to the legs, and the body rises "
            f"and dips slightly with every step. The walker passes the trees and keeps going.")
    return brief, full


def sample_car(rng) -> dict:
    direction = 1 if rng.random() < 0.5 else -1
    return {"direction": direction, "speed_px_s": float(rng.uniform(45, 70)),
            "scale": float(rng.uniform(0.85, 1.05)), "body": pick_color(rng, ("white",)),
            "start_x": 70.0 if direction > 0 else 250.0, "puff_period_s": 0.25,
            "posts_x": sorted(float(x) for x in rng.uniform(20, 300, size=3))}


def _car_body(img, x, p, wheel_angle) -> None:
    s, d = p["scale"], p["direction"]
    y = cv.GROUND_Y - 11 * s
    cv.rect(img, (x, y - 14 * s), 92 * s, 20 * s, rgb(p["body"]))
    # The cabin's slanted windscreen faces the direction of travel.
    cab = [(x - d * 30 * s, y - 24 * s), (x - d * 26 * s, y - 40 * s),
           (x + d * 8 * s, y - 40 * s), (x + d * 24 * s, y - 24 * s)]
    cv.polygon(img, cab, np.array(rgb(p["body"])) * 0.85)
    cv.polygon(img, [(x + d * 4 * s, y - 37 * s), (x + d * 9 * s, y - 37 * s),
                     (x + d * 20 * s, y - 26 * s), (x + d * 4 * s, y - 26 * s)], (170, 210, 235))
    cv.disc(img, (x + d * 44 * s, y - 18 * s), 3.5 * s, (250, 240, 170))  # headlight
    cv.rect(img, (x - d * 46 * s, y - 6 * s), 6 * s, 3 * s, (70, 70, 70))  # tailpipe
    for wx in (x - 28 * s, x + 28 * s):
        cv.disc(img, (wx, y), 11 * s, (35, 35, 35))
        cv.disc(img, (wx, y), 5 * s, (170, 170, 170))
        for k in range(2):
            a = wheel_angle + k * np.pi / 2
            offset = np.array([np.cos(a), np.sin(a)]) * 9 * s
            cv.segment(img, (wx, y) - offset, (wx, y) + offset, 2 * s, (120, 120, 120))


def render_car(p: dict) -> np.ndarray:
    s, d = p["scale"], p["direction"]
    base = cv.backdrop(*SKY, (120, 120, 125))
    _posts(base, p["posts_x"])
    spawn = np.arange(0.0, 3.0, p["puff_period_s"])
    frames = []
    for t in cv.times():
        img = base.copy()
        x = p["start_x"] + d * p["speed_px_s"] * t
        for t0 in spawn[spawn <= t]:  # exhaust puffs stay behind, grow and fade
            age = t - t0
            px = p["start_x"] + d * p["speed_px_s"] * t0 - d * 50 * s - d * 6 * age
            cv.disc(img, (px, cv.GROUND_Y - 17 * s - 14 * age), 3 + 9 * age, (200, 200, 200),
                    alpha=max(0.0, 0.55 - 0.5 * age))
        _car_body(img, x, p, d * p["speed_px_s"] * t / (11 * s))
        frames.append(cv.to_uint8(img))
    return np.stack(frames)


def describe_car(p: dict) -> tuple[str, str]:
    brief = f"A {p['body']} car drives forward from {side(p['direction'])} along a road."
    full = (f"Side view of a grey road with trees. A {p['body']} car drives forward from "
            f"{side(p['direction'])} at a steady {p['speed_px_s'] / cv.PX_PER_M:.1f} m/s, "
            f"windscreen and headlight at the front, its wheels turning as it rolls. Small puffs "
            f"of exhaust come out of the tailpipe at the rear, stay behind the car, rise, grow "
            f"and fade away.")
    return brief, full


WALKER = Scene("walker", ("Proceed",), sample_walker, render_walker, describe_walker)
CAR = Scene("car", ("Proceed",), sample_car, render_car, describe_car)
