"""Entry links: what a participant's recruitment link leads to.

A recruitment id maps to one Subject per study; entering again resumes its unfinished session,
or opens the next session of a multi-session design once it is available, and never creates a
second subject.  New participants are refused when every place is taken or too many new
sessions start from one address or into one study; a known id entered from another browser is
sent back to its first one (:mod:`webapp.participant.resume`).  The new session itself is
opened by :mod:`webapp.participant.opening`.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from flask import current_app
from sqlalchemy import Connection, Row

from experiments import schedule as scheduling
from experiments.designs import Design
from experiments.platforms import PLATFORMS
from experiments.verdict import UNFINISHED
from webapp import rate_limits
from webapp.database import write_transaction
from webapp.participant import resume, store, texts
from webapp.participant.calendar import opens_after
from webapp.participant.opening import open_session
from webapp.participant.sessions import FULL, ID_PARAMS, ending_of
from webapp.participant.store import locked_session, now, places_taken, update_session

RECRUITMENT_KEYS = (*ID_PARAMS, "STUDY_ID", "SESSION_ID")
_ID = re.compile(r"[A-Za-z0-9._:@-]{1,200}")

@dataclass
class Entry:
    """What the entry link leads to: run | ask_id | done | screened_out | wait | elsewhere |
    closed | full | busy | invalid | unavailable."""

    outcome: str
    token: str | None = None  # the session to run
    resume_key: str | None = None  # a new participant's key, for their browser to keep
    message: str = ""
    opens_at: datetime | None = None
    key: str = ""  # the text (experiments/texts) the page shows
    study: Row | None = None  # for the page's language and the study's own texts
    language: str | None = None  # the language of the participant's last session
    # A screened-out participant's ending again: its code, redirect, reasons and device check.
    ending: dict = field(default_factory=dict)
    retry_after_s: int = 0  # busy: when the limit that refused the entry would admit it


def recruitment_keys(study: Row | None) -> tuple[str, ...]:
    """The entry link's parameters kept for ``study``: the id its platform sends (SONA's
    ``id``) first, then everyone's."""
    platform = PLATFORMS[texts.study_settings(study.design_snapshot if study else None)
                         ["platform"]]
    return tuple(dict.fromkeys((platform.id_param, *RECRUITMENT_KEYS)))


def recruitment_from(args: Mapping[str, str], keys: tuple[str, ...] = RECRUITMENT_KEYS
                     ) -> tuple[str, dict]:
    """(external id, recruitment dict) from the entry link's query, or ValueError; ``keys``:
    :func:`recruitment_keys`, the id parameters first."""
    recruitment = {k: _as_typed(args[k]) for k in keys if args.get(k)}
    ids = [k for k in keys if k not in ("STUDY_ID", "SESSION_ID")]
    external_id = next((recruitment[k] for k in ids if k in recruitment), None)
    if not external_id:
        raise ValueError(f"this link needs a participant id ({' or '.join(ids)})")
    bad = [k for k, v in recruitment.items() if not _ID.fullmatch(v)]
    if bad:
        raise ValueError(f"invalid recruitment parameter(s): {', '.join(bad)}")
    return external_id, recruitment


def _as_typed(value: str) -> str:
    """An id as its participant meant it: NFKC (a Japanese or Chinese input method types
    ＴＫ０１２ full-width), and every decimal digit as 0-9 (an Arabic or Persian keyboard types
    ١٢٣ or ۱۲۳, which NFKC keeps)."""
    value = unicodedata.normalize("NFKC", value)
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() and not c.isascii() else c
                   for c in value)


NOT_OPEN = "This study is not open at the moment."
STOPPED = "The researchers have stopped this study. The answers you gave are saved."


@dataclass(frozen=True)
class Admission:
    """Who is entering: the client's address (for rate limits), the resume keys its browser
    holds for the study (:mod:`webapp.participant.resume`), and whether it is run by the
    built-in simulated participant (development, tests and researcher previews)."""

    address: str = ""
    simulated: bool = False
    preview: bool = False  # a researcher's preview: any status, no limits, no place taken
    resume_keys: tuple[str, ...] = ()


def enter(connection: Connection, slug: str, args: Mapping[str, str],
          admission: Admission = Admission(), accept_languages=None) -> Entry:
    """Resolve an entry link to a session to run (creating subject and session as needed).

    A new session remembers its language: ``?lang=``, else the participant's last session's,
    else the best match of ``accept_languages`` (the browser's); none where nothing chooses
    one (a researcher's preview passes no ``accept_languages``: the run page then picks by
    the researcher's browser).
    """
    study = store.study_by_slug(connection, slug)
    if study is None:
        return Entry("closed", message="There is no study at this address.", key="no_study")
    entry = _study_entry(connection, study, args, admission, accept_languages)
    entry.study = study
    return entry


def _study_entry(connection: Connection, study: Row, args: Mapping[str, str],
                 admission: Admission, accept_languages) -> Entry:
    if study.status == "draft" and not admission.preview:
        return Entry("closed", message=NOT_OPEN, key="not_open")
    if study.close_mode == "stop":
        return Entry("closed", message=STOPPED, key="study_stopped")
    keys = recruitment_keys(study)
    if not any(args.get(key) for key in keys):
        # The bare link (as the dashboard and `study list` show it): ask for the id.
        return Entry("ask_id", key="ask_id")
    try:
        external_id, recruitment = recruitment_from(args, keys)
    except ValueError as error:
        if "PROLIFIC_PID" not in args and "participant" in args:  # typed into the form
            return Entry("ask_id", message=str(error), key="ask_id_invalid")
        return Entry("invalid", message=str(error), key="invalid_link")
    try:
        return _session_entry(connection, study, external_id, recruitment, admission,
                              _LanguageChoice(args.get("lang"), accept_languages))
    except scheduling.ScheduleError as error:  # a study set up on an unusable stimulus set
        current_app.logger.error("study %s cannot schedule: %s", study.slug, error)
        return Entry("unavailable", message="This study cannot start at the moment.",
                     key="cannot_start")


@dataclass(frozen=True)
class _LanguageChoice:
    """What picks a new session's language: the link's ``?lang=`` and the browser's
    Accept-Language (None outside a participant's request)."""

    requested: str | None
    accept_languages: object = None

    def pick(self, study: Row, last: Row | None) -> str | None:
        """The new session's language; None where nothing chose one (the study's first is
        then only a default, and the browser at the run page decides)."""
        remembered = _language_of(last) if last is not None else None
        return texts.preferred_language(texts.study_settings(study.design_snapshot)["languages"],
                                        self.requested, self.accept_languages, remembered)


def _language_of(session: Row) -> str | None:
    """The language a participant's session was in: the one chosen for it, else the one its
    consent was given in."""
    info = session.device_info or {}
    return texts.remembered_language(info) or (info.get("consent") or {}).get("language")


def _session_entry(connection: Connection, study: Row, external_id: str,
                   recruitment: dict, admission: Admission,
                   language: _LanguageChoice = _LanguageChoice(None)) -> Entry:
    design = Design.from_snapshot(study)
    # Paused and closed ("finish") studies take no new participants; those in may finish.
    taking = study.status == "open" or admission.preview
    for _ in range(2):  # twice: a concurrent entry with the same id may create the rows first
        last = store.last_session(connection, study.id, external_id)
        if last is not None and not resume.holds(admission.resume_keys, last.resume_key_hash):
            if not resume.unopened(last):
                # Someone else's id, or this participant in another browser: nothing about
                # the session is shown or changed, and such tries are counted.
                return _returning_refusal(study, admission.address)
            handed = resume.hand_over(connection, last, language.pick(study, None))
            if handed is not None:
                return Entry("run", *handed)
            continue  # a tab opened it meanwhile: the next reading refuses this browser
        if last is not None and last.token is not None:
            remembered = _language_of(last)
            if last.status in UNFINISHED:
                _remember_language(connection, study, last, language.requested)
                return Entry("run", last.token)
            if last.status == "screened_out":
                return Entry("screened_out", key="screen_out", language=remembered,
                             ending=_screen_out_again(study, last, recruitment))
            if last.status != "completed" or last.session_number >= design.sessions:
                return Entry("done", message=_done_message(last.status),
                             key=_DONE_KEYS.get(last.status, "already_taken_part"),
                             language=remembered)
            # A participant already in goes on to their next session while the study is
            # paused or closed ("finish"): only "stop" ends their participation.
            opens_at = opens_after(Design.from_snapshot(last), last.completed_at or now())
            if now() < opens_at:
                return Entry("wait", opens_at=opens_at, language=remembered)
        elif not taking:
            return Entry("closed", message=NOT_OPEN, key="not_open")
        elif not admission.preview:
            refused = admission_refusal(connection, study, admission.address)
            if refused is not None:
                return refused
        opened = open_session(connection, study, design, external_id, recruitment, last,
                              admission, language.pick(study, last))
        if opened is not None:
            token, key = opened
            return Entry("run", token, resume_key=key)
    raise RuntimeError(f"could not open a session for {external_id!r} in {study.slug!r}")


def _remember_language(connection: Connection, study: Row, session: Row,
                       requested: str | None) -> None:
    """A participant who comes back to an unfinished session with another ``?lang=`` (one the
    study offers) reads it in that language from now on: the session remembers it."""
    offered = texts.study_settings(study.design_snapshot)["languages"]
    if requested not in offered or requested == texts.remembered_language(session.device_info):
        return
    with write_transaction(connection):
        current = locked_session(connection, session.session_id)
        update_session(connection, session.session_id,
                       device_info={**(current.device_info or {}), "language": requested})


def _screen_out_again(study: Row, session: Row, recruitment: dict) -> dict:
    """What a screened-out participant is shown again when they open their link: the
    screen-out code (to return the study with), its redirect, and why."""
    ended = ending_of(study.slug, session.design_snapshot, recruitment, session.session_id,
                      session.session_number, "screened_out")
    stored = (session.device_info or {})
    return {"code": ended["completion_code"], "redirect_url": ended["redirect_url"],
            "reasons": list((stored.get("screen_out") or {}).get("reasons") or []),
            "device": dict(stored.get("device") or {})}


_DONE_KEYS = {"completed": "already_completed", "stopped": "study_stopped"}


def _done_message(status: str) -> str:
    if status == "completed":
        return "You have already completed this study. Thank you!"
    if status == "stopped":
        return STOPPED
    return "You have already taken part in this study."


BUSY = "Too many new sessions are starting right now. Please try again in a few minutes."
BUSY_NETWORK = ("Several people have started this study from your network (internet address) "
                "recently. Please try again later; if you share a network with other "
                "participants (a campus or a lab), the researchers can let more in.")


def admission_refusal(connection: Connection, study: Row, address: str) -> Entry | None:
    """Why a new participant cannot start now (every place is taken, or too many new sessions
    come from one address or into one study), or None.  Returning participants never get here.
    """
    if study.max_participants is not None and \
            places_taken(connection, study.id) >= study.max_participants:
        return Entry("full", message=FULL, key="study_full")
    config, client = current_app.config, rate_limits.client_key(address)
    limits = [(name, config[name], *scope) for name, scope in (
        ("NEW_SESSIONS_PER_ADDRESS_PER_STUDY", (client, str(study.id))),
        ("NEW_SESSIONS_PER_ADDRESS", (client,)), ("NEW_SESSIONS_PER_STUDY", (str(study.id),)))]
    refused, wait_s = _first_refusal(limits)
    if refused is None:
        return None
    if refused[0] == "NEW_SESSIONS_PER_STUDY":
        return Entry("busy", message=BUSY, key="busy", retry_after_s=wait_s)
    return Entry("busy", message=BUSY_NETWORK, key="busy_network", retry_after_s=wait_s)


def _first_refusal(limits: list[tuple[str, ...]]) -> tuple[tuple[str, ...] | None, int]:
    """The first of ``limits`` that refuses an entry and the seconds until it would not, or
    (None, 0) after counting the entry against every one."""
    # All are checked before any counts: a refused entry must not use up another limit (one
    # address retrying must not use up the study's limit for everyone).
    for count in (rate_limits.seconds_to_wait, rate_limits.hit):
        for limit in limits:
            if wait_s := count(*limit):
                return limit, wait_s
    return None, 0


def _returning_refusal(study: Row, address: str) -> Entry:
    """A known id entered without its resume key: the page that sends the participant back
    to their first browser or to the researchers, unless such tries from this address or
    into this study are too many (a probe for ids)."""
    config, client = current_app.config, rate_limits.client_key(address)
    for name, scope in (("RETURNING_ENTRIES_PER_ADDRESS", (client,)),
                        ("RETURNING_ENTRIES_PER_STUDY", (str(study.id),))):
        if wait_s := rate_limits.hit(name, config[name], *scope):
            return Entry("busy", message=BUSY, key="busy", retry_after_s=wait_s)
    return Entry("elsewhere", key="resume_elsewhere")
