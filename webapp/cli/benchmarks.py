"""``manage.py stimuli import-benchmark``: a published benchmark's videos as a stimulus set."""
from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext

from experiments.benchmarks import BENCHMARKS


@click.command("import-benchmark")
@click.argument("benchmark", type=click.Choice(sorted(BENCHMARKS)))
@click.option("--videos", required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder of the benchmark's videos named by id (00001.mp4, 00001_rev.mp4).")
@click.option("--metadata", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Metadata CSV (default: the copy shipped with Chronoscope).")
@with_appcontext
def import_benchmark(benchmark, videos, metadata):
    """Import BENCHMARK's videos; missing ones are reported by id, the rest imported."""
    # Video tooling is imported only by the commands that prepare stimuli.
    from webapp.cli.stimuli import refuse_bad_workers
    from webapp.stimuli.benchmarks import import_benchmark as run_import

    refuse_bad_workers()
    try:
        result = run_import(benchmark, videos, Path(current_app.config["STIMULUS_ROOT"]),
                            metadata)
    except ValueError as error:
        raise click.ClickException(str(error)) from error
    plan = result.plan
    click.echo(f"Imported {len(result.imported)} clips ({result.n_items} items) into "
               f"{benchmark!r}; {len(plan.verified_reversals)} supplied reversed files "
               "verified frame-exact.")
    if result.already_stored:
        click.echo(f"Already stored, skipped: {len(result.already_stored)} clips.")
    if plan.missing:
        click.echo(f"Missing {len(plan.missing)} videos:")
        for missing in plan.missing:
            click.echo(f"  {missing.clip_id}: {missing.reason}")
    if plan.ignored_files:
        click.echo(f"Ignored {len(plan.ignored_files)} files not in the metadata: "
                   f"{', '.join(plan.ignored_files[:10])}")
