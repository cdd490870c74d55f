"""Stored stimulus sets and open studies, for the benchmarks' sites and the participant-side
tests (bench sits below tests: the tests import this, never the other way round).

Rows are created directly (no video encoding); with ``root`` given, small stand-in files
are written where the rows point, enough for the media routes.
"""
import secrets
from pathlib import Path

from experiments.categories import CATEGORIES
from experiments.designs import DESIGNS
from webapp.extensions import db
from webapp.models import SourceClip, Stimulus, Study

FRAME_SETS = ((2, "medium"), (4, "medium"), (8, "medium"), (4, "short"), (4, "long"))


def _write(root: Path | None, relative: str, data: bytes) -> None:
    if root is not None:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _stimulus(clip: SourceClip, root, kind, direction=None, n_frames=None, span=None) -> Stimulus:
    base = f"{clip.stimulus_set}/{clip.clip_key}"
    if kind == "clip":
        path = f"{base}/{direction}.mp4"
        _write(root, path, (direction or "x").encode() * 2000)  # 14-16 kB of known bytes
        return Stimulus(public_id=secrets.token_urlsafe(12), kind="clip", direction=direction,
                        path=path, sha256="0" * 64, meta={})
    path = f"{base}/frames_{n_frames}_{span}"
    files = [f"frame_{i:02d}.png" for i in range(n_frames)]
    for i, name in enumerate(files):
        _write(root, f"{path}/{name}", f"frame {i} of {n_frames}".encode())
    return Stimulus(public_id=secrets.token_urlsafe(12), kind="frame_set", direction=None,
                    frame_indices=list(range(n_frames)), path=path, sha256="0" * 64,
                    meta={"n_frames": n_frames, "span": span, "files": files})


def add_stimulus_set(name="tiny", per_category=2, root: Path | None = None) -> list[SourceClip]:
    clips = []
    for category in CATEGORIES:
        for k in range(per_category):
            clip = SourceClip(stimulus_set=name, clip_key=f"{category.lower()}-{k}",
                              categories=[category], annotation_brief=f"{category} brief",
                              annotation_comprehensive=f"{category} in detail", params={},
                              duration_s=3.0, fps=30.0, frame_count=90, width=64, height=48)
            clip.stimuli = [_stimulus(clip, root, "clip", d) for d in ("forward", "backward")] + \
                [_stimulus(clip, root, "frame_set", n_frames=n, span=s) for n, s in FRAME_SETS]
            db.session.add(clip)
            clips.append(clip)
    db.session.commit()
    return clips


# The sweeps of the built-in set (experiments.synthetic): scenario, parameter, levels, category.
SWEEPS = (("bouncing_ball", "restitution", tuple(round(0.1 * k, 1) for k in range(1, 11)), "Fall"),
          ("pendulum", "damping", tuple(round(0.5 * k, 1) for k in range(11)), "Reciprocal"))


def add_sweep_set(name="tiny", root: Path | None = None, clips_per_level=1) -> list[SourceClip]:
    """Sweep clips (split tra-sweep) of both sweeps in set ``name``; with ``root``, stand-in
    files whose size grows with the level, as real clips' sizes differ by level."""
    clips = []
    for scenario, parameter, levels, category in SWEEPS:
        for j, level in enumerate(levels):
            for k in range(clips_per_level):
                clip = SourceClip(stimulus_set=name, clip_key=f"tra-{scenario}-{level:.1f}-{k}",
                                  categories=[category], params={"scenario": scenario,
                                                                 parameter: level},
                                  split="tra-sweep", duration_s=3.0, fps=30.0, frame_count=90,
                                  width=64, height=48)
                clip.stimuli = [_stimulus(clip, root, "clip", d) for d in ("forward", "backward")]
                for stimulus in clip.stimuli:
                    _write(root, stimulus.path, b"x" * (10_000 + 500 * j))
                db.session.add(clip)
                clips.append(clip)
    db.session.commit()
    return clips


def add_length_set(name="tiny", root: Path | None = None, levels=(2, 6, 12, 18),
                   sources=("fall-0", "proceed-0")) -> list[SourceClip]:
    """Clip-length cuts (split length-sweep, experiments.length_sweep) of ``sources`` at
    ``levels`` frames in set ``name``; with ``root``, stand-in files whose size grows with
    the level, as real cuts' sizes do."""
    from experiments import length_sweep

    clips = []
    for source in sources:
        for n in levels:
            clip = SourceClip(stimulus_set=name, clip_key=length_sweep.clip_key(source, n),
                              categories=["Fall"], split=length_sweep.SPLIT,
                              params={"length_of": source, length_sweep.PARAMETER: n},
                              duration_s=n / 30.0, fps=30.0, frame_count=n, width=64, height=48)
            clip.stimuli = [_stimulus(clip, root, "clip", d) for d in ("forward", "backward")]
            for stimulus in clip.stimuli:
                _write(root, stimulus.path, b"x" * (10_000 + 100 * n))
            db.session.add(clip)
            clips.append(clip)
    db.session.commit()
    return clips


def add_catch_set(root: Path | None = None, keys=("f", "j")) -> list[SourceClip]:
    """A catch set with one video per key of ``keys``."""
    clips = []
    for key in keys:
        clip = SourceClip(stimulus_set="catch", clip_key=f"press-{key}", categories=[],
                          params={"catch": True, "instructed_key": key}, split="catch",
                          duration_s=2.0, fps=30.0, frame_count=60, width=64, height=48)
        clip.stimuli = [_stimulus(clip, root, "clip", "forward")]
        db.session.add(clip)
        clips.append(clip)
    db.session.commit()
    return clips


def open_study(design="arrow-of-time", slug="study", stimulus_set="tiny", status="open",
               **changes) -> Study:
    snapshot = DESIGNS[design].with_changes(**changes).to_dict()
    study = Study(slug=slug, title="Test study", design=design, design_snapshot=snapshot,
                  stimulus_set=stimulus_set, status=status,
                  exclusion_rules_version=snapshot["exclusions"]["version"])
    db.session.add(study)
    db.session.commit()
    return study


def add_aot_study(root: Path | None = None) -> Study:
    """The usual participant-side set-up: the stimulus and catch sets and an open
    arrow-of-time study ``study`` with two main blocks."""
    add_stimulus_set(root=root)
    add_catch_set(root=root)
    return open_study(main_blocks=2)
