import click
from flask_migrate import upgrade


@click.command("init-db")
def init_db():
    """Create or upgrade the database schema to the latest migration."""
    upgrade()
    click.echo("Database is at the latest schema.")
