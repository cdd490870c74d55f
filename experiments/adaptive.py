"""QUEST+ level placement over a sweep's stored levels, from the answers stored so far.

The model is the report's people's fit (``analysis.report.tra.PEOPLE_FIT``,
``analysis.psychometric``): P(correct) = guess + (1 - guess - lapse) Phi(direction (x -
threshold) / s), guess 0.5 (each clip is shown both ways), width = the distance between the
curve's 5% and 95% points, the lapse rate in Wichmann & Hill's [0, 0.06] unknown. The direction (a curve that rises or
falls along the sweep) is the sweep's, where its physics says which way is easier
(``experiments.synthetic.curve_direction``); only where it does not are both in the grid. The prior is uniform over a grid
(:func:`parameter_grid`): threshold from one level step below the sweep to one above, in
quarter steps; width log-uniform from one level step (the fitter's smallest, below which
the levels cannot tell a curve from a step) to twice the sweep; lapse 0, 0.02, 0.04, 0.06;
the one direction given, or both.

Each next level is the stored level that minimises the expected entropy of the posterior
of the threshold alone, width, lapse and direction marginalised out (QUEST+, Watson 2017,
with Prins' 2013 psi-marginal choice of the parameter of interest): the procedure spends
trials on the threshold rather than on the lapse rate. A trial without an answer (timed
out) tells nothing and leaves the posterior as it was. Pure and deterministic: the same
answers give the same level, whoever asks and however often.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

GUESS = 0.5
LAPSES = (0.0, 0.02, 0.04, 0.06)
WIDTH_Z = 2 * special.ndtri(0.95)  # width / s of the normal sigmoid (5%-95%)


@dataclass(frozen=True)
class Grid:
    """A sweep's candidate levels and the parameter grid (flattened: one entry per
    combination of threshold, width, lapse and direction) with P(correct) at each level."""

    levels: np.ndarray
    threshold: np.ndarray
    width: np.ndarray
    lapse: np.ndarray
    direction: np.ndarray
    p_correct: np.ndarray  # (parameters, levels)

    @property
    def step(self) -> float:
        return float(np.diff(self.levels).min())


def parameter_grid(levels: Sequence[float], direction: int | None = None) -> Grid:
    """The QUEST+ grid over a sweep's stored ``levels`` (at least three, distinct), for a
    curve of the given ``direction`` (+1 rising, -1 falling) or, None, of either."""
    if direction not in (None, 1, -1):
        raise ValueError(f"a curve's direction is +1, -1 or None (unknown), got {direction!r}")
    x = np.unique(np.asarray(levels, float))
    if x.size < 3 or x.size != len(levels) or not np.isfinite(x).all():
        raise ValueError(f"an adaptive sweep needs at least 3 distinct finite levels, got {levels}")
    step, span = float(np.diff(x).min()), float(x[-1] - x[0])
    thresholds = np.arange(x[0] - step, x[-1] + step + step / 8, step / 4)
    widths = np.geomspace(step, 2 * span, 12)
    directions = (-1.0, 1.0) if direction is None else (float(direction),)
    t, w, lapse, d = (a.ravel() for a in np.meshgrid(thresholds, widths, LAPSES, directions,
                                                     indexing="ij"))
    p = GUESS + (1 - GUESS - lapse[:, None]) * special.ndtr(
        d[:, None] * (x[None, :] - t[:, None]) / (w[:, None] / WIDTH_Z))
    return Grid(x, t, w, lapse, d, p)


def posterior(grid: Grid, answers: Sequence[tuple[float, bool | None]]) -> np.ndarray:
    """The normalised posterior over ``grid`` after ``answers`` ((level, correct) in order;
    correct None: no answer, left out). A level off the grid is an error."""
    log_post = np.zeros(grid.threshold.size)
    for level, correct in answers:
        log_post = updated(grid, log_post, level, correct)
    return normalised(log_post)


def updated(grid: Grid, log_post: np.ndarray, level: float, correct: bool | None) -> np.ndarray:
    """The unnormalised log posterior ``log_post`` after one more answer (a simulation adds
    answers one at a time rather than recomputing :func:`posterior` from all of them)."""
    if correct is None:
        return log_post
    at = np.flatnonzero(np.isclose(grid.levels, level))
    if at.size != 1:
        raise ValueError(f"level {level} is not one of the sweep's {grid.levels.tolist()}")
    p = grid.p_correct[:, at[0]]
    with np.errstate(divide="ignore"):  # a lapse-free curve at 1: that answer rules it out
        return log_post + np.log(p if correct else 1 - p)


def normalised(log_post: np.ndarray) -> np.ndarray:
    post = np.exp(log_post - log_post.max())
    return post / post.sum()


def _threshold_marginal(grid: Grid, weights: np.ndarray) -> np.ndarray:
    """Summed over width, lapse and direction: weights (..., parameters) -> (..., thresholds)."""
    n_t = np.unique(grid.threshold).size
    return weights.reshape(*weights.shape[:-1], n_t, -1).sum(-1)


def _entropy(p: np.ndarray) -> np.ndarray:
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0.0), axis=-1)


def expected_entropies(grid: Grid, post: np.ndarray) -> np.ndarray:
    """Expected entropy of the threshold's posterior after one more trial at each level."""
    right = post[:, None] * grid.p_correct  # (parameters, levels)
    wrong = post[:, None] - right
    out = np.zeros(grid.levels.size)
    for joint in (right, wrong):
        p_outcome = joint.sum(0)
        marginal = _threshold_marginal(grid, joint.T) / np.where(p_outcome, p_outcome, 1)[:, None]
        out += p_outcome * _entropy(marginal)
    return out


def summary(grid: Grid, post: np.ndarray) -> dict:
    """The posterior's threshold mean, sd and 95% credible interval (equal tails), its
    half-width in level steps, whether that interval lies within the sweep's levels, and the
    means of width and lapse: what a choice is stored with."""
    thresholds = np.unique(grid.threshold)
    marginal = _threshold_marginal(grid, post)
    cdf = np.cumsum(marginal)
    lo, hi = (float(thresholds[min(int(np.searchsorted(cdf, q)), thresholds.size - 1)])
              for q in (0.025, 0.975))
    mean = float(marginal @ thresholds)
    return {"threshold_mean": round(mean, 6),
            "threshold_sd": round(float(np.sqrt(marginal @ (thresholds - mean) ** 2)), 6),
            "threshold_lo": round(lo, 6), "threshold_hi": round(hi, 6),
            "halfwidth_steps": round((hi - lo) / 2 / grid.step, 4),
            "within_levels": bool(grid.levels[0] <= lo and hi <= grid.levels[-1]),
            "width_mean": round(float(post @ grid.width), 6),
            "lapse_mean": round(float(post @ grid.lapse), 6),
            "p_rising": round(float(post @ (grid.direction > 0)), 6)}


def next_level(grid: Grid, answers: Sequence[tuple[float, bool | None]]) -> tuple[float, dict]:
    """The level QUEST+ places the next trial at after ``answers``, and the posterior summary
    that made the choice (with ``n_answers`` and the expected entropy at that level). Ties go
    to the lowest level, so the choice is a function of the answers alone."""
    return choose(grid, posterior(grid, answers), sum(1 for _, c in answers if c is not None))


def choose(grid: Grid, post: np.ndarray, n_answers: int) -> tuple[float, dict]:
    """:func:`next_level` from the posterior ``post`` after ``n_answers`` answers."""
    entropies = expected_entropies(grid, post)
    best = int(np.argmin(np.round(entropies, 12)))
    said = summary(grid, post) | {
        "n_answers": n_answers, "expected_entropy": round(float(entropies[best]), 6)}
    return float(grid.levels[best]), said


def reached(said: dict, halfwidth_steps: float | None) -> bool:
    """Whether a sweep may stop: the threshold's 95% credible interval in ``said`` (a
    :func:`summary`) is at most ``halfwidth_steps`` level steps either side and lies within
    the sweep's levels; never where no target is set (None or 0: every slot is run).

    An interval that reaches past the sweep's end is the prior's edge, not precision: a
    participant at chance, or one whose curve runs the other way, piles the posterior there
    after a few trials (at chance, 6-28 trials with a target of one step), and the sweep
    would stop on a threshold the levels never bracketed."""
    return bool(halfwidth_steps) and said["within_levels"] and \
        said["halfwidth_steps"] <= halfwidth_steps
