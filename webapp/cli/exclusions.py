import getpass

import click
from flask.cli import AppGroup

from webapp.participant.progress import recompute_study


@click.group(cls=AppGroup)
def exclusions():
    """Exclusion rules: flags only, data is never deleted."""


def _study(slug):
    from webapp.researcher.studies import StudyError, require_study

    try:
        return require_study(slug)
    except StudyError as error:
        raise click.ClickException(str(error)) from error


@exclusions.command("recompute")
@click.argument("slug")
def recompute(slug):
    """Re-apply study SLUG's exclusion rules to its finished sessions."""
    from webapp.extensions import db
    from webapp.models.manual_exclusion import rules_version

    study = _study(slug)
    counts = recompute_study(study)
    # The recompute labels the study with the design's rules alone; its manual rules still
    # apply, so they stay in the version. (Rollback first: this session's read snapshot
    # predates the recompute's write.)
    db.session.rollback()
    study.exclusion_rules_version = rules_version(study)
    db.session.commit()
    click.echo(f"Rechecked {counts['sessions']} finished session(s) of {slug!r}; "
               f"{counts['excluded']} excluded (before manual rules).")


_REASON = click.option("--reason", required=True,
                       help="Why (required; kept with the rule and shown in exports).")
_BY = click.option("--by", "researcher", default=lambda: f"cli:{getpass.getuser()}",
                   show_default="cli:<your login>", help="Who decided, as recorded.")


def _add(slug, participant, action, reason, researcher):
    from webapp.models.manual_exclusion import ManualRuleError, add_rule

    try:
        rule = add_rule(_study(slug), participant, action, reason, researcher)
    except ManualRuleError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"Rule {rule.sequence} of {slug!r}: {action} {participant!r} "
               f"({rule.reason}). Trial data is unchanged.")


@exclusions.command("exclude")
@click.argument("slug")
@click.argument("participant")
@_REASON
@_BY
def exclude(slug, participant, reason, researcher):
    """Exclude PARTICIPANT (recruitment id) of study SLUG by hand."""
    _add(slug, participant, "exclude", reason, researcher)


@exclusions.command("reinstate")
@click.argument("slug")
@click.argument("participant")
@_REASON
@_BY
def reinstate(slug, participant, reason, researcher):
    """Reinstate PARTICIPANT of study SLUG, excluded by hand or by the rules."""
    _add(slug, participant, "reinstate", reason, researcher)


@exclusions.command("list")
@click.argument("slug")
def list_rules(slug):
    """Every manual rule of study SLUG, newest first."""
    from webapp.models.manual_exclusion import history

    for rule in history(_study(slug)):
        click.echo(f"{rule.sequence}\t{rule.created_at:%Y-%m-%d %H:%M} UTC\t{rule.action}\t"
                   f"{rule.subject.external_id}\t{rule.researcher}\t{rule.reason}")
