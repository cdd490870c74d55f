import click
from flask_migrate import upgrade
from sqlalchemy import inspect

from webapp.extensions import db
from webapp.models import SourceClip


@click.command("init-db")
def init_db():
    """Create or upgrade the database schema to the latest migration."""
    upgrade()
    click.echo("Database is at the latest schema.")


def has_schema() -> bool:
    """Whether `init-db` has made the tables (a fresh database has none)."""
    return inspect(db.engine).has_table(SourceClip.__tablename__)


def require_schema() -> None:
    """One line, not a SQLAlchemy traceback, for a command run before `init-db`."""
    if not has_schema():
        raise click.ClickException(
            f"the database at {db.engine.url.render_as_string(hide_password=True)} has no "
            "tables yet: run `python manage.py init-db` first")
