"""``manage.py study create|open|pause|close|list``: the dashboard's study set-up, from a shell."""
import click
from flask.cli import with_appcontext

from webapp import participants, studies


@click.group()
def study():
    """Create studies and open, pause or close them."""


@study.command("create")
@click.argument("slug")
@click.option("--design", required=True, help="A design name from experiments.designs.")
@click.option("--stimulus-set", "stimulus_set", required=True, help="A stored stimulus set.")
@click.option("--title", default=None, help="Shown on the dashboard (default: the slug).")
@with_appcontext
def create(slug, design, stimulus_set, title):
    """Create study SLUG (as a draft) from a design and a stimulus set."""
    try:
        experiment = studies.create_study(slug, design, stimulus_set, title)
    except studies.StudyError as error:
        raise click.UsageError(str(error)) from error
    click.echo(f"Created study {experiment.slug!r} ({experiment.design} on "
               f"{experiment.stimulus_set}); it is a draft: `manage.py study open {slug}`.")


def _transition_command(action: str, help_text: str):
    @click.argument("slug")
    @with_appcontext
    def command(slug):
        try:
            experiment = studies.transition(slug, action)
        except studies.StudyError as error:
            raise click.UsageError(str(error)) from error
        click.echo(f"Study {slug!r} is now {experiment.status}.")
        if experiment.status == "open":
            click.echo(f"Participant link: {studies.participant_link(slug)}")
            click.echo(f"Prolific link:    {studies.participant_link(slug, prolific=True)}")
            codes = participants.completion_codes(slug)
            click.echo("Completion codes: " + ", ".join(f"{k}={v}" for k, v in codes.items()))

    command.__doc__ = help_text
    return study.command(action)(command)


_transition_command("open", "Open study SLUG to participants (from draft or paused).")
_transition_command("pause", "Pause study SLUG: no new participants; those inside may finish.")
_transition_command("close", "Close study SLUG for good.")


@study.command("list")
@with_appcontext
def list_():
    """List studies with their status, design, stimulus set and participant link."""
    rows = studies.list_studies()
    if not rows:
        click.echo("No studies yet: `manage.py study create SLUG --design ... --stimulus-set ...`.")
        return
    counts = studies.status_counts()
    click.echo(f"{'slug':<24} {'status':<8} {'design':<18} {'stimuli':<14} {'sessions':>8}  link")
    for experiment in rows:
        n = sum(counts.get(experiment.id, {}).values())
        link = studies.participant_link(experiment.slug)
        click.echo(f"{experiment.slug:<24} {experiment.status:<8} {experiment.design:<18} "
                   f"{experiment.stimulus_set:<14} {n:>8}  {link}")


DEMO_STUDIES = {"demo-arrow-of-time": "arrow-of-time", "demo-frame-ordering": "frame-ordering"}


@study.command("demo")
@click.option("--stimulus-set", "stimulus_set", default="synthetic", show_default=True)
@with_appcontext
def demo(stimulus_set):
    """Open one study per shipped design on STIMULUS_SET (kept when they already exist)."""
    for slug, design in DEMO_STUDIES.items():
        try:
            if studies.get_study(slug) is None:
                studies.create_study(slug, design, stimulus_set, title=f"Demo: {design}")
                studies.transition(slug, "open")
        except studies.StudyError as error:
            raise click.UsageError(str(error)) from error
        click.echo(f"{design:<16} {studies.participant_link(slug)}  ({studies.get_study(slug).status})")
