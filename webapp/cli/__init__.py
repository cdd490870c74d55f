"""Command registration: each area keeps its commands in a module of its own."""
from flask import Flask


def register_commands(app: Flask) -> None:
    from webapp.cli import database, stimuli

    app.cli.add_command(database.init_db)
    app.cli.add_command(stimuli.stimuli)
