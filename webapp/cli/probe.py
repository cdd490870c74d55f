"""``manage.py probe tra``: Temporal Reversal Asymmetry of self-supervised video models over a
stimulus set's sweep clips, feeding ``manage.py report --tra``."""
from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext

from analysis.probes.tra import BATCH_SIZE, CONTEXT_LENGTHS, PROBES
from webapp import model_runs
from webapp.cli.models import device


@click.group("probe")
def probe():
    """Probe video models without prompting them."""


def _context_lengths(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected comma-separated whole numbers "
                                 "such as 4,6,8", param_hint="--context") from None
    if not values:
        raise click.BadParameter("give at least one context length", param_hint="--context")
    return values


@probe.command("tra")
@click.option("--kind", type=click.Choice(sorted(PROBES)), required=True,
              help="Model family: videomae (VideoMAEForPreTraining) or vjepa2 (VJEPA2Model).")
@click.option("--model", required=True, help="Local checkpoint folder or hub id.")
@click.option("--study", default=None, help="Study slug: the sweep clips of its stimulus set.")
@click.option("--set", "stimulus_set", default=None, help="Stimulus set (when no --study).")
@click.option("--context", "context", default=",".join(map(str, CONTEXT_LENGTHS)),
              show_default=True, help="Context lengths in frames (multiples of the tubelet).")
@click.option("--device", default="cpu", show_default=True, callback=lambda c, p, v: device(v),
              help="cpu, cuda or cuda:N.")
@click.option("--batch-size", type=click.IntRange(min=1), default=BATCH_SIZE, show_default=True,
              help="16-frame windows per forward pass; memory grows with it.")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Probe only the first N sweep clips.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@with_appcontext
def tra(kind, model, study, stimulus_set, context, device, batch_size, limit, no_progress):
    """Losses on each sweep clip forward and reversed, cached and resumable; writes tra.csv."""
    from analysis.probes.run import run_tra_probe

    contexts = _context_lengths(context)
    try:
        clips = model_runs.sweep_clips(model_runs.resolve_set(stimulus_set, study))[:limit]
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    instance = Path(current_app.instance_path)
    try:
        result = run_tra_probe(kind, model, clips, instance / "model_cache.sqlite3",
                               instance / "model_runs", device=device,
                               context_lengths=contexts, batch_size=batch_size,
                               progress=not no_progress)
    except Exception as error:  # noqa: BLE001 - one line for a researcher, not a traceback
        raise click.ClickException(f"the {kind} probe of {model!r} failed: "
                                   f"{type(error).__name__}: {error}") from error
    counts = result.manifest["counts"]
    target = f"python manage.py report {study}" if study else "python manage.py report STUDY"
    click.echo(f"{len(result.rows)} TRA values ({counts['cached']} cached, "
               f"{counts['computed']} computed) for {len(clips)} clips; wrote {result.csv_path}")
    click.echo(f"Add them to a report: {target} --out REPORT_DIR --tra {result.csv_path}")
