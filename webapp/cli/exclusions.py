import click
from flask.cli import AppGroup

from webapp.participant.progress import recompute_study


@click.group(cls=AppGroup)
def exclusions():
    """Exclusion rules: flags only, data is never deleted."""


@exclusions.command("recompute")
@click.argument("slug")
def recompute(slug):
    """Re-apply study SLUG's exclusion rules to its finished sessions."""
    from webapp.researcher.studies import StudyError, require_study

    try:
        study = require_study(slug)
    except StudyError as error:
        raise click.ClickException(str(error)) from error
    counts = recompute_study(study)
    click.echo(f"Rechecked {counts['sessions']} finished session(s) of {slug!r}; "
               f"{counts['excluded']} excluded.")
