"""The Temporal Reversal Asymmetry paper's stimulus set, simulated with PyBullet (its engine).

380 clips of 48 frames at 256x256, rendered on the CPU by PyBullet's TinyRenderer from one
fixed camera per scenario:

* 160 scenario clips (split ``tra-scenario``), 40 per scenario: a bouncing ball
  (restitution 0.9), a pendulum (no damping), falling objects (restitution 0.3) and dominos
  (restitution 0.2), each clip with its own initial conditions.
* 220 sweep clips (split ``tra-sweep``, read by ``sweep_labels``): the ball at restitution
  0.1, 0.2, ..., 1.0 (10 levels x 11 repetitions) and the pendulum at damping 0.0, 0.5, ...,
  5.0 per second (11 levels x 10 repetitions).  Repetition ``k`` of a sweep has the same
  initial conditions at every level, so within a repetition only the dissipation changes.

Clip ``k`` of group ``g`` draws its initial conditions from
``numpy.random.default_rng([seed, g, k])``; ``render`` is a pure function of the recorded
parameters, which hold every physical quantity the simulation uses.  Bullet multiplies the
restitutions of the two bodies in a contact; the ground's is 1, so a body's restitution is
its restitution against the ground.
"""
from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata

import numpy as np

GENERATOR_VERSION = "chronoscope-tra-bullet/1"
TRA_SET = "tra"
SCENARIO_SPLIT = "tra-scenario"
SWEEP_SPLIT = "tra-sweep"  # == experiments.synthetic.TRA_SPLIT, the split the TRA probe reads
FRAMES, SIZE, FPS, SIM_HZ = 48, 256, 24, 240
GRAVITY = 9.81
SCENARIO_CLIPS = 40
SWEEP_RESTITUTIONS = tuple(round(0.1 * k, 1) for k in range(1, 11))
SWEEP_DAMPINGS = tuple(round(0.5 * k, 1) for k in range(11))
BALL_REPEATS, PENDULUM_REPEATS = 11, 10  # 10 x 11 + 11 x 10 = 220 sweep clips
PALETTE = {"red": (0.80, 0.18, 0.16), "blue": (0.16, 0.35, 0.80), "green": (0.18, 0.59, 0.24),
           "yellow": (0.92, 0.78, 0.16), "orange": (0.92, 0.51, 0.12),
           "purple": (0.51, 0.24, 0.67), "teal": (0.12, 0.59, 0.59)}


@contextmanager
def _quiet_stdout():
    """PyBullet's C code prints a build banner (on import) and argv (on connect) on stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
            ctypes.CDLL(None).fflush(None)  # C's stdout buffer, before fd 1 is restored
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _client():
    with _quiet_stdout():
        import pybullet
        from pybullet_utils.bullet_client import BulletClient

        return BulletClient(connection_mode=pybullet.DIRECT)


def _color(rng) -> str:
    return list(PALETTE)[int(rng.integers(len(PALETTE)))]


def _rgba(name: str) -> list[float]:
    return [*PALETTE[name], 1.0]


def _u(rng, low: float, high: float) -> float:
    return round(float(rng.uniform(low, high)), 4)


# --- the four scenarios: sample (initial conditions) and build (bodies in a fresh world) ---

def sample_ball(rng, restitution: float = 0.9) -> dict:
    return {"restitution": restitution, "drop_m": _u(rng, 1.2, 2.0), "radius_m": _u(rng, 0.08, 0.13),
            "vx_m_s": _u(rng, -0.3, 0.3), "x0_m": _u(rng, -0.3, 0.3), "mass_kg": 1.0,
            "lateral_friction": 0.5, "color": _color(rng)}


def build_ball(pb, p: dict) -> None:
    r = p["radius_m"]
    body = pb.createMultiBody(
        p["mass_kg"], pb.createCollisionShape(pb.GEOM_SPHERE, radius=r),
        pb.createVisualShape(pb.GEOM_SPHERE, radius=r, rgbaColor=_rgba(p["color"])),
        [p["x0_m"], 0.0, p["drop_m"] + r], useMaximalCoordinates=True)
    pb.changeDynamics(body, -1, restitution=p["restitution"], lateralFriction=p["lateral_friction"],
                      linearDamping=0.0, angularDamping=0.0)
    pb.resetBaseVelocity(body, [p["vx_m_s"], 0.0, 0.0], [0.0, 0.0, 0.0])


def sample_pendulum(rng, damping: float = 0.0) -> dict:
    return {"damping": damping, "length_m": _u(rng, 0.35, 0.6), "theta0_rad": _u(rng, 0.4, 0.9),
            "start_side": int(rng.choice([-1, 1])), "bob_radius_m": _u(rng, 0.05, 0.08),
            "bob_mass_kg": 1.0, "pivot_z_m": 1.3, "color": _color(rng)}


def build_pendulum(pb, p: dict) -> None:
    """A rigid rod and bob on a revolute joint; ``damping`` (1/s) = joint damping / inertia."""
    length, bob = p["length_m"], p["bob_radius_m"]
    rod = pb.createVisualShapeArray([pb.GEOM_CYLINDER, pb.GEOM_SPHERE], radii=[0.008, bob],
                                    lengths=[length, 0.0],
                                    rgbaColors=[[0.25, 0.25, 0.25, 1.0], _rgba(p["color"])],
                                    visualFramePositions=[[0, 0, -length / 2], [0, 0, -length]])
    mount = pb.createVisualShape(pb.GEOM_BOX, halfExtents=[0.25, 0.04, 0.02],
                                 rgbaColor=[0.35, 0.3, 0.25, 1.0])
    body = pb.createMultiBody(
        0.0, -1, mount, [0, 0, p["pivot_z_m"]], linkMasses=[p["bob_mass_kg"]],
        linkCollisionShapeIndices=[pb.createCollisionShape(
            pb.GEOM_SPHERE, radius=bob, collisionFramePosition=[0, 0, -length])],
        linkVisualShapeIndices=[rod], linkPositions=[[0, 0, 0]], linkOrientations=[[0, 0, 0, 1]],
        linkInertialFramePositions=[[0, 0, -length]], linkInertialFrameOrientations=[[0, 0, 0, 1]],
        linkParentIndices=[0], linkJointTypes=[pb.JOINT_REVOLUTE], linkJointAxis=[[0, 1, 0]])
    inertia = p["bob_mass_kg"] * (length ** 2 + 0.4 * bob ** 2)  # about the pivot
    pb.setJointMotorControl2(body, 0, pb.VELOCITY_CONTROL, force=0.0)  # no default motor
    pb.changeDynamics(body, 0, linearDamping=0.0, angularDamping=0.0,
                      jointDamping=p["damping"] * inertia)
    pb.changeDynamics(body, -1, linearDamping=0.0, angularDamping=0.0)
    pb.resetJointState(body, 0, p["start_side"] * p["theta0_rad"])


SHAPES = ("box", "sphere", "cylinder")


def sample_falling(rng, restitution: float = 0.3) -> dict:
    n = int(rng.integers(4, 8))
    bodies = [{"shape": SHAPES[int(rng.integers(3))], "size_m": _u(rng, 0.05, 0.1),
               "xyz_m": [_u(rng, -0.18, 0.18), _u(rng, -0.18, 0.18), round(0.4 + 0.2 * i + _u(rng, 0, 0.1), 4)],
               "euler_rad": [_u(rng, -np.pi, np.pi) for _ in range(3)], "color": _color(rng)}
              for i in range(n)]
    return {"restitution": restitution, "density_kg_m3": 400.0, "lateral_friction": 0.6,
            "bodies": bodies}


def _shape(pb, shape: str, size: float, rgba=None):
    kind = {"box": pb.GEOM_BOX, "sphere": pb.GEOM_SPHERE, "cylinder": pb.GEOM_CYLINDER}[shape]
    args: dict[str, object] = ({"halfExtents": [size] * 3} if shape == "box" else
            {"radius": size} if shape == "sphere" else {"radius": size, "length": 2 * size})
    if rgba is None:  # collision cylinders name their length "height"
        args = {"height" if k == "length" else k: v for k, v in args.items()}
        return pb.createCollisionShape(kind, **args)
    return pb.createVisualShape(kind, rgbaColor=rgba, **args)


def build_falling(pb, p: dict) -> None:
    volume = {"box": 8.0, "sphere": 4 / 3 * np.pi, "cylinder": 2 * np.pi}
    for b in p["bodies"]:
        mass = p["density_kg_m3"] * volume[b["shape"]] * b["size_m"] ** 3
        body = pb.createMultiBody(mass, _shape(pb, b["shape"], b["size_m"]),
                                  _shape(pb, b["shape"], b["size_m"], _rgba(b["color"])),
                                  b["xyz_m"], pb.getQuaternionFromEuler(b["euler_rad"]))
        pb.changeDynamics(body, -1, restitution=p["restitution"],
                          lateralFriction=p["lateral_friction"], linearDamping=0.0,
                          angularDamping=0.0)


def sample_dominos(rng, restitution: float = 0.2) -> dict:
    height = _u(rng, 0.22, 0.3)
    n = int(rng.integers(7, 11))
    return {"restitution": restitution, "count": n, "height_m": height, "thickness_m": 0.035,
            "width_m": _u(rng, 0.1, 0.14), "spacing_m": round(height * _u(rng, 0.5, 0.65), 4),
            "yaw_jitter_rad": [_u(rng, -0.06, 0.06) for _ in range(n)],
            "push_rad_s": _u(rng, 2.5, 4.0), "density_kg_m3": 600.0, "lateral_friction": 0.5,
            "colors": [_color(rng) for _ in range(n)]}


def build_dominos(pb, p: dict) -> None:
    half = [p["thickness_m"] / 2, p["width_m"] / 2, p["height_m"] / 2]
    mass = p["density_kg_m3"] * 8 * half[0] * half[1] * half[2]
    x0 = -(p["count"] - 1) * p["spacing_m"] / 2
    for i in range(p["count"]):
        body = pb.createMultiBody(
            mass, pb.createCollisionShape(pb.GEOM_BOX, halfExtents=half),
            pb.createVisualShape(pb.GEOM_BOX, halfExtents=half, rgbaColor=_rgba(p["colors"][i])),
            [x0 + i * p["spacing_m"], 0.0, half[2]],
            pb.getQuaternionFromEuler([0.0, 0.0, p["yaw_jitter_rad"][i]]))
        pb.changeDynamics(body, -1, restitution=p["restitution"],
                          lateralFriction=p["lateral_friction"], linearDamping=0.0,
                          angularDamping=0.0)
        if i == 0:  # tipped about its front bottom edge
            w = p["push_rad_s"]
            pb.resetBaseVelocity(body, [w * half[2], 0.0, w * half[0]], [0.0, w, 0.0])


@dataclass(frozen=True)
class BulletScene:
    name: str
    categories: tuple[str, ...]
    sample: Callable[..., dict]
    build: Callable
    camera: dict  # eye and target in metres, vertical field of view in degrees
    brief: str  # forward in time; formatted with the params


SCENES = {scene.name: scene for scene in (
    BulletScene("bouncing_ball", ("Fall",), sample_ball, build_ball,
                {"eye": [0.0, -4.2, 1.1], "target": [0.0, 0.0, 1.05], "fov_deg": 35.0},
                "A {color} ball dropped onto the floor bounces (restitution {restitution})."),
    BulletScene("pendulum", ("Reciprocal",), sample_pendulum, build_pendulum,
                {"eye": [0.0, -2.0, 1.0], "target": [0.0, 0.0, 0.95], "fov_deg": 35.0},
                "A pendulum with a {color} bob swings (damping {damping} per second)."),
    BulletScene("falling_objects", ("Fall",), sample_falling, build_falling,
                {"eye": [0.0, -2.0, 1.3], "target": [0.0, 0.0, 0.4], "fov_deg": 40.0},
                "Objects fall onto the floor and settle into a pile (restitution {restitution})."),
    BulletScene("dominos", ("Fall",), sample_dominos, build_dominos,
                {"eye": [0.3, -2.3, 0.9], "target": [0.0, 0.0, 0.1], "fov_deg": 40.0},
                "A row of {count} dominos topples one after another (restitution {restitution})."),
)}
# (group, scene, fixed parameter and its levels, repetitions per level, split)
GROUPS = (
    ("bouncing_ball", "restitution", (0.9,), SCENARIO_CLIPS, SCENARIO_SPLIT),
    ("pendulum", "damping", (0.0,), SCENARIO_CLIPS, SCENARIO_SPLIT),
    ("falling_objects", "restitution", (0.3,), SCENARIO_CLIPS, SCENARIO_SPLIT),
    ("dominos", "restitution", (0.2,), SCENARIO_CLIPS, SCENARIO_SPLIT),
    ("bouncing_ball", "restitution", SWEEP_RESTITUTIONS, BALL_REPEATS, SWEEP_SPLIT),
    ("pendulum", "damping", SWEEP_DAMPINGS, PENDULUM_REPEATS, SWEEP_SPLIT),
)


def _engine() -> dict:
    return {"engine": f"pybullet {metadata.version('pybullet')}", "renderer": "ER_TINY_RENDERER",
            "frames": FRAMES, "width": SIZE, "height": SIZE, "fps": FPS, "sim_hz": SIM_HZ,
            "gravity_m_s2": GRAVITY, "ground": {"restitution": 1.0, "lateral_friction": 1.0}}


def tra_jobs(seed: int) -> list[dict]:
    """Every clip of the set, round-robin over the six groups (a prefix samples them all)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    groups = []
    for g, (scene, parameter, levels, repeats, split) in enumerate(GROUPS):
        jobs = []
        for k in range(repeats):
            for level in levels:  # a sweep's repetition k: one draw, every level
                params = SCENES[scene].sample(np.random.default_rng([int(seed), g, k]),
                                              **{parameter: level})
                params.update(solver={"contactERP": 0.0} if scene == "bouncing_ball" else {},
                              scenario=scene, scene=scene, seed=int(seed), rng_key=[int(seed), g, k],
                              generator=GENERATOR_VERSION, camera=SCENES[scene].camera, **_engine())
                key = (f"{scene}-{k:02d}" if split == SCENARIO_SPLIT
                       else f"sweep-{scene}-{parameter[0]}{level:.1f}-r{k:02d}")
                jobs.append({"clip_key": key, "params": params, "split": split})
        groups.append(jobs)
    longest = max(len(jobs) for jobs in groups)
    return [jobs[i] for i in range(longest) for jobs in groups if i < len(jobs)]


def simulate(params: dict, render: bool = True) -> tuple[np.ndarray | None, dict]:
    """Frames ``(48, 256, 256, 3)`` (``None`` unless ``render``) and the bodies' states per frame.

    States: ``positions`` (frames, bodies, 3) of each body's base in metres and ``joints``
    (frames, joints) in radians.  A fresh DIRECT world per call, so calls never share state.
    """
    pb = _client()
    try:
        pb.setGravity(0.0, 0.0, -params["gravity_m_s2"])
        pb.setTimeStep(1.0 / params["sim_hz"])
        import pybullet_data  # the paper-era checkered plane that ships with pybullet

        # Bullet's default contact ERP turns penetration into rebound speed (a ball at
        # restitution 0.5 bounced to 1.2-1.6 r^2 of its drop); the ball scene switches it off.
        pb.setPhysicsEngineParameter(**params["solver"])
        ground = pb.loadURDF(os.path.join(pybullet_data.getDataPath(), "plane.urdf"),
                             useMaximalCoordinates=True)
        pb.changeDynamics(ground, -1, restitution=params["ground"]["restitution"],
                          lateralFriction=params["ground"]["lateral_friction"])
        SCENES[params["scene"]].build(pb, params)
        bodies = [pb.getBodyUniqueId(i) for i in range(1, pb.getNumBodies())]
        camera = params["camera"]
        view = pb.computeViewMatrix(camera["eye"], camera["target"], [0.0, 0.0, 1.0])
        projection = pb.computeProjectionMatrixFOV(camera["fov_deg"], 1.0, 0.1, 20.0)
        size = (params["width"], params["height"])
        frames = np.empty((params["frames"], size[1], size[0], 3), np.uint8) if render else None
        positions, joints = [], []
        for i in range(params["frames"]):
            if i:
                for _ in range(params["sim_hz"] // params["fps"]):
                    pb.stepSimulation()
            positions.append([pb.getBasePositionAndOrientation(b)[0] for b in bodies])
            joints.append([pb.getJointState(b, j)[0] for b in bodies for j in range(pb.getNumJoints(b))])
            if frames is not None:
                image = pb.getCameraImage(*size, view, projection, shadow=1,
                                          lightDirection=[1.0, -1.0, 2.0],
                                          renderer=pb.ER_TINY_RENDERER,
                                          flags=pb.ER_NO_SEGMENTATION_MASK)[2]
                frames[i] = np.reshape(np.asarray(image, np.uint8), (size[1], size[0], 4))[..., :3]
    finally:
        pb.disconnect()
    return frames, {"positions": np.asarray(positions, float), "joints": np.asarray(joints, float)}


def render(params: dict) -> np.ndarray:
    """The clip's frames: a pure function of its recorded parameters."""
    frames, _ = simulate(params)
    if frames is None:  # simulate renders unless told not to
        raise RuntimeError("simulate returned no frames")
    return frames


def describe(params: dict) -> tuple[str, str]:
    scene = SCENES[params["scene"]]
    brief = scene.brief.format(**{k: v for k, v in params.items() if not isinstance(v, (dict, list))})
    full = (f"{brief} PyBullet simulation, {params['frames']} frames at {params['fps']} fps, "
            f"fixed camera.")
    return brief, full


def render_source(job: dict, out_dir) -> tuple[str, float]:
    """Render one clip's lossless source into ``out_dir`` unless already there; (key, seconds).

    Written under a temporary name and renamed, so a killed build never leaves half a file.
    """
    import time
    from pathlib import Path

    from experiments.synthetic import write_lossless

    path = Path(out_dir) / f"{job['clip_key']}.mkv"
    if path.exists():
        return job["clip_key"], 0.0
    start = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.part.mkv")
    write_lossless(render(job["params"]), partial, fps=job["params"]["fps"])
    os.replace(partial, path)
    return job["clip_key"], time.perf_counter() - start


def clip_spec(job: dict, out_dir):
    """The ``ClipSpec`` of a rendered source."""
    from pathlib import Path

    from experiments.stimuli import ClipSpec

    brief, full = describe(job["params"])
    return ClipSpec(clip_key=job["clip_key"], path=Path(out_dir) / f"{job['clip_key']}.mkv",
                    categories=list(SCENES[job["params"]["scene"]].categories),
                    annotation_brief=brief, annotation_comprehensive=full, split=job["split"],
                    params=job["params"])
