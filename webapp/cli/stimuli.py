import tempfile
from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy import select

from webapp.cli.database import require_schema
from webapp.extensions import db
from webapp.models import SourceClip

SYNTHETIC_SET = "synthetic"
TRA_SET = "tra"  # == experiments.synthetic.tra_bullet.TRA_SET (imported only when built)
MAX_WORKERS = 64  # == experiments.stimuli.MAX_WORKERS (video tooling: imported when building)
TRA_CHUNK = 20  # clips prepared and committed together: what a killed build redoes at most


@click.group()
@with_appcontext
def stimuli():
    """Prepare, import and list stimulus sets."""
    require_schema()


@stimuli.command("generate")
@click.option("--seed", type=int, default=None, help="Generator seed (default: SYNTHETIC_SEED).")
@click.option("--clips-per-category", type=click.IntRange(1, 100), default=8, show_default=True)
@click.option("--set", "stimulus_set", default=SYNTHETIC_SET, show_default=True,
              help=f"Set name; {TRA_SET!r} builds the TRA paper's 380 PyBullet clips.")
@click.option("--workers", type=click.IntRange(1, MAX_WORKERS), default=None,
              help="PyBullet rendering processes of the TRA set (default: "
                   "$CHRONOSCOPE_STIMULUS_WORKERS, else one a CPU).")
@click.option("--limit", type=click.IntRange(1), default=None,
              help="Build only the first N clips of the TRA set (one of each group first).")
def generate(seed, clips_per_category, stimulus_set, workers, limit):
    """Render the built-in synthetic stimulus set (skipped when it is already stored).

    With ``--set tra``: the TRA paper's set, resumable (stored clips are kept, rendered
    sources are reused).
    """
    from experiments.synthetic import synthetic_specs
    from webapp.stimuli import catalog

    refuse_bad_workers()
    _generate_catch()
    seed = current_app.config["SYNTHETIC_SEED"] if seed is None else seed
    if stimulus_set == TRA_SET:
        _generate_tra(seed, workers, limit)
        return
    if stimulus_set in catalog.stimulus_sets():
        click.echo(f"Stimulus set {stimulus_set!r} is already stored; nothing to do.")
        return
    with tempfile.TemporaryDirectory() as sources:
        specs = synthetic_specs(Path(sources), seed=seed, clips_per_category=clips_per_category)
        clips = _import(specs, stimulus_set)
    click.echo(f"Generated {len(clips)} clips into {stimulus_set!r} (seed {seed}).")


@stimuli.command("import")
@click.argument("manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--set", "stimulus_set", default=None, help="Set name (default: manifest stem).")
def import_manifest(manifest, stimulus_set):
    """Import a researcher's clips from a CSV or JSON MANIFEST."""
    from experiments.manifest import ManifestError, read_manifest

    refuse_bad_workers()

    try:
        specs = read_manifest(manifest)
    except ManifestError as error:
        raise click.ClickException(str(error)) from error
    clips = _import(specs, stimulus_set or manifest.stem)
    click.echo(f"Imported {len(clips)} clips into {stimulus_set or manifest.stem!r}.")


@stimuli.command("lengths")
@click.option("--from", "source_set", required=True, help="The stored set whose clips are cut.")
@click.option("--set", "stimulus_set", required=True, help="Name of the new clip-length set.")
@click.option("--levels", default="2,3,4,6,8,12,16,24,32,48,64,90", show_default=True,
              help="Numbers of frames shown around each clip's middle (at least 3, in any "
                   "order: they are sorted).")
@click.option("--practice", "n_practice", type=click.IntRange(0, 20), default=4,
              show_default=True, help="Full clips for practice when the set has no "
                                      "'practice' split.")
def lengths(source_set, stimulus_set, levels, n_practice):
    """Cut every main clip of a stored set to the n frames around its middle at each level, as a new set
    for the aot-length-adaptive design (both directions show the same n frames)."""
    from sqlalchemy.exc import OperationalError

    from experiments.length_sweep import parse_levels
    from webapp.stimuli.length_sets import import_length_set

    refuse_bad_workers()
    root = Path(current_app.config["STIMULUS_ROOT"])
    try:
        chosen = parse_levels(levels)
        clips = import_length_set(source_set, stimulus_set, chosen, root, n_practice)
    except ValueError as error:
        raise click.ClickException(str(error)) from error
    except OperationalError as error:  # e.g. another writer held the database past its timeout
        raise click.ClickException(f"the database refused the new set "
                                   f"({str(error.orig).strip()}): nothing was stored; run the "
                                   "command again") from error
    click.echo(f"Stored {len(clips)} clips into {stimulus_set!r} (cuts of {source_set!r} at "
               f"{','.join(map(str, chosen))} frames, and practice clips).")


@stimuli.command("list")
@click.option("--set", "stimulus_set", default=None)
def list_clips(stimulus_set):
    """List stored source clips with their categories and timing."""
    query = select(SourceClip).order_by(SourceClip.stimulus_set, SourceClip.clip_key)
    if stimulus_set:
        query = query.where(SourceClip.stimulus_set == stimulus_set)
    clips = db.session.scalars(query).all()
    if not clips:
        click.echo("No stimuli stored.")
        return
    click.echo(f"{'set':<16} {'clip':<28} {'categories':<28} {'frames':>6} {'fps':>6} {'stimuli':>7}")
    for clip in clips:
        click.echo(f"{clip.stimulus_set:<16} {clip.clip_key:<28} {'+'.join(clip.categories):<28} "
                   f"{clip.frame_count:>6} {clip.fps:>6.2f} {len(clip.stimuli):>7}")


@stimuli.command("sweep-presentations")
def sweep_presentations():
    """Remove the catch videos rendered for sessions that ended or were abandoned (run it from
    cron; a session's first video request sweeps too)."""
    from webapp.stimuli import presentations

    with db.engine.connect() as connection:
        removed = presentations.sweep(connection)
    click.echo(f"Removed {removed} item(s) from {presentations.FOLDER}: the catch videos of "
               "sessions that ended or were abandoned.")


def _generate_catch():
    """Store the attention-check videos every design uses: one per key a study may choose.

    A set stored before it held every key gets a whole new generation beside it rather than
    the missing keys alone: files are padded to one size per import, and most keys' videos
    are larger than the stored F and J, which cannot be padded further without changing
    files (and hashes) that sessions and exports refer to.  Schedules draw from the newest
    generation only (``catalog.catch_records``).
    """
    from experiments.catch import CATCH_SET, KEYS, catch_specs
    from webapp.stimuli import catalog

    held = {r.instructed_key for r in catalog.catch_records(db.session.connection(), CATCH_SET)}
    if held >= set(KEYS):
        return
    with tempfile.TemporaryDirectory() as sources:
        # No frame sets: a catch trial always plays the video.
        catch = _import(catch_specs(Path(sources)), CATCH_SET, frame_set_sizes=())
    if held:
        click.echo(f"Added {len(catch)} catch-trial videos (every letter and digit) to "
                   f"{CATCH_SET!r}; its {len(held)} earlier ones ({', '.join(sorted(held))}) "
                   "are kept for the sessions that showed them.")
    else:
        click.echo(f"Generated {len(catch)} catch-trial videos into {CATCH_SET!r}.")


def refuse_bad_workers() -> None:
    """Stops a command that builds clips on a bad $CHRONOSCOPE_STIMULUS_WORKERS before it
    renders, cuts or checks anything."""
    from experiments.stimuli import build_workers

    try:
        build_workers(1)
    except ValueError as error:
        raise click.ClickException(str(error)) from error


def _import(specs, stimulus_set, frame_set_sizes=None):
    # Video tooling is imported only by the commands that prepare stimuli.
    from webapp.stimuli import catalog

    root = Path(current_app.config["STIMULUS_ROOT"])
    try:
        return catalog.import_clips(specs, stimulus_set, root, frame_set_sizes)
    except ValueError as error:
        raise click.ClickException(str(error)) from error


def _generate_tra(seed, workers, limit):
    """Render missing sources in a pool, then prepare and store them chunk by chunk."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from tqdm import tqdm

    from experiments.stimuli import build_workers
    from experiments.synthetic import tra_bullet

    jobs = tra_bullet.tra_jobs(seed)[:limit]
    stored = set(db.session.scalars(
        select(SourceClip.clip_key).where(SourceClip.stimulus_set == TRA_SET)))
    todo = [job for job in jobs if job["clip_key"] not in stored]
    if not todo:
        click.echo(f"Stimulus set {TRA_SET!r}: all {len(jobs)} clips stored; nothing to do.")
        return
    sources = Path(current_app.config["STIMULUS_ROOT"]) / ".sources" / f"{TRA_SET}-{seed}"
    sources.mkdir(parents=True, exist_ok=True)
    missing = [job for job in todo if not (sources / f"{job['clip_key']}.mkv").exists()]
    workers = build_workers(len(missing), workers)
    with tqdm(total=len(todo), initial=len(todo) - len(missing), desc="render (PyBullet)",
              unit="clip") as bar:
        if workers <= 1:
            for job in missing:
                tra_bullet.render_source(job, sources)
                bar.update()
        else:  # spawn, not fork: the CLI holds a database engine and maybe threads
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(workers, mp_context=context) as pool:
                for future in as_completed([pool.submit(tra_bullet.render_source, job, sources)
                                            for job in missing]):
                    future.result()
                    bar.update()
    with tqdm(total=len(todo), desc="prepare + store", unit="clip") as bar:
        for start in range(0, len(todo), TRA_CHUNK):
            chunk = todo[start:start + TRA_CHUNK]
            _import([tra_bullet.clip_spec(job, sources) for job in chunk], TRA_SET)
            for job in chunk:  # stored: the source is no longer needed
                (sources / f"{job['clip_key']}.mkv").unlink(missing_ok=True)
            bar.update(len(chunk))
    if not any(sources.iterdir()):
        sources.rmdir()
    click.echo(f"Stored {len(todo)} clips into {TRA_SET!r} ({len(stored)} already there; "
               f"seed {seed}); {len(stored) + len(todo)} of {len(jobs)} planned.")
