"""``manage.py create-researcher`` and ``set-password``: accounts are made on the server, never
through the web."""
import sys

import click
from flask.cli import with_appcontext

from webapp import auth


def _read_password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    return click.prompt("Password", hide_input=True, confirmation_prompt=True)


@click.command("create-researcher")
@click.argument("username")
@click.option("--admin", is_flag=True, help="May see and do everything with every study.")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from the first line of standard input (for scripts).")
@with_appcontext
def create_researcher(username, admin, password_stdin):
    """Create a researcher account USERNAME; prompts for the password unless --password-stdin."""
    try:
        researcher = auth.create_researcher(username, _read_password(password_stdin),
                                            is_admin=admin)
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    role = "administrator" if researcher.is_admin else "researcher"
    click.echo(f"Created {role} {researcher.username!r}.")


@click.command("set-password")
@click.argument("username")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from the first line of standard input (for scripts).")
@with_appcontext
def set_password(username, password_stdin):
    """Give researcher USERNAME a new password and sign them out of every browser."""
    researcher = auth.find_researcher(username)
    if researcher is None:
        raise click.UsageError(f"no researcher {username!r}")
    try:
        auth.set_password(researcher, _read_password(password_stdin))
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    click.echo(f"Changed the password of {username!r}; every browser signed in as them is "
               "signed out.")
