"""Command registration: each area keeps its commands in a module of its own."""
from flask import Flask


def register_commands(app: Flask) -> None:
    from webapp.cli import database, stimuli

    app.cli.add_command(database.init_db)
    app.cli.add_command(stimuli.stimuli)
    from webapp.cli import benchmarks; stimuli.stimuli.add_command(benchmarks.import_benchmark)  # noqa: E702
    from webapp.cli import exports, researchers, studies

    app.cli.add_command(researchers.create_researcher)
    app.cli.add_command(studies.study)
    app.cli.add_command(exports.export)
    from webapp.cli import models; app.cli.add_command(models.run_models)  # noqa: E702
    from webapp.cli import analysis; app.cli.add_command(analysis.analyze); app.cli.add_command(analysis.report)  # noqa: E702
    from webapp.cli import exclusions; app.cli.add_command(exclusions.exclusions)  # noqa: E702
