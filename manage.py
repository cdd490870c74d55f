#!/usr/bin/env python
"""Chronoscope's command line: ``python manage.py --help``."""
import click
from flask.cli import FlaskGroup

from webapp.cli import create_cli_app


@click.group(cls=FlaskGroup, create_app=create_cli_app)
def cli():
    """Chronoscope: people and vision-language models judge the arrow of time."""


if __name__ == "__main__":
    cli()
