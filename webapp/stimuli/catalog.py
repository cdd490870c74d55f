"""A stimulus set in the database: imported whole or not at all, and read back as the plain
records that participants' schedules and model runs are both built from."""
import contextlib
import re
import secrets
import shutil
import tempfile
from pathlib import Path
from types import MappingProxyType

from flask import current_app
from sqlalchemy import Connection, bindparam, func, select

from experiments.catalog_records import Catalog, CatchRecord, ClipRecord, StimulusRecord
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
            with contextlib.suppress(OSError):  # the set's folder, if this import made it
                (root / stimulus_set).rmdir()
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


_CLIP_ROWS = (select(SourceClip.id, SourceClip.clip_key, SourceClip.categories,
                     SourceClip.duration_s, SourceClip.fps, SourceClip.frame_count,
                     SourceClip.split, SourceClip.annotation_brief,
                     SourceClip.annotation_comprehensive, SourceClip.params)
              .where(SourceClip.stimulus_set == bindparam("name")).order_by(SourceClip.clip_key))
_STIMULUS_ROWS = (select(Stimulus.source_clip_id, Stimulus.id, Stimulus.public_id, Stimulus.kind,
                         Stimulus.direction, Stimulus.frame_indices, Stimulus.meta,
                         Stimulus.path, Stimulus.sha256, Stimulus.item_id)
                  .join(SourceClip).where(SourceClip.stimulus_set == bindparam("name"))
                  .order_by(Stimulus.id))
# Stimulus rows are only ever inserted (a set is imported whole; nothing updates or deletes
# them), so the counts and highest ids of a set's rows tell whether it changed.
_SET_VERSION = (select(func.count(SourceClip.id.distinct()), func.max(SourceClip.id),
                       func.count(Stimulus.id), func.max(Stimulus.id))
                .select_from(SourceClip).outerjoin(Stimulus)
                .where(SourceClip.stimulus_set == bindparam("name")))


def load_catalog(connection: Connection, stimulus_set: str, catch_set: str) -> Catalog:
    """The stimulus set and the catch videos as plain records for the schedule builder."""
    return Catalog(clip_records(connection, stimulus_set), catch_records(connection, catch_set))


def catch_records(connection: Connection, catch_set: str) -> tuple[CatchRecord, ...]:
    """The catch videos of the set's newest generation (the generator of the clip stored last).

    Only the videos of one import are padded to one size.  A newer generation is stored
    beside the older one, whose rows and files stay for the sessions that showed them; a
    schedule drawing from both could send two sizes, and a size would then tell the key.
    """
    clips = clip_records(connection, catch_set)
    if not clips:
        return ()
    newest = max(clips, key=lambda clip: clip.id).params.get("generator")
    catch = []
    for clip in clips:
        forward, key = clip.clip("forward"), clip.params.get("instructed_key")
        if forward is not None and key and clip.params.get("generator") == newest:
            catch.append(CatchRecord(forward, str(key)))
    return tuple(catch)


def stimulus_records(connection: Connection, stimulus_set: str) -> list[StimulusRecord]:
    """Every stimulus of a set (clips in both directions, frame sets), by id: what a model
    run is asked about."""
    stimuli = [s for clip in clip_records(connection, stimulus_set) for s in clip.stimuli]
    return sorted(stimuli, key=lambda s: s.id)


def clip_records(connection: Connection, name: str) -> tuple[ClipRecord, ...]:
    """A stimulus set's clips as records, kept per app while the set's rows are unchanged.

    Every new session needs them; the version check is one small aggregate query instead of
    reading every row.  Records are read-only (``MappingProxyType``) because sessions share
    them.
    """
    version = tuple(connection.execute(_SET_VERSION, {"name": name}).one())
    cache = current_app.extensions.setdefault("stimulus_catalog", {})
    cached = cache.get(name)
    if cached is not None and cached[0] == version:
        return cached[1]
    root = Path(current_app.config["STIMULUS_ROOT"])
    clips = connection.execute(_CLIP_ROWS, {"name": name}).all()
    by_id = {clip.id: clip for clip in clips}
    stimuli: dict[int, list[StimulusRecord]] = {}
    for row in connection.execute(_STIMULUS_ROWS, {"name": name}):
        stimuli.setdefault(row.source_clip_id, []).append(
            _stimulus_record(row, by_id[row.source_clip_id], root))
    records = tuple(ClipRecord(
        id=c.id, clip_key=c.clip_key, categories=tuple(c.categories or ()),
        stimuli=tuple(stimuli.get(c.id, ())), duration_s=c.duration_s, fps=c.fps, split=c.split,
        annotation_brief=c.annotation_brief, annotation_comprehensive=c.annotation_comprehensive,
        params=MappingProxyType(dict(c.params or {})))
        for c in clips)
    cache[name] = (version, records)
    return records


def _stimulus_record(row, clip, root: Path) -> StimulusRecord:
    annotations = {"brief": clip.annotation_brief,
                   "comprehensive": clip.annotation_comprehensive}
    return StimulusRecord(
        id=row.id, public_id=row.public_id, kind=row.kind, direction=row.direction,
        frame_indices=tuple(row.frame_indices or ()) or None,
        meta=MappingProxyType(dict(row.meta or {})), source_clip_id=clip.id,
        path=str(root / row.path), sha256=row.sha256, item_id=row.item_id,
        clip_fps=clip.fps, clip_frame_count=clip.frame_count,
        categories=tuple(clip.categories or ()),
        annotations=MappingProxyType({k: v for k, v in annotations.items() if v}))
