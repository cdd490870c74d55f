import tempfile
from pathlib import Path

import click
from flask import current_app
from sqlalchemy import select

from webapp.extensions import db
from webapp.models import SourceClip

SYNTHETIC_SET = "synthetic"


@click.group()
def stimuli():
    """Prepare, import and list stimulus sets."""


@stimuli.command("generate")
@click.option("--seed", type=int, default=None, help="Generator seed (default: SYNTHETIC_SEED).")
@click.option("--clips-per-category", type=click.IntRange(1, 100), default=8, show_default=True)
@click.option("--set", "stimulus_set", default=SYNTHETIC_SET, show_default=True)
def generate(seed, clips_per_category, stimulus_set):
    """Render the built-in synthetic stimulus set (skipped when it is already stored)."""
    from experiments.catch import CATCH_SET, catch_specs
    from experiments.synthetic import synthetic_specs
    from webapp.stimuli import catalog

    if CATCH_SET not in catalog.stimulus_sets():  # the attention-check videos every design uses
        with tempfile.TemporaryDirectory() as sources:
            catch = _import(catch_specs(Path(sources)), CATCH_SET)
        click.echo(f"Generated {len(catch)} catch-trial videos into {CATCH_SET!r}.")
    if stimulus_set in catalog.stimulus_sets():
        click.echo(f"Stimulus set {stimulus_set!r} is already stored; nothing to do.")
        return
    seed = current_app.config["SYNTHETIC_SEED"] if seed is None else seed
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

    try:
        specs = read_manifest(manifest)
    except ManifestError as error:
        raise click.ClickException(str(error)) from error
    clips = _import(specs, stimulus_set or manifest.stem)
    click.echo(f"Imported {len(clips)} clips into {stimulus_set or manifest.stem!r}.")


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


def _import(specs, stimulus_set):
    # Video tooling is imported only by the commands that prepare stimuli.
    from webapp.stimuli import catalog

    root = Path(current_app.config["STIMULUS_ROOT"])
    try:
        return catalog.import_clips(specs, stimulus_set, root)
    except ValueError as error:
        raise click.ClickException(str(error)) from error
