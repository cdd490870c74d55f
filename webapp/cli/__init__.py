"""Command registration: each area keeps its commands in a module of its own."""
from flask import Flask


def register_commands(app: Flask) -> None:
    from webapp.cli import (analysis, benchmarks, database, exclusions, exports, models,
                            researchers, stimuli, studies)

    stimuli.stimuli.add_command(benchmarks.import_benchmark)
    for command in (database.init_db, stimuli.stimuli, researchers.create_researcher,
                    studies.study, exports.export, models.run_models, analysis.analyze,
                    analysis.report, exclusions.exclusions):
        app.cli.add_command(command)
