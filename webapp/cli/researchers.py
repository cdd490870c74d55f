"""``manage.py create-researcher``: accounts are made on the server, never through the web."""
import sys

import click
from flask.cli import with_appcontext

from webapp import auth


@click.command("create-researcher")
@click.argument("username")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from the first line of standard input (for scripts).")
@with_appcontext
def create_researcher(username, password_stdin):
    """Create a researcher account USERNAME; prompts for the password unless --password-stdin."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    try:
        researcher = auth.create_researcher(username, password)
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    click.echo(f"Created researcher {researcher.username!r}.")
