"""`manage.py study resume-link`: let a participant continue in another browser, once."""
import getpass

import click
from flask.cli import with_appcontext

from webapp.cli.studies import _links_at, base_url_option


@click.command("resume-link")
@click.argument("slug")
@click.argument("participant")
@click.option("--by", "researcher", default=lambda: f"cli:{getpass.getuser()}",
              show_default="cli:<your login>", help="Who issued it, as recorded.")
@base_url_option
@with_appcontext
def resume_link(slug, participant, researcher, base_url):
    """Print a single-use link that lets PARTICIPANT (recruitment id) of study SLUG continue
    in another browser; the browser that uses it continues, the first one no longer can."""
    from webapp.participant import resume
    from webapp.researcher import studies

    try:
        code, link = resume.issue_link(studies.require_study(slug), participant, researcher)
    except (studies.StudyError, resume.ResumeLinkError) as error:
        raise click.ClickException(str(error)) from error
    with _links_at(base_url):
        click.echo(studies.participant_link(slug, resume=code))
    click.echo(f"Single use, valid until {link.expires_at:%Y-%m-%d %H:%M} UTC; shown only now.",
               err=True)
