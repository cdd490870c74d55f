"""Resuming a session: only the browser that began it, or one a researcher let in.

Recruitment ids are not secret (every researcher a Prolific participant worked for sees
theirs; lab ids are short), so an id alone must not open a session.  The browser that first
enters with an id gets a random resume key in a cookie (HttpOnly, SameSite=Lax so that a
link from Prolific still carries it, Secure over https, scoped to the study's entry path);
the server keeps only its sha256.  Entering with a known id resumes only where that key is
held.  Elsewhere the participant is asked to continue in their first browser or to ask the
researchers, who issue a single-use resume link (:func:`issue_link`, audited in
:class:`~webapp.models.ResumeLink`) that gives the new browser a fresh key.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import timedelta

from flask import Response, request, url_for
from sqlalchemy import Connection, select, update

from webapp.database import write_transaction
from webapp.extensions import db
from webapp.models import ResumeLink, Session, Study, Subject
from webapp.participant.store import now

COOKIE = "chronoscope_resume"
# Keys of several ids in one cookie: a lab computer serves several participants of a study,
# and each may come back for a later session there.
KEPT_KEYS = 8
COOKIE_MAX_AGE_S = 400 * 24 * 3600  # the longest a browser keeps a cookie (Chrome's cap)
LINK_VALID = timedelta(hours=72)
_KEY = re.compile(r"[A-Za-z0-9_-]{20,64}")


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> tuple[str, str]:
    """A resume key and the hash the server stores of it."""
    key = secrets.token_urlsafe(24)
    return key, key_hash(key)


def held_keys(cookie: str | None) -> tuple[str, ...]:
    """The well-formed keys of a resume cookie's value (keys joined by dots), newest first."""
    return tuple(key for key in (cookie or "").split(".")[:KEPT_KEYS] if _KEY.fullmatch(key))


def holds(keys: tuple[str, ...], stored_hash: str | None) -> bool:
    """Whether one of ``keys`` is the one whose hash is stored (none is, where none is stored)."""
    return stored_hash is not None and any(
        hmac.compare_digest(key_hash(key), stored_hash) for key in keys)


def remember(response: Response, slug: str, key: str) -> None:
    """Add ``key`` to this browser's resume cookie for study ``slug``."""
    kept = [key, *(k for k in held_keys(request.cookies.get(COOKIE)) if k != key)]
    response.set_cookie(COOKIE, ".".join(kept[:KEPT_KEYS]), max_age=COOKIE_MAX_AGE_S,
                        path=url_for("participant.entry", slug=slug), secure=request.is_secure,
                        httponly=True, samesite="Lax")


class ResumeLinkError(ValueError):
    """A resume link that cannot be issued (no such participant)."""


def issue_link(study: Study, participant: str, issued_by: str) -> tuple[str, ResumeLink]:
    """A single-use code that lets one browser resume ``participant``'s sessions, and its
    audit record (committed); their earlier unused codes stop working.  Only the code's hash
    is stored: it is shown once.

    Raises
    ------
    ResumeLinkError
        If ``participant`` is no participant (human subject) of ``study``.
    """
    subject = db.session.scalar(select(Subject).where(
        Subject.study_id == study.id, Subject.kind == "human", Subject.external_id == participant))
    if subject is None:
        raise ResumeLinkError(f"No participant {participant!r} in {study.slug!r}.")
    # A new link replaces the participant's earlier unused ones (one may have gone astray).
    db.session.execute(update(ResumeLink).where(
        ResumeLink.subject_id == subject.id, ResumeLink.used_at.is_(None),
        ResumeLink.expires_at > now()).values(expires_at=now()))
    code = secrets.token_urlsafe(24)
    link = ResumeLink(study_id=study.id, subject_id=subject.id, code_hash=key_hash(code),
                      issued_by=issued_by, expires_at=now() + LINK_VALID)
    db.session.add(link)
    db.session.commit()
    return code, link


def issued_links(study: Study) -> list[ResumeLink]:
    """Every resume link issued for ``study``, newest first (the audit trail)."""
    return list(db.session.scalars(select(ResumeLink).where(ResumeLink.study_id == study.id)
                                   .order_by(ResumeLink.id.desc())))


_LINK = ResumeLink.__table__.c
_SUBJECT = Subject.__table__.c
_SESSION = Session.__table__.c
_USABLE = (select(_LINK.id, _LINK.subject_id, _SUBJECT.recruitment)
           .join(Subject.__table__, _SUBJECT.id == _LINK.subject_id)
           .join(Study.__table__, Study.__table__.c.id == _LINK.study_id))


def usable_link(connection: Connection, slug: str, code: str):
    """The unused, unexpired link of study ``slug`` with ``code`` (id, subject_id,
    recruitment), or None."""
    if not _KEY.fullmatch(code or ""):
        return None
    return connection.execute(_USABLE.where(
        _LINK.code_hash == key_hash(code), Study.__table__.c.slug == slug,
        _LINK.used_at.is_(None), _LINK.expires_at > now())).one_or_none()


def unopened(session) -> bool:
    """Whether a participant's first session is nobody's yet: never opened by a runner page
    (no tab ever claimed it: a mail scanner or link preview fetched the link, not the
    participant), or opened only in a browser the device check refused and asked to switch
    (:func:`~webapp.participant.sessions.request_switch`).  Either way it is before consent,
    so no trial is stored, and the next browser to enter takes it over with a key of its own."""
    return session.token is not None and session.session_number == 1 \
        and session.status == "started" \
        and (session.active_client is None or switch_requested(session.device_info))


def switch_requested(device_info) -> bool:
    """Whether the device check asked this session's participant to switch browser or device
    and the browser asked has not taken the session up again since (``closed_at``, set by
    :func:`webapp.participant.sessions.claim`)."""
    switch = (device_info or {}).get("switch") or {}
    return bool(switch) and not switch.get("closed_at")


def hand_over(connection: Connection, session, language: str | None) -> tuple[str, str] | None:
    """Give an :func:`unopened` first session to this browser: a new token (whoever was sent
    the old one, a scanner or someone who entered with the id first, can no longer read or
    write the session), a new resume key, and nothing an earlier holder stored but
    ``language`` (this browser's choice, if any).  Returns the token and key; None where a
    tab opened the session since ``session`` was read (of browsers entering at once, the
    last to write holds it)."""
    token = secrets.token_urlsafe(32)
    key, hashed = new_key()
    # Only the tab state read (none, or the refused browser's): a tab that claimed the
    # session since keeps it.
    tab = _SESSION.active_client.is_(None) if session.active_client is None \
        else _SESSION.active_client == session.active_client
    with write_transaction(connection):
        moved = connection.execute(update(Session.__table__).where(
            _SESSION.id == session.session_id, _SESSION.status == "started", tab,
        ).values(active_client=None, token=token, device_info=_fresh_info(session, language))).rowcount
        if moved != 1:
            return None
        connection.execute(update(Subject.__table__).where(_SUBJECT.id == session.subject_id)
                           .values(resume_key_hash=hashed))
    return token, key


def _fresh_info(session, language: str | None) -> dict:
    """A handed-over session's device_info: this browser's language, and the device checks of
    the browsers that were asked to switch (the researchers' record of who was refused)."""
    info: dict = {"language": language} if language else {}
    earlier = session.device_info or {}
    if switch_requested(earlier):
        info["switched_from"] = [*earlier.get("switched_from", []), {
            "device": earlier.get("device"), "switch": earlier["switch"]}]
    return info


def redeem(connection: Connection, slug: str, code: str) -> tuple[dict, str] | None:
    """Use a resume link: its participant's recruitment (to enter with) and the new key this
    browser is to hold; None for a link that is unknown, used or expired.  Two redemptions at
    once: only one wins.  Any other browser's key stops working, and so do the tokens of the
    participant's sessions (an old tab, a copied run link, a shared computer's history): the
    browser that used the link continues under new ones."""
    link = usable_link(connection, slug, code)
    if link is None:
        return None
    key, hashed = new_key()
    with write_transaction(connection):
        used = connection.execute(update(ResumeLink.__table__).where(
            _LINK.id == link.id, _LINK.used_at.is_(None)).values(used_at=now())).rowcount
        if used != 1:
            return None
        connection.execute(update(Subject.__table__).where(_SUBJECT.id == link.subject_id)
                           .values(resume_key_hash=hashed))
        sessions = connection.scalars(select(_SESSION.id).where(
            _SESSION.subject_id == link.subject_id)).all()
        for session_id in sessions:  # one at a time: tokens are unique
            connection.execute(update(Session.__table__).where(_SESSION.id == session_id)
                               .values(token=secrets.token_urlsafe(32)))
    return dict(link.recruitment), key
