"""``manage.py export STUDY --out DIR``: the dashboard's export, written to a folder."""
from pathlib import Path

import click
from flask.cli import with_appcontext

from webapp.researcher import exports


@click.command("export")
@click.argument("study")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write trials.csv, trials.json, participants.csv, "
                   "prolific_decisions.csv (Prolific approve/reject list), "
                   "next_session_allowlist.csv and next_session_start_times.csv (who may take "
                   "the next session of a multi-session design, and from when), codebook and "
                   "metadata.json, and Psych-DS's dataset_description.json and data/ into "
                   "(created if missing).")
@click.option("--overwrite", is_flag=True, help="Replace export files already in --out.")
@click.option("--excel", is_flag=True, help="Start trials.csv, participants.csv and "
              "codebook.csv with a UTF-8 byte order mark, so that Excel reads their text "
              "(Japanese, say) correctly.")
@click.option("--xlsx", is_flag=True, help="Write tables.xlsx too: trials, participants, "
              "the Prolific and next-session tables and the codebook as one Excel workbook, "
              "a sheet per table (numbers as numbers, times as ISO 8601 text).")
@click.option("--bids", "bids_layout", is_flag=True, help="Write a BIDS behavioural dataset "
              "instead: dataset_description.json, participants.tsv/.json and "
              "sub-<label>/[ses-<n>/]beh/*_beh.tsv with a .json sidecar per session "
              "(sourcedata/participant_labels.tsv maps labels back to recruitment ids).")
@with_appcontext
def export(study, out_dir, overwrite, excel, xlsx, bids_layout):
    """Export STUDY's trials, participants, codebook and metadata (one consistent snapshot)."""
    if bids_layout and (excel or xlsx):
        raise click.UsageError("--bids writes a BIDS dataset (TSV files); --excel and --xlsx "
                               "are for the usual export: give one or the other")
    try:
        paths = exports.write_export(study, out_dir, overwrite=overwrite, excel=excel,
                                     xlsx=xlsx, bids_layout=bids_layout)
    except ValueError as error:  # includes studies.StudyError (no such study)
        raise click.UsageError(str(error)) from error
    click.echo(f"Wrote {len(paths)} files to {out_dir}:")
    for path in paths:
        click.echo(f"  {path.relative_to(out_dir)} ({path.stat().st_size} bytes)")
