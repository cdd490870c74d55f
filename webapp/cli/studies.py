"""``manage.py study ...``: the dashboard's study set-up, lifecycle and sharing, from a shell."""
import secrets
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import click
from flask import current_app
from flask.cli import with_appcontext

from experiments import study_file
from experiments.designs import Design
from experiments.response_keys import reserved_key_warnings
from webapp.cli.database import schema_problem
from webapp.models import access
from webapp.participant import texts
from webapp.researcher import codes, lifecycle, studies
from webapp.stimuli import catalog


@click.group()
def study():
    """Create studies and open, pause or close them."""


@study.command("create")
@click.argument("slug")
@click.option("--from", "from_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="A study file (TOML): every setting and text comes from it.")
@click.option("--design", default=None, help="A design name from experiments.designs.")
@click.option("--stimulus-set", "stimulus_set", default=None, help="A stored stimulus set.")
@click.option("--title", default=None, help="Shown on the dashboard (default: the slug).")
@click.option("--owner", default=None, metavar="USERNAME",
              help="The researcher who owns it (default: none; only admins see it).")
@click.option("--max-participants", type=click.IntRange(min=1), default=None,
              help="Places: new participants are refused once this many took part.")
@with_appcontext
def create(slug, from_file, design, stimulus_set, title, owner, max_participants):
    """Create study SLUG (as a draft) from a study file, or from a design and a stimulus set."""
    if from_file is not None and (design or stimulus_set or title or max_participants):
        raise click.UsageError("--from takes every setting from the file: leave out --design, "
                               "--stimulus-set, --title and --max-participants")
    if from_file is None and not (design and stimulus_set):
        raise click.UsageError("give --from FILE, or both --design and --stimulus-set")
    existing = studies.get_study(slug) if from_file is not None else None
    try:
        if existing is not None:  # a change: a draft in place, an opened study a new version
            study = lifecycle.update_study(slug, _load(from_file))
            click.echo(f"Study {slug!r} is now at version {study.config_version} "
                       f"({lifecycle.state_name(study)}).")
            _echo_key_warnings(study)
            return
        if from_file is not None:
            study = studies.create_study_from_config(slug, _load(from_file), owner=owner)
        else:
            study = studies.create_study(slug, design, stimulus_set, title, owner=owner,
                                         max_participants=max_participants)
    except studies.StudyError as error:
        raise _data_error(error, from_file) from error
    click.echo(f"Created study {study.slug!r} ({study.design} on "
               f"{study.stimulus_set}); it is a draft: `manage.py study open {slug}`.")
    if owner is None:
        click.echo(f"It has no owner, so only admins see it: `manage.py study share {slug} "
                   "USERNAME --role owner`.")
    if from_file is None:  # a file's warnings were shown with its lines when it was read
        for field, message in study_file.consent_warnings(studies.study_config(study)):
            click.echo(f"Warning: {field}: {message} (give it in a study file: "
                       f"`study export-config {slug}`, edit, `study create {slug} --from FILE`)",
                       err=True)
    _echo_key_warnings(study)


def _data_error(error: studies.StudyError, path: Path | None) -> click.ClickException:
    """The error alone (a usage header would say the command was typed wrong), at the file's
    line and field where it comes from one."""
    if path is not None and error.setting:
        return click.ClickException(str(study_file.problem_at(
            study_file.read_source(path), path.name, error.setting, str(error))))
    return click.ClickException(str(error))


def _load(path: Path) -> study_file.StudyConfig:
    try:
        config, problems, warnings = study_file.check(study_file.read_source(path), path.name,
                                                      path.parent)
    except study_file.StudyFileError as error:  # too large, or not UTF-8
        config, problems, warnings = None, error.problems, []
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)
    if problems:
        for problem in problems:
            click.echo(str(problem), err=True)
        raise click.ClickException(f"{path.name}: {len(problems)} error(s); nothing was created")
    return config


@study.command("validate")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@with_appcontext
def validate(file):
    """Check study FILE: every error with its line and field, or a summary of the study;
    against its stimulus set too when this database stores it (as `create` will)."""
    config = _load(file)
    design = config.design
    unchecked = schema_problem()
    if unchecked is None and config.stimulus_set not in catalog.stimulus_sets():
        unchecked = f"stimulus set {config.stimulus_set!r} is not stored in this database"
    if unchecked is None:
        try:
            studies.check_schedulable(design, config.stimulus_set)
        except studies.StudyError as error:
            raise _data_error(error, file) from error
    else:
        click.echo(f"Note: {unchecked}; the file was checked, not whether the set can run it.",
                   err=True)
    clips = design.max_clips or "every clip of the set"
    click.echo(f"{file.name}: valid. {config.title or '(untitled)'}: {design.name} on "
               f"{config.stimulus_set}; {design.sessions} session(s), {design.main_blocks} "
               f"block(s), clips per session: {clips}; practice {design.practice.n_trials} "
               f"trial(s); keys {'/'.join(design.response_keys)}; languages "
               f"{', '.join(config.languages)}; places {config.places or 'unlimited'}.")
    for warning in reserved_key_warnings(design.response_keys, config.browsers):
        click.echo(f"Warning: {warning}")


@study.command("export-config")
@click.argument("slug")
@with_appcontext
def export_config(slug):
    """Print study SLUG's configuration as a study file (create --from it for the same study)."""
    try:
        click.echo(studies.export_config(slug), nl=False)
    except studies.StudyError as error:
        raise click.ClickException(str(error)) from error


def _echo_key_warnings(study) -> None:
    """Response keys that a browser the study accepts keeps from the page (lost answers,
    timed-out trials)."""
    design = Design.from_snapshot(study)
    for warning in reserved_key_warnings(design.response_keys,
                                         studies.study_config(study).browsers):
        click.echo(f"Warning: {warning}")


def _transition_command(action: str, help_text: str):
    @click.argument("slug")
    @with_appcontext
    def command(slug, base_url=None):
        try:
            study = lifecycle.transition(slug, action)
        except studies.StudyError as error:
            raise click.ClickException(str(error)) from error
        click.echo(f"Study {slug!r} is now {lifecycle.state_name(study)}.")
        if study.status == "open":
            with _links_at(base_url):
                _echo_links(slug)
            _echo_key_warnings(study)

    command.__doc__ = help_text
    if action == "open":  # the one transition that prints links
        command = base_url_option(command)
    return study.command(action)(command)


def _check_base_url(_context, _param, value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
        raise click.BadParameter(f"{value!r} is not an http(s) address such as "
                                 "https://study.example.org or http://127.0.0.1:5721")
    return value.rstrip("/")


base_url_option = click.option(
    "--base-url", metavar="URL", default=None, callback=_check_base_url,
    help="Where participants reach this server, for the printed links (default: "
         "CHRONOSCOPE_PUBLIC_URL, else http://127.0.0.1:5000).")


@contextmanager
def _links_at(base_url: str | None):
    """Print links with ``base_url`` for this command, and say which base they assume."""
    config = current_app.config
    saved = config["PUBLIC_URL"]
    if base_url is not None:
        config["PUBLIC_URL"] = base_url
    try:
        yield
        click.echo(f"Links assume this server is reached at {config['PUBLIC_URL']}/ (for a "
                   "server elsewhere, e.g. `manage.py run --port 5721`, give --base-url URL "
                   "or set CHRONOSCOPE_PUBLIC_URL).", err=True)
    finally:
        config["PUBLIC_URL"] = saved


# The platforms whose own link is printed beside the participant link (a generic pool's
# would only repeat it).
PLATFORM_LINKS = {"prolific": "Prolific link:", "sona": "SONA study URL:"}


def _echo_links(slug: str) -> None:
    study = studies.require_study(slug)
    platform = texts.study_settings(study.design_snapshot)["platform"]
    click.echo(f"Participant link: {studies.participant_link(slug)}?participant=ID")
    if platform in PLATFORM_LINKS:
        click.echo(f"{PLATFORM_LINKS[platform]:<18}{studies.platform_link(slug, platform)}")
    shared = codes.shared_codes(study)
    for number, by_outcome in shared.items():
        session = f" (session {number})" if len(shared) > 1 else ""
        click.echo(f"Completion codes{session}: "
                   + ", ".join(f"{k}={v}" for k, v in by_outcome.items()))
    if not shared:
        click.echo("Completion codes: each participant gets their own; check the ones "
                   f"submitted with `manage.py study codes {slug} FILE`.")


@study.command("links")
@click.argument("slug")
@base_url_option
@with_appcontext
def links(slug, base_url):
    """Print the participant and Prolific links of open study SLUG, with its completion codes."""
    try:
        study = studies.require_study(slug)
    except studies.StudyError as error:
        raise click.ClickException(str(error)) from error
    if study.status != "open":
        click.echo(f"Study {slug!r} is {lifecycle.state_name(study)}: participants can start only "
                   f"while it is open (`manage.py study open {slug}`).", err=True)
    with _links_at(base_url):
        _echo_links(slug)


_transition_command("open", "Open study SLUG to participants (from draft or paused).")
_transition_command("pause", "Pause study SLUG: no new participants; those inside may finish.")
_transition_command("close", "Close study SLUG for good; participants already in may finish.")
_transition_command("stop", "Close study SLUG now: sessions in progress end as 'stopped' "
                            "(what they stored is kept).")


@study.command("share")
@click.argument("slug")
@click.argument("username")
@click.option("--role", type=click.Choice(access.ROLES), default="viewer", show_default=True,
              help="viewer: page and export; editor: also open and pause; owner: also close "
                   "and manage members.")
@with_appcontext
def share(slug, username, role):
    """Give researcher USERNAME access to study SLUG (or change their role)."""
    try:
        access.share(studies.require_study(slug), username, role)
    except (studies.StudyError, access.MembershipError) as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"{username} is now {role} of {slug!r}.")


@study.command("unshare")
@click.argument("slug")
@click.argument("username")
@with_appcontext
def unshare(slug, username):
    """Take away researcher USERNAME's access to study SLUG."""
    try:
        access.unshare(studies.require_study(slug), username)
    except (studies.StudyError, access.MembershipError) as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"{username} no longer has access to {slug!r}.")


@study.command("list")
@base_url_option
@with_appcontext
def list_(base_url):
    """List studies with their status, design, stimulus set and participant link (which asks
    for the participant id when opened without one)."""
    rows = studies.list_studies()
    if not rows:
        click.echo("No studies yet: `manage.py study create SLUG --design ... --stimulus-set ...`.")
        return
    counts = studies.status_counts()
    click.echo(f"{'slug':<24} {'status':<18} {'design':<18} {'stimuli':<14} {'sessions':>8}  link")
    with _links_at(base_url):
        for study in rows:
            n = sum(counts.get(study.id, {}).values())
            link = studies.participant_link(study.slug)
            click.echo(f"{study.slug:<24} {lifecycle.state_name(study):<18} "
                       f"{study.design:<18} "
                       f"{study.stimulus_set:<14} {n:>8}  {link}")


DEMO_STUDIES = {"demo-arrow-of-time": "arrow-of-time", "demo-frame-ordering": "frame-ordering"}


@study.command("demo")
@click.option("--stimulus-set", "stimulus_set", default="synthetic", show_default=True)
@click.option("--local-admin", is_flag=True,
              help="With no researcher account yet, create the admin 'admin' and print its "
                   "password once (make run).")
@base_url_option
@with_appcontext
def demo(stimulus_set, local_admin, base_url):
    """Open one study per shipped design on STIMULUS_SET (kept when they already exist)."""
    with _links_at(base_url):
        _demo(stimulus_set, local_admin)


def _demo(stimulus_set: str, local_admin: bool) -> None:
    for slug, design in DEMO_STUDIES.items():
        try:
            if studies.get_study(slug) is None:
                studies.create_study(slug, design, stimulus_set, title=f"Demo: {design}")
                lifecycle.transition(slug, "open")
        except studies.StudyError as error:
            raise click.ClickException(str(error)) from error
        state = lifecycle.state_name(studies.get_study(slug))
        click.echo(f"{design} ({state}):")
        click.echo(f"  try it yourself:   {studies.participant_link(slug, participant='demo-1')}")
        click.echo("  simulated:         "
                   f"{studies.participant_link(slug, participant='sim-1', simulate='1')}")
        click.echo(f"  Prolific:          {studies.participant_link(slug, prolific=True)}")
    click.echo("Each participant id is one participant: change demo-1 for a fresh session. "
               "The simulated link runs a robot participant (development only); its session "
               "is always excluded.")
    _echo_login(local_admin)


def _echo_login(create: bool) -> None:
    """How to sign in at /researcher: a local admin made now (its password printed this once)
    when there is no account and ``create``, else the command that makes one."""
    from webapp import auth
    from webapp.extensions import db
    from webapp.models import Researcher

    base = studies.participant_link("x").rsplit("/p/", 1)[0]
    if db.session.query(Researcher.id).first() is None and create:
        password = secrets.token_urlsafe(12)
        auth.create_researcher("admin", password, is_admin=True)
        click.echo(f"Researcher login: {base}/researcher/  user admin, password {password}  "
                   "(shown once; change it there, or `python manage.py set-password admin`)")
    else:
        click.echo(f"Researcher login: {base}/researcher/  (an account: `python manage.py "
                   "create-researcher NAME --admin`; admins see the demo studies)")
