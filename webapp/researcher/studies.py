"""Study set-up: create a study from a design and a stimulus set, check that it can build a
schedule, look studies up, and the link participants open.  Its lifecycle and versions are
:mod:`webapp.researcher.lifecycle`.
"""
import re
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import numpy as np
from flask import current_app, has_request_context, url_for
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from experiments import length_sweep, schedule, study_file
from experiments.designs import DESIGNS, STUDY_CONFIG_KEY, Design
from experiments.platforms import PLATFORMS
from webapp.database import write_transaction
from webapp.extensions import db
from webapp.models import Researcher, Session, Study, StudyMember, Subject
from webapp.stimuli import catalog
from webapp.stimuli.catalog import load_catalog

SHIPPED_STUDIES = Path(study_file.__file__).resolve().parent / "studies"
_SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
# Prolific fills these placeholders in a study URL with each participant's ids.
PROLIFIC_QUERY = {"PROLIFIC_PID": "{{%PROLIFIC_PID%}}", "STUDY_ID": "{{%STUDY_ID%}}",
                  "SESSION_ID": "{{%SESSION_ID%}}"}


class StudyError(ValueError):
    """A study request that cannot be carried out (unknown design, bad transition ...);
    ``setting`` names the study-file setting at fault ("study.stimulus_set"), if one is."""

    def __init__(self, message: str, setting: str | None = None):
        super().__init__(message)
        self.setting = setting


def create_study(slug: str, design: str, stimulus_set: str, title: str | None = None,
                 owner: str | None = None, max_participants: int | None = None,
                 config: study_file.StudyConfig | None = None) -> Study:
    """Create a draft study of ``design`` on ``stimulus_set``, owned by the researcher named
    ``owner`` (with None, only admins see it), with an optional cap on participants.

    Study and owner are stored in one transaction: a study never exists without its owner.

    Raises
    ------
    StudyError
        For a malformed or taken slug, an unknown design, stimulus set or owner, a cap below
        1, or a stimulus set the design cannot build a schedule from.
    """
    owner_id = None
    if owner is not None:
        owner_id = db.session.scalar(select(Researcher.id).where(Researcher.username == owner))
        if owner_id is None:
            raise StudyError(f"no researcher {owner!r}")
    problem = study_file.title_problem((title or "").strip())
    if problem:
        raise StudyError(f"title: {problem}", "study.title")
    if max_participants is not None and max_participants < 1:
        raise StudyError(f"max_participants must be at least 1, got {max_participants}")
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
    if config is None:  # --design: the design's defaults, in the languages it ships texts in
        config = study_file.StudyConfig(design=DESIGNS[design], stimulus_set=stimulus_set,
                                        title=title or "", places=max_participants,
                                        languages=shipped_languages(design))
    return _store(slug, config.design, stimulus_set, title, owner_id, max_participants, config)


def shipped_languages(design: str) -> tuple[str, ...]:
    """The languages of ``design``'s shipped study file (``experiments/studies/DESIGN.toml``);
    English alone for a design without one."""
    path = SHIPPED_STUDIES / f"{design}.toml"
    if not path.is_file():
        return study_file.StudyConfig.languages
    return study_file.load(path).languages


def create_study_from_config(slug: str, config: study_file.StudyConfig,
                             owner: str | None = None) -> Study:
    """Create a draft study from a study file's configuration (``study_file.load``).

    The whole configuration, texts included, is stored in the study's design snapshot under
    ``STUDY_CONFIG_KEY``, with the session length estimated from the schedule it builds.
    """
    return create_study(slug, config.design.name, config.stimulus_set, config.title or None,
                        owner=owner, max_participants=config.places, config=config)


def _store(slug, chosen, stimulus_set, title, owner_id, max_participants, config=None) -> Study:
    schedules, clip_s = check_schedulable(chosen, stimulus_set)
    snapshot = chosen.to_dict()
    if config is not None:
        minutes = max(study_file.estimate_session_minutes(chosen, s, clip_s) for s in schedules)
        snapshot[STUDY_CONFIG_KEY] = {**config.settings(), "estimate": {"session_minutes": minutes}}
    # The snapshot keeps the study's design fixed even if the shipped design changes later.
    study = Study(
        slug=slug, title=(title or "").strip() or slug, design=chosen.name,
        design_snapshot=snapshot, stimulus_set=stimulus_set, status="draft",
        exclusion_rules_version=chosen.exclusions.version, max_participants=max_participants,
    )
    db.session.add(study)
    try:
        if owner_id is not None:
            db.session.flush()
            db.session.add(StudyMember(study_id=study.id, researcher_id=owner_id,
                                       role="owner"))
        db.session.commit()
    except IntegrityError as error:  # the same slug, created a moment ago by someone else
        db.session.rollback()
        raise StudyError(f"a study {slug!r} already exists") from error
    return study


def study_config(study: Study) -> study_file.StudyConfig:
    """The study's configuration; a study stored without one (before ``--design`` stored its
    languages) gets the default settings."""
    snapshot = study.design_snapshot or {}
    design = Design.from_snapshot(study)
    settings = snapshot.get(STUDY_CONFIG_KEY) or {
        "stimulus_set": study.stimulus_set, "title": study.title, "places": study.max_participants}
    return study_file.StudyConfig.from_settings(design, settings)


def time_zone(study: Study) -> str:
    """The study's time zone (``study.time_zone``; UTC for a study stored without one)."""
    settings = (study.design_snapshot or {}).get(STUDY_CONFIG_KEY) or {}
    return settings.get("time_zone") or study_file.StudyConfig.time_zone


def export_config(slug: str) -> str:
    """Study SLUG's configuration as a study file (``create --from`` it for the same study)."""
    return study_file.to_toml(study_config(require_study(slug)))


def check_schedulable(design, stimulus_set: str) -> tuple[list[list[dict]], float]:
    """Build every session's schedule once on ``stimulus_set``, so a study that could never
    start (e.g. frame ordering on clips without frame sets) is refused when it is created.

    Returns the schedules and the mean clip duration in seconds (for the time estimate).
    """
    records = load_catalog(db.session.connection(), stimulus_set, design.catch_set)
    _check_catch_keys(design, records)
    _check_length_cuts(design, records, stimulus_set)
    condition = schedule.choose_condition(design, {}, np.random.default_rng(0))
    condition["catch_available"] = bool(schedule.catch_pool(design, records))
    try:
        schedules = [schedule.build_schedule(design, records, 0, number, condition)
                     for number in range(1, design.sessions + 1)]
    except schedule.ScheduleError as error:
        raise StudyError(f"design {design.name!r} cannot run on stimulus set "
                         f"{stimulus_set!r}: {error}", "study.stimulus_set") from error
    available = len(schedule.clip_pools(design, records)[0])
    if design.max_clips is not None and design.max_clips > available:  # else silently fewer
        raise StudyError(f"expected at most the {available} clip(s) per session that stimulus "
                         f"set {stimulus_set!r} has for design {design.name!r}, got "
                         f"{design.max_clips}", "blocks.clips_per_session")
    clip_s = float(np.mean([clip.duration_s for clip in records.clips])) if records.clips else 3.0
    return schedules, clip_s


def _check_length_cuts(design, records, stimulus_set: str) -> None:
    """Refuse a design that does not run a length set's cuts as a sweep: it would show each
    cut (2 frames, 3, ...) as a clip of its own, hundreds of trials of no use."""
    if length_sweep.SPLIT in design.included_splits or length_sweep.SPLIT in \
            design.excluded_splits or not any(c.split == length_sweep.SPLIT for c in records.clips):
        return
    runs = sorted(name for name, d in DESIGNS.items() if length_sweep.SPLIT in d.included_splits)
    raise StudyError(f"stimulus set {stimulus_set!r} holds clip-length cuts (split "
                     f"{length_sweep.SPLIT!r}), which only the clip-length design runs "
                     f"({', '.join(runs)}); design {design.name!r} would show every cut as a "
                     "clip of its own: choose that design or the set the cuts were made from",
                     "study.stimulus_set")


def _check_catch_keys(design, records) -> None:
    """Refuse catch trials that a stored catch set could not show for each response key.

    A design whose catch set is not stored at all still runs, without catch trials, as before;
    a set that is stored but lacks a key (one generated before it held every letter and
    digit) would silently drop every attention check, so it is refused.
    """
    missing = schedule.missing_catch_keys(design, records)
    if design.catch_per_block < 1 or not records.catch or not missing:
        return
    held = sorted({record.instructed_key for record in records.catch})
    raise StudyError(
        f"the catch set {design.catch_set!r} has no video for response key "
        f"{' or '.join(repr(key) for key in missing)} (it holds {', '.join(held)}): run "
        "`python manage.py stimuli generate` to add every key's video, or set "
        "blocks.catch_per_block = 0")


def get_study(slug: str) -> Study | None:
    return db.session.scalar(select(Study).where(Study.slug == slug))


def require_study(slug: str) -> Study:
    study = get_study(slug)
    if study is None:
        raise StudyError(f"no study {slug!r}")
    return study


def list_studies() -> list[Study]:
    return list(db.session.scalars(select(Study).order_by(Study.created_at.desc(),
                                                                Study.id.desc())))


def studies_for(researcher: Researcher) -> list[Study]:
    """The studies ``researcher`` is a member of (every study for an admin), newest first."""
    query = select(Study).order_by(Study.created_at.desc(), Study.id.desc())
    if not researcher.is_admin:
        query = query.join(StudyMember, StudyMember.study_id == Study.id).where(
            StudyMember.researcher_id == researcher.id)
    return list(db.session.scalars(query))


def usable_sets(designs=None) -> dict[str, list[str]]:
    """The stored stimulus sets each design can build a schedule from (a catch-trial set or
    clips without frame sets are left out), by design name."""
    designs = DESIGNS if designs is None else designs
    names = sorted(catalog.stimulus_sets())
    usable: dict[str, list[str]] = {}
    for name, design in designs.items():
        usable[name] = []
        for stimulus_set in names:
            try:
                check_schedulable(design, stimulus_set)
            except StudyError:
                continue
            usable[name].append(stimulus_set)
    return usable


def mark_preview(token: str) -> None:
    """Mark the session ``token`` as a researcher's preview (it is also simulated)."""
    with db.engine.connect() as connection, write_transaction(connection):
        connection.execute(update(Session.__table__).where(Session.token == token)
                           .values(preview=True, simulated=True))


def participant_link(slug: str, prolific: bool = False, **query) -> str:
    """The URL participants open; with ``prolific`` it carries Prolific's id placeholders,
    else ``query`` (e.g. ``participant="demo-1"``).

    In a request it is built from the request's host; elsewhere (the CLI) from PUBLIC_URL
    (``make run`` sets it to the host and port it serves on).
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
    elif query:
        link += "?" + urlencode(query)
    return link


def platform_link(slug: str, platform: str) -> str:
    """The link to give recruitment ``platform``: Prolific's with its placeholders, SONA's
    with the survey code SONA fills in, any other pool's with ``ID`` where its own
    placeholder for the participant's id goes."""
    if platform == "prolific":
        return participant_link(slug, prolific=True)
    placeholder = "%SURVEY_CODE%" if platform == "sona" else "ID"
    return f"{participant_link(slug)}?{PLATFORMS[platform].id_param}={placeholder}"


def status_counts() -> dict[int, dict[str, int]]:
    """Sessions per study and status, for the study list (previews never count)."""
    rows = db.session.execute(
        select(Subject.study_id, Session.status, func.count())
        .join(Session.subject).where(Subject.kind == "human", Session.preview.is_(False))
        .group_by(Subject.study_id, Session.status)).all()
    counts: dict[int, dict[str, int]] = {}
    for study_id, status, n in rows:
        counts.setdefault(study_id, {})[status] = n
    return counts
