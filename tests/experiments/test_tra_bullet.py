"""The TRA paper's PyBullet set: physics sanity, clip shape, reproducibility, resumable build."""
import json

import numpy as np
import pytest

pytest.importorskip("pybullet")

from experiments import media  # noqa: E402
from experiments.synthetic import TRA_SPLIT, sweep_labels  # noqa: E402
from experiments.synthetic import tra_bullet as tb  # noqa: E402


@pytest.fixture(scope="module")
def jobs():
    return tb.tra_jobs(20231)


def _first(jobs, scene, split=tb.SCENARIO_SPLIT):
    return next(j["params"] for j in jobs if j["params"]["scene"] == scene and j["split"] == split)


def test_the_set_has_the_papers_counts_and_levels(jobs):
    splits = [j["split"] for j in jobs]
    assert len(jobs) == 380 and len({j["clip_key"] for j in jobs}) == 380
    assert splits.count(tb.SCENARIO_SPLIT) == 160 and splits.count(TRA_SPLIT) == 220
    sweep = [sweep_labels(j["params"]) for j in jobs if j["split"] == TRA_SPLIT]
    ball = sorted({s["parameter_value"] for s in sweep if s["scenario"] == "bouncing_ball"})
    pendulum = sorted({s["parameter_value"] for s in sweep if s["scenario"] == "pendulum"})
    assert ball == [round(0.1 * k, 1) for k in range(1, 11)]
    assert pendulum == [0.5 * k for k in range(11)]
    # the first six jobs are one of each group, so --limit 6 samples them all
    assert len({(j["params"]["scene"], j["split"]) for j in jobs[:6]}) == 6


@pytest.mark.parametrize("restitution", [0.3, 0.5, 0.7, 0.9, 1.0])
def test_ball_bounces_to_restitution_squared_of_its_drop(jobs, restitution):
    params = dict(_first(jobs, "bouncing_ball"), restitution=restitution, drop_m=1.6, vx_m_s=0.0,
                  frames=480, fps=240)  # 2 s sampled at every simulation step
    _, states = tb.simulate(params, render=False)
    height = states["positions"][:, 0, 2] - params["radius_m"]
    landed = int(np.argmax(height < 0.002))
    ratio = height[landed:].max() / params["drop_m"]
    # measured with Bullet's contact ERP off: within 3.5% of r^2 for r >= 0.3
    assert ratio == pytest.approx(restitution ** 2, rel=0.06)


def test_undamped_pendulum_keeps_its_amplitude(jobs):
    params = dict(_first(jobs, "pendulum"), frames=241)  # 10 s at 24 fps
    assert params["damping"] == 0.0
    _, states = tb.simulate(params, render=False)
    theta = np.abs(states["joints"][:, 0])
    peaks = [theta[i] for i in range(1, len(theta) - 1) if theta[i - 1] <= theta[i] >= theta[i + 1]]
    assert len(peaks) >= 10
    # frame-sampled peaks: within 1% of the release angle over 10 s
    assert np.allclose(peaks, params["theta0_rad"], rtol=0.01)


def test_damped_pendulum_decays_at_its_rate(jobs):
    params = dict(_first(jobs, "pendulum", TRA_SPLIT), damping=1.0, frames=121)
    _, states = tb.simulate(params, render=False)
    theta = np.abs(states["joints"][:, 0])
    # amplitude ~ exp(-damping t / 2): after 5 s, e^-2.5 = 8% of the release angle
    assert theta[-25:].max() < 0.15 * params["theta0_rad"]


@pytest.mark.parametrize("index", range(6))
def test_clips_are_48_frames_of_256_and_reproduce_from_stored_params(jobs, index):
    params = json.loads(json.dumps(jobs[index]["params"]))  # as stored in the database
    frames = tb.render(params)
    assert frames.shape == (48, 256, 256, 3) and frames.dtype == np.uint8
    assert frames.std(axis=0).max() > 0  # something moves
    assert np.array_equal(frames, tb.render(jobs[index]["params"]))
    assert params["seed"] == 20231 and params["rng_key"][0] == 20231


def test_sources_are_stored_exactly(tmp_path, jobs):
    key, _ = tb.render_source(jobs[0], tmp_path)
    _, frames = media.scan(tmp_path / f"{key}.mkv", "rgb24")
    assert np.array_equal(frames, tb.render(jobs[0]["params"]))
    assert tb.render_source(jobs[0], tmp_path) == (key, 0.0)  # present: not rendered again
