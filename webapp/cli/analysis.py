"""``manage.py analyze`` (from an exported CSV, no database) and ``manage.py report STUDY``."""
from pathlib import Path

import click
import pandas as pd
from flask.cli import with_appcontext

from analysis.columns import SESSION_RULES
from analysis.csv_cells import unescape_cells

_OUT = click.option("--out", "out_dir", required=True,
                    type=click.Path(file_okay=False, path_type=Path),
                    help="Folder for report.html, tables/*.csv and metrics.json (created).")
_MODELS = click.option("--models", "models", multiple=True,
                       help="Model subject id to include (repeat; default: every model).")
_BOOT = click.option("--n-boot", default=1000, show_default=True, type=click.IntRange(1),
                     help="Bootstrap resamples for the confidence intervals (people and "
                          "people-model gaps: participants x clips, two-way; models: clips).")
_SEED = click.option("--seed", default=0, show_default=True, type=int,
                     help="Seed of the bootstrap.")
_SESSIONS = click.option("--sessions", default="completed", show_default=True,
                         type=click.Choice(list(SESSION_RULES)),
                         help="Which of participants' sessions to analyse: 'completed' (status "
                              "completed) or 'all' (unfinished ones too). Sessions left out "
                              "are a step of the exclusion flow; model runs are taken as "
                              "stored.")
_TRA = click.option("--tra", "tra_file", type=click.Path(dir_okay=False, path_type=Path),
                    help="Optional CSV of per-clip TRA values (analysis.columns.TRA_COLUMNS).")


def _models(values) -> list[str]:
    """``--models a --models b`` or ``--models a,b``."""
    return [m.strip() for v in values for m in v.split(",") if m.strip()]


def _read_tra(path):
    if path is None:
        return None
    if not path.is_file():
        raise click.UsageError(f"TRA file not found: {path}")
    try:
        return unescape_cells(pd.read_csv(path))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"{path} is not a readable CSV: {exc}") from exc


def _run(frame_loader, out_dir, models, n_boot, seed, tra_file, title, sessions,
         sweep_levels=None, participants=None, methods=None):
    """``frame_loader()`` gives the trial table as read and how messages name its rows;
    ``sweep_levels()``, if given, the TRA sweep clips' levels (else the TRA file names them);
    ``participants()``, if given, the sessions, so the flow counts who entered without a trial;
    ``methods(trials, sessions)``, if given, the methods section."""
    from analysis.report.output import report_to_folder

    try:
        data, rows = frame_loader()
        roster = participants() if participants else None
        paths = report_to_folder(data, out_dir, models=_models(models), n_boot=n_boot,
                                 seed=seed, tra_data=_read_tra(tra_file), title=title,
                                 sessions=sessions, rows=rows,
                                 sweep_levels=sweep_levels() if sweep_levels else None,
                                 participants=roster,
                                 methods=methods(data, roster) if methods else None)
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    summary = paths["summary"]
    who = "participants" if summary["people"] else "model subjects (no people's trials)"
    click.echo(f"Analysed {summary['n_participants_included']} of "
               f"{summary['n_participants_entered']} {who}, "
               f"{summary['n_trials_included']} of {summary['n_trials_entered']} trials "
               f"({summary['sessions']['rule']} of {who.split(' (')[0]}).")
    for note in summary.get("notes", []):
        click.echo(f"  note: {note}")
    written = f"{paths['html']}, {Path(out_dir) / 'methods.md'}" if methods else paths["html"]
    click.echo(f"Wrote {written}, {paths['metrics']} and {len(paths['tables'])} tables "
               f"in {Path(out_dir) / 'tables'}.")


@click.command("analyze")
@click.option("--trials", "trials_file", required=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Exported trial CSV (canonical columns; e.g. from `manage.py export`).")
@_OUT
@_MODELS
@_BOOT
@_SEED
@_SESSIONS
@_TRA
def analyze(trials_file, out_dir, models, n_boot, seed, sessions, tra_file):
    """Full report from an exported trial CSV, without a database.

    Every cell is checked against the codebook first; a bad one stops the run (exit 2)
    with its CSV line (the header is line 1), column, value and the values allowed."""
    from analysis.loading import read_trial_cells

    _run(lambda: read_trial_cells(trials_file), out_dir, models, n_boot, seed, tra_file,
         title=f"Chronoscope report: {trials_file.name}", sessions=sessions)


@click.command("report")
@click.argument("study")
@_OUT
@_MODELS
@_BOOT
@_SEED
@_SESSIONS
@_TRA
@with_appcontext
def report(study, out_dir, models, n_boot, seed, sessions, tra_file):
    """Full report of STUDY (people and models) from the database, with a methods section
    (methods.md) whose every number is computed from the study's export."""
    from analysis.report.methods import methods_markdown
    from webapp.researcher import studies
    from webapp.researcher.exports import software_version
    from webapp.researcher.roster import roster_frame, study_trials

    def load():
        studies.require_study(study)  # StudyError is a ValueError: a clean usage error
        frame = study_trials(study)  # with the researchers' manual rules, as the export
        if frame.empty:
            raise ValueError(f"study {study!r} has no trials yet")
        return frame, None

    _run(load, out_dir, models, n_boot, seed, tra_file, title=f"Chronoscope report: {study}",
         sessions=sessions, sweep_levels=lambda: _sweep_levels(study),
         participants=lambda: roster_frame(study),
         methods=lambda trials, roster: methods_markdown(trials, roster, software_version()))


def _sweep_levels(study: str) -> pd.DataFrame | None:
    """The sweep clips of the study's stimulus set (TRA sweeps and clip-length cuts), as
    ``analysis.report.tra`` and ``analysis.report.length`` read them."""
    from experiments import length_sweep
    from webapp import model_runs
    from webapp.extensions import db
    from webapp.stimuli import catalog

    stimulus_set = model_runs.resolve_set(None, study)
    rows = [{"source_clip_id": clip.clip_key, **length_sweep.labels(clip.params)}
            for clip in catalog.clip_records(db.session.connection(), stimulus_set)
            if clip.split == length_sweep.SPLIT]
    try:
        clips = model_runs.sweep_clips(stimulus_set)
    except model_runs.ModelRunError:  # a set without TRA sweep clips: no sweep section
        clips = []
    rows += [{"source_clip_id": c.clip_key, "scenario": c.scenario, "parameter": c.parameter,
              "parameter_value": c.parameter_value} for c in clips]
    return pd.DataFrame(rows) if rows else None
