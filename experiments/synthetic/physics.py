"""Closed-form and integrated trajectories used by the synthetic scenes (pixels, seconds)."""
from __future__ import annotations

import math

import numpy as np

# Bounces slower than this (px/s) end in rest: the ball would otherwise chatter forever.
REST_SPEED = 12.0


def _arcs(t_hit: float, first_speed: float, restitution: float, gravity: float,
          horizon: float):
    """(start, speed) of each rebound arc until rest or until ``horizon`` seconds."""
    start, speed = t_hit, first_speed
    while speed > REST_SPEED and start < horizon:
        yield start, speed
        start, speed = start + 2 * speed / gravity, speed * restitution
    yield start, 0.0


def bounce_height(drop_px: float, restitution: float, gravity: float, t: np.ndarray,
                  delay: float = 0.0, up_speed: float = 0.0) -> np.ndarray:
    """Height above the floor of a ball released at ``drop_px`` that bounces with ``restitution``.

    Exact between impacts: each impact multiplies the speed by the restitution coefficient;
    below ``REST_SPEED`` the ball stays on the floor (restitution 1 bounces for ever).
    """
    t = np.asarray(t, float) - delay
    height = np.full(t.shape, float(drop_px))
    v0 = up_speed
    t_hit = (v0 + np.sqrt(v0 * v0 + 2 * gravity * drop_px)) / gravity
    flying = (t >= 0) & (t < t_hit)
    height[flying] = drop_px + v0 * t[flying] - 0.5 * gravity * t[flying] ** 2
    first = restitution * (gravity * t_hit - v0)
    for start, speed in _arcs(t_hit, first, restitution, gravity, float(t.max(initial=0.0))):
        if speed == 0.0:
            height[t >= start] = 0.0
            break
        arc = (t >= start) & (t < start + 2 * speed / gravity)
        dt = t[arc] - start
        height[arc] = speed * dt - 0.5 * gravity * dt ** 2
    return height


def rest_time(drop_px: float, restitution: float, gravity: float, horizon: float = 60.0) -> float:
    """When :func:`bounce_height` comes to rest (seconds after release; inf past ``horizon``)."""
    t_hit = float(np.sqrt(2 * drop_px / gravity))
    for start, speed in _arcs(t_hit, restitution * gravity * t_hit, restitution, gravity, horizon):
        if speed == 0.0:
            return start if start < horizon else float("inf")
    return float("inf")


def pendulum_angles(theta0: float, omega0: float, length_px: float, damping: float,
                    gravity: float, t: np.ndarray, substeps: int = 20) -> np.ndarray:
    """theta'' = -(g/L) sin(theta) - damping * theta', integrated with RK4 (damping in 1/s)."""
    stiffness = gravity / length_px

    def accel(theta, omega):  # math.sin: scalar steps, numpy would only add overhead
        return -stiffness * math.sin(theta) - damping * omega

    dt = (t[1] - t[0]) / substeps if len(t) > 1 else 0.0
    theta, omega, out = float(theta0), float(omega0), np.empty(len(t))
    for i in range(len(t)):
        out[i] = theta
        for _ in range(substeps):
            k1t, k1w = omega, accel(theta, omega)
            k2t, k2w = omega + 0.5 * dt * k1w, accel(theta + 0.5 * dt * k1t, omega + 0.5 * dt * k1w)
            k3t, k3w = omega + 0.5 * dt * k2w, accel(theta + 0.5 * dt * k2t, omega + 0.5 * dt * k2w)
            k4t, k4w = omega + dt * k3w, accel(theta + dt * k3t, omega + dt * k3w)
            theta += dt / 6 * (k1t + 2 * k2t + 2 * k3t + k4t)
            omega += dt / 6 * (k1w + 2 * k2w + 2 * k3w + k4w)
    return out


def particles(pos0: np.ndarray, vel0: np.ndarray, t: np.ndarray, gravity: float, drag: float,
              floor_y: float | None = None, restitution: float = 0.3,
              friction: float = 4.0) -> np.ndarray:
    """Positions ``(T, N, 2)`` of point particles under gravity and linear drag.

    Semi-implicit Euler at 4 substeps per frame; particles hitting ``floor_y`` bounce with
    ``restitution`` and slide to a stop (``friction`` in 1/s).
    """
    pos, vel = pos0.astype(float).copy(), vel0.astype(float).copy()
    dt = (t[1] - t[0]) / 4
    out = np.empty((len(t), len(pos), 2))
    for i in range(len(t)):
        out[i] = pos
        for _ in range(4):
            vel[:, 1] += gravity * dt
            vel *= np.exp(-drag * dt)
            pos += vel * dt
            if floor_y is not None:
                hit = pos[:, 1] > floor_y
                pos[hit, 1] = floor_y
                vel[hit, 1] = np.where(vel[hit, 1] > 60, -restitution * vel[hit, 1], 0.0)
                vel[hit, 0] *= np.exp(-friction * dt)
    return out


def ease(u: np.ndarray | float) -> np.ndarray:
    """Smooth 0->1 ramp (zero speed at both ends), for hand-driven motions."""
    u = np.clip(u, 0.0, 1.0)
    return u * u * (3 - 2 * u)
