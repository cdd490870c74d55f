"""experiments.synthetic: deterministic, physically sensible built-in clips."""
from collections import Counter

import numpy as np
import pytest

from experiments import media
from experiments.categories import CATEGORIES
from experiments.synthetic import (
    DAMPINGS,
    GENERATOR_VERSION,
    RESTITUTIONS,
    SCENES,
    TRA_SPLIT,
    _regular_jobs,
    _sweep_jobs,
    render_job,
    synthetic_specs,
)
from experiments.synthetic.physics import bounce_height, pendulum_angles, rest_time


def test_default_plan_has_eight_clips_per_category_and_multi_labels():
    jobs = _regular_jobs(seed=1, per_category=8)
    primary = Counter(job["clip_key"].split("-")[0] for job in jobs)
    assert primary == {category.lower(): 8 for category in CATEGORIES}
    labels = [SCENES[job["params"]["scene"]].categories for job in jobs]
    assert all(Counter(c for ls in labels for c in ls)[category] >= 8 for category in CATEGORIES)
    assert {("Fall", "Diffusion"), ("Diffusion", "Fall"), ("Put", "Fall")} <= set(labels)
    assert all(job["params"]["seed"] == 1 and job["params"]["generator"] == GENERATOR_VERSION
               for job in jobs)


def test_tra_sweeps():
    jobs = _sweep_jobs(seed=5)
    balls = [j["params"] for j in jobs if j["params"]["scenario"] == "bouncing_ball"]
    pendulums = [j["params"] for j in jobs if j["params"]["scenario"] == "pendulum"]
    assert [p["restitution"] for p in balls] == list(RESTITUTIONS) == [
        0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert [p["damping"] for p in pendulums] == list(DAMPINGS) == [0, 0.5, 1, 2, 3, 4, 5]
    assert {j["split"] for j in jobs} == {TRA_SPLIT} and len(jobs) == 17


@pytest.mark.parametrize("name", sorted(SCENES))
def test_every_scene_renders_a_moving_clip(name):
    scene = SCENES[name]
    params = scene.sample(np.random.default_rng(11))
    frames = scene.render(params)
    assert frames.shape == (90, 240, 320, 3) and frames.dtype == np.uint8
    steps = np.abs(np.diff(frames.astype(np.int16), axis=0)).mean(axis=(1, 2, 3))
    assert (steps > 0).sum() > 20  # something moves through much of the clip
    assert not np.array_equal(frames[0], frames[-1])
    brief, comprehensive = scene.describe(params)
    assert 20 < len(brief) < len(comprehensive)


def test_same_seed_same_files_different_seed_differs(tmp_path):
    # in a pool of two (the suite's builds run in-process), rendered again in-process below
    specs = synthetic_specs(tmp_path / "a", seed=3, clips_per_category=1, include_sweeps=False,
                            workers=2)
    assert [s.clip_key.split("-")[0] for s in specs] == [c.lower() for c in CATEGORIES]
    info = media.probe(specs[0].path)
    assert (info.frame_count, info.fps, info.width, info.height) == (90, 30.0, 320, 240)
    for spec in specs:
        assert spec.annotation_brief and spec.annotation_comprehensive and spec.categories
        assert spec.params["seed"] == 3 and spec.split is None
    # Rendering the same job again, elsewhere, gives the same bytes; another seed does not.
    again = render_job(_regular_jobs(seed=3, per_category=1)[1], tmp_path / "b")
    assert again.params == specs[1].params
    assert media.sha256_file(again.path) == media.sha256_file(specs[1].path)
    other = render_job(_regular_jobs(seed=4, per_category=1)[1], tmp_path / "c")
    assert other.params != specs[1].params
    assert media.sha256_file(other.path) != media.sha256_file(specs[1].path)


def test_sweep_clips_show_their_dissipation(tmp_path):
    jobs = {j["clip_key"]: j for j in _sweep_jobs(seed=0)}
    def last_second_motion(key):
        frames = media.decode_frames(render_job(jobs[key], tmp_path).path)
        return np.abs(np.diff(frames[-30:].astype(np.int16), axis=0)).mean()
    # Restitution 0.1 rests early; 1.0 bounces for ever.  Damping 5 stops; 0 keeps swinging.
    assert last_second_motion("tra-bounce-e0.1") == 0 < last_second_motion("tra-bounce-e1.0")
    assert last_second_motion("tra-pendulum-d5.0") < 0.01 < last_second_motion("tra-pendulum-d0.0")


def test_bounce_physics():
    g, drop = 589.0, 120.0
    t = np.linspace(0, 3, 30001)
    for e in (0.5, 0.8):
        h = bounce_height(drop, e, g, t)
        peaks = [h[i] for i in range(1, len(h) - 1) if h[i - 1] < h[i] >= h[i + 1] and h[i] > 1]
        # Each rebound peak is e^2 times the one before (energy falls by e^2 per impact).
        assert np.allclose(np.array(peaks[1:3]) / np.array(peaks[:2]), e * e, rtol=1e-3)
        assert peaks[0] == pytest.approx(drop * e * e, rel=1e-3)
    assert rest_time(drop, 0.5, g) == pytest.approx(np.sqrt(2 * drop / g) * 3, rel=0.05)
    assert rest_time(drop, 1.0, g) == float("inf")


def test_pendulum_physics():
    t = np.arange(0, 3, 1 / 300)
    length, g = 100.0, 981.0
    free = pendulum_angles(0.05, 0.0, length, 0.0, g, t, substeps=4)
    crossings = t[1:][np.diff(np.sign(free)) != 0]
    # Small swings: period 2*pi*sqrt(L/g) (half a period between zero crossings).
    assert np.diff(crossings).mean() * 2 == pytest.approx(2 * np.pi * np.sqrt(length / g), rel=1e-2)
    damped = pendulum_angles(0.2, 0.0, length, 2.0, g, t, substeps=4)
    # theta'' + b theta' + (g/L) theta = 0 decays with the envelope exp(-b t / 2).
    late = np.abs(damped[t >= 2]).max()
    assert 0.2 * np.exp(-3.0) * 0.9 < late < 0.2 * np.exp(-2.0) * 1.1


def test_bad_arguments():
    with pytest.raises(ValueError, match="seed"):
        synthetic_specs("unused", seed=-1)
    with pytest.raises(ValueError, match="clips_per_category"):
        synthetic_specs("unused", seed=1, clips_per_category=0)
