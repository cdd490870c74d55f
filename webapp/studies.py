"""Study set-up: create a study from a design and a stimulus set, and move it through its lifecycle.

A study (an ``Experiment`` row) is ``draft`` when created, ``open`` while it takes
participants, ``paused`` while it does not (participants already in may finish), and
``closed`` for good. Only the transitions in TRANSITIONS are allowed.
"""
import re
from urllib.parse import urlencode, urlsplit

import numpy as np
from flask import current_app, has_request_context, url_for
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from experiments import schedule
from experiments.designs import DESIGNS
from webapp import catalog
from webapp.extensions import db
from webapp.models import Experiment, Session, Subject
from webapp.participants import load_catalog

# action -> (statuses it may start from, status it leads to)
TRANSITIONS = {
    "open": (("draft", "paused"), "open"),
    "pause": (("open",), "paused"),
    "close": (("draft", "open", "paused"), "closed"),
}
_SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
# Prolific fills these placeholders in a study URL with each participant's ids.
PROLIFIC_QUERY = {"PROLIFIC_PID": "{{%PROLIFIC_PID%}}", "STUDY_ID": "{{%STUDY_ID%}}",
                  "SESSION_ID": "{{%SESSION_ID%}}"}


class StudyError(ValueError):
    """A study request that cannot be carried out (unknown design, bad transition ...)."""


def create_study(slug: str, design: str, stimulus_set: str, title: str | None = None) -> Experiment:
    """Create a draft study of ``design`` on ``stimulus_set``.

    Raises
    ------
    StudyError
        For a malformed or taken slug, an unknown design or stimulus set, or a stimulus set
        the design cannot build a schedule from.
    """
    slug = (slug or "").strip()
    if not _SLUG.match(slug):
        raise StudyError("slug must be 1-64 lowercase letters, digits or '-', "
                         "starting and ending with a letter or digit")
    if get_study(slug) is not None:
        raise StudyError(f"a study {slug!r} already exists")
    if design not in DESIGNS:
        raise StudyError(f"unknown design {design!r}; expected one of {', '.join(sorted(DESIGNS))}")
    if stimulus_set not in catalog.stimulus_sets():
        raise StudyError(f"unknown stimulus set {stimulus_set!r}; import or generate it first")
    chosen = DESIGNS[design]
    check_schedulable(chosen, stimulus_set)
    # The snapshot keeps the study's design fixed even if the shipped design changes later.
    experiment = Experiment(
        slug=slug, title=(title or "").strip() or slug, design=design,
        design_snapshot=chosen.to_dict(), stimulus_set=stimulus_set, status="draft",
        exclusion_rules_version=chosen.exclusions.version,
    )
    db.session.add(experiment)
    try:
        db.session.commit()
    except IntegrityError as error:  # the same slug, created a moment ago by someone else
        db.session.rollback()
        raise StudyError(f"a study {slug!r} already exists") from error
    return experiment


def check_schedulable(design, stimulus_set: str) -> None:
    """Build every session's schedule once on ``stimulus_set``, so a study that could never
    start (e.g. frame ordering on clips without frame sets) is refused when it is created."""
    records = load_catalog(db.session.connection(), stimulus_set, design.catch_set)
    condition = schedule.choose_condition(design, {}, np.random.default_rng(0))
    condition["catch_available"] = bool(records.catch)
    try:
        for number in range(1, design.sessions + 1):
            schedule.build_schedule(design, records, 0, number, condition)
    except schedule.ScheduleError as error:
        raise StudyError(f"design {design.name!r} cannot run on stimulus set "
                         f"{stimulus_set!r}: {error}") from error


def get_study(slug: str) -> Experiment | None:
    return db.session.scalar(select(Experiment).where(Experiment.slug == slug))


def require_study(slug: str) -> Experiment:
    experiment = get_study(slug)
    if experiment is None:
        raise StudyError(f"no study {slug!r}")
    return experiment


def list_studies() -> list[Experiment]:
    return list(db.session.scalars(select(Experiment).order_by(Experiment.created_at.desc(),
                                                                Experiment.id.desc())))


def transition(slug: str, action: str) -> Experiment:
    """Apply ``action`` ("open", "pause", "close") if the study's current status allows it.

    The status is changed by one conditional UPDATE, so two researchers clicking at once
    cannot both move the study (e.g. reopen a study the other just closed).
    """
    if action not in TRANSITIONS:
        raise StudyError(f"unknown action {action!r}; expected one of {', '.join(TRANSITIONS)}")
    sources, target = TRANSITIONS[action]
    experiment = require_study(slug)
    result = db.session.execute(
        update(Experiment).where(Experiment.id == experiment.id, Experiment.status.in_(sources))
        .values(status=target).execution_options(synchronize_session=False))
    db.session.commit()
    db.session.refresh(experiment)
    if result.rowcount != 1:
        raise StudyError(f"cannot {action} study {slug!r}: it is {experiment.status}")
    return experiment


def allowed_actions(status: str) -> list[str]:
    return [action for action, (sources, _) in TRANSITIONS.items() if status in sources]


def participant_link(slug: str, prolific: bool = False) -> str:
    """The URL participants open; with ``prolific`` it carries Prolific's id placeholders.

    In a request it is built from the request's host; elsewhere (the CLI) from PUBLIC_URL.
    """
    if has_request_context():
        link = url_for("participant.entry", slug=slug, _external=True)
    else:
        base = urlsplit(current_app.config["PUBLIC_URL"])
        adapter = current_app.url_map.bind(base.netloc, script_name=base.path or "/",
                                           url_scheme=base.scheme or "http")
        link = adapter.build("participant.entry", {"slug": slug}, force_external=True)
    if prolific:
        # Prolific wants the placeholders literally, braces and percent signs unescaped.
        link += "?" + urlencode(PROLIFIC_QUERY, safe="{}%")
    return link


def status_counts() -> dict[int, dict[str, int]]:
    """Sessions per study and status, for the study list."""
    rows = db.session.execute(
        select(Subject.experiment_id, Session.status, func.count())
        .join(Session.subject).where(Subject.kind == "human")
        .group_by(Subject.experiment_id, Session.status)).all()
    counts: dict[int, dict[str, int]] = {}
    for experiment_id, status, n in rows:
        counts.setdefault(experiment_id, {})[status] = n
    return counts
