"""Chronoscope's command line (``python manage.py`` in a checkout, ``chronoscope`` once
installed); each area keeps its commands in a module of its own."""
import click
from flask import Flask
from flask.cli import FlaskGroup, NoAppException

from webapp import create_app
from webapp.secret_key import UnsafeSecretKey


def create_cli_app() -> Flask:
    """The app for ``manage.py``: an unsafe secret key is a one-line error, not a traceback."""
    try:
        return create_app()
    except UnsafeSecretKey as error:
        raise NoAppException(str(error)) from None


@click.group(cls=FlaskGroup, create_app=create_cli_app)
def main():
    """Chronoscope: people and vision-language models judge the arrow of time."""


def _add_app_free_commands() -> None:
    # `analyze` reads an exported CSV and needs no app: on the group itself it runs before
    # (and without) the app, so it works with no secret key or database configured.  It stays
    # on app.cli too, for the app's own CLI runner.
    from webapp.cli import analysis

    main.add_command(analysis.analyze)


_add_app_free_commands()


def register_commands(app: Flask) -> None:
    from webapp.cli import (
        analysis,
        benchmarks,
        codes,
        database,
        exclusions,
        exports,
        models,
        probe,
        researchers,
        resume_links,
        stimuli,
        studies,
    )

    stimuli.stimuli.add_command(benchmarks.import_benchmark)
    studies.study.add_command(resume_links.resume_link)
    studies.study.add_command(codes.check_codes)
    for command in (database.init_db, stimuli.stimuli, researchers.create_researcher,
                    researchers.set_password, studies.study, exports.export, models.run_models,
                    probe.probe, analysis.analyze, analysis.report, exclusions.exclusions):
        app.cli.add_command(command)
