import click
from flask_migrate import upgrade
from sqlalchemy import inspect
from sqlalchemy.exc import OperationalError

from webapp.extensions import db
from webapp.models import SourceClip


@click.command("init-db")
def init_db():
    """Create or upgrade the database schema to the latest migration."""
    upgrade()
    click.echo("Database is at the latest schema.")


def schema_problem() -> str | None:
    """Why the database cannot serve a command yet (unreachable, or no tables before
    `init-db`), in one line; None when it can."""
    where = db.engine.url.render_as_string(hide_password=True)
    try:
        present = inspect(db.engine).has_table(SourceClip.__tablename__)
    except OperationalError as error:
        return f"cannot reach the database at {where}: {str(error.orig).strip()}"
    return None if present else \
        f"the database at {where} has no tables yet: run `python manage.py init-db` first"


def require_schema() -> None:
    """One line, not a SQLAlchemy traceback, for a command the database cannot serve yet."""
    problem = schema_problem()
    if problem:
        raise click.ClickException(problem)
