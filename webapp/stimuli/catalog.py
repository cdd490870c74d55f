"""Persisting prepared stimuli: a stimulus set is imported whole or not at all."""
import re
import secrets
import shutil
import tempfile
from pathlib import Path

from sqlalchemy import select

from experiments.designs import required_frame_sets
from experiments.stimuli import ClipSpec, PreparedClip, equalize_clip_files, prepare_clips
from webapp.extensions import db
from webapp.models import SourceClip, Stimulus

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,159}$")


def check_names(stimulus_set: str, specs: list[ClipSpec]) -> None:
    """Refuse names that could escape the stimulus root or collide with stored clips."""
    bad = [name for name in [stimulus_set, *(s.clip_key for s in specs)] if not _SAFE_NAME.match(name)]
    if bad:
        raise ValueError(f"names must be letters, digits, '.', '_' or '-': {bad[:5]}")
    existing = set(db.session.scalars(
        select(SourceClip.clip_key).where(SourceClip.stimulus_set == stimulus_set)))
    clashes = sorted(existing & {s.clip_key for s in specs})
    if clashes:
        raise ValueError(f"stimulus set {stimulus_set!r} already holds {clashes[:5]}")


def import_clips(specs: list[ClipSpec], stimulus_set: str, root: Path,
                 frame_set_sizes=None) -> list[SourceClip]:
    """Prepare every clip in a staging folder, then store files and rows together.

    Files are moved into ``root/<set>/<clip>/`` only after every clip prepared; rows are
    committed in one transaction, and the moved files are removed again if it fails.
    Frame sets default to those the shipped designs show.
    """
    frame_set_sizes = required_frame_sets() if frame_set_sizes is None else frame_set_sizes
    check_names(stimulus_set, specs)
    root.mkdir(parents=True, exist_ok=True)
    rel_dirs = [f"{stimulus_set}/{spec.clip_key}" for spec in specs]
    with tempfile.TemporaryDirectory(dir=root, prefix=".staging-") as staging:
        prepared = prepare_clips(specs, Path(staging), rel_dirs, frame_set_sizes=frame_set_sizes)
        if specs and all(spec.params.get("catch") for spec in specs):
            equalize_clip_files(prepared, Path(staging))  # which key a video names stays hidden
        moved = _move_into_place(Path(staging), root, rel_dirs)
        try:
            clips = [_store(p, stimulus_set) for p in prepared]
            db.session.commit()
        except BaseException:
            db.session.rollback()
            for path in moved:
                shutil.rmtree(path, ignore_errors=True)
            raise
    return clips


def _move_into_place(staging: Path, root: Path, rel_dirs: list[str]) -> list[Path]:
    moved = []
    for rel in rel_dirs:
        target = root / rel
        if target.exists():  # leftovers of a failed run, not in the database
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging / rel), target)
        moved.append(target)
    return moved


def _store(prepared: PreparedClip, stimulus_set: str) -> SourceClip:
    spec, info = prepared.spec, prepared.info
    clip = SourceClip(
        stimulus_set=stimulus_set, clip_key=spec.clip_key, categories=list(spec.categories),
        annotation_brief=spec.annotation_brief,
        annotation_comprehensive=spec.annotation_comprehensive, split=spec.split,
        params=dict(spec.params), duration_s=info.duration_s, fps=info.fps,
        frame_count=info.frame_count, width=info.width, height=info.height,
    )
    clip.stimuli = [
        Stimulus(public_id=secrets.token_urlsafe(12), kind=s.kind, direction=s.direction,
                 frame_indices=s.frame_indices, path=s.path, sha256=s.sha256,
                 item_id=s.meta.get("item_id"), meta=dict(s.meta))
        for s in prepared.stimuli
    ]
    db.session.add(clip)
    return clip


def stimulus_sets() -> list[str]:
    return list(db.session.scalars(select(SourceClip.stimulus_set).distinct()))
