"""The next session of a multi-session design: when it opens, and its calendar file.

A session's next one opens ``session_gap_hours`` after it was completed, the gap of the
version that completed session ran (:func:`opens_after`): the promise made to the participant
at its end, which a later change of the study does not break.  That moment is what the end of the session
shows (in the participant's local time, formatted by the browser), what the calendar file's
DTSTART says, what the next session stores as its ``available_from`` once it is opened, and
what the researchers' allowlist export gives as the earliest start.

The calendar file is RFC 5545 iCalendar: one VEVENT, times in UTC, text from the study's
texts in the participant's language, and the participant's own entry link to come back with.
It holds no session token: the token is a credential, and calendar files get shared.
"""
from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

from flask import current_app
from markupsafe import Markup
from sqlalchemy import Row

from experiments import schedule as scheduling
from experiments.designs import Design

# Which recruitment parameter names the participant in an entry link, most specific first.
ID_KEYS = ("PROLIFIC_PID", "participant")
_LINE_OCTETS = 75  # RFC 5545 3.1: lines longer than this are folded


def next_session(session: Row) -> dict | None:
    """``{"session", "sessions", "opens_at"}`` of the session after ``session`` (``opens_at``
    a UTC datetime), or None: the session is not completed, or is the design's last."""
    design = Design.from_snapshot(session)
    if session.status != "completed" or session.completed_at is None \
            or session.session_number >= design.sessions:
        return None
    return {"session": session.session_number + 1, "sessions": design.sessions,
            "opens_at": opens_after(design, session.completed_at)}


def opens_after(ran: Design, completed_at: datetime) -> datetime:
    """When the session after one completed at ``completed_at`` opens (UTC), ``ran`` being
    the design of the version that completed session ran (its frozen snapshot), never the
    study's current one: the end screen, the calendar file, the entry check and the
    researchers' allowlist all ask this one function."""
    return utc(scheduling.session_opens_at(ran, completed_at))


def utc(moment: datetime) -> datetime:
    """``moment`` in UTC (a naive datetime is taken as UTC, as SQLite returns them)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``, to the second: ``2030-01-15T12:30:00Z``."""
    return utc(moment).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def entry_query(recruitment: dict | None) -> dict[str, str]:
    """The query of the participant's own entry link: their id, under the name it came with."""
    recruitment = recruitment or {}
    key = next((k for k in ID_KEYS if recruitment.get(k)), None)
    return {key: recruitment[key]} if key else {}


def entry_link(slug: str, query: dict[str, str]) -> str:
    """The study's entry link with ``query``, on the configured ``PUBLIC_URL``: never the
    request's Host header, which a client chooses and a calendar file would carry on."""
    base = urlsplit(current_app.config["PUBLIC_URL"])
    adapter = current_app.url_map.bind(base.netloc, script_name=base.path or "/",
                                       url_scheme=base.scheme or "http")
    return adapter.build("participant.entry", {"slug": slug, **query}, force_external=True)


def plain_text(html: str) -> str:
    """A rendered text (sanitised HTML) as plain text: one paragraph per <p> or line break."""
    blocks = (Markup(block).striptags() for block in re.split(r"</p>|<br\s*/?>", str(html)))
    return "\n\n".join(block for block in blocks if block)


def escape_text(value: str) -> str:
    """An RFC 5545 TEXT value (3.3.11): backslash, semicolon, comma and newline escaped."""
    return (value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
            .replace("\r\n", "\n").replace("\n", "\\n"))


def fold(line: str) -> str:
    """One content line folded at 75 octets (never inside a UTF-8 character), CRLF-ended."""
    encoded, parts, start = line.encode(), [], 0
    limit = _LINE_OCTETS
    while len(encoded) - start > limit:
        end = start + limit
        while end > start and (encoded[end] & 0xC0) == 0x80:  # a continuation byte
            end -= 1
        parts.append(encoded[start:end].decode())
        start, limit = end, _LINE_OCTETS - 1  # continuation lines begin with a space
    parts.append(encoded[start:].decode())
    return "\r\n ".join(parts) + "\r\n"


def _stamp(moment: datetime) -> str:
    return utc(moment).strftime("%Y%m%dT%H%M%SZ")


def calendar_file(session: Row, upcoming: dict, summary: str, description: str, link: str,
                  minutes: float, now: datetime) -> bytes:
    """The iCalendar file of ``upcoming`` (from :func:`next_session`): its start in UTC, an
    end ``minutes`` later, ``summary`` and ``description`` (plain text) and ``link``."""
    start = upcoming["opens_at"]
    # Stable per session, so that downloading the file again updates the same event; derived
    # one-way from the token, which the file must not hold.
    uid = hashlib.sha256(f"calendar:{session.token}".encode()).hexdigest()[:32]
    lines = [
        "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Chronoscope//Next session//EN",
        "CALSCALE:GREGORIAN", "METHOD:PUBLISH", "BEGIN:VEVENT",
        f"UID:{uid}@chronoscope", f"DTSTAMP:{_stamp(now)}", f"DTSTART:{_stamp(start)}",
        f"DTEND:{_stamp(start + timedelta(minutes=max(float(minutes), 1.0)))}",
        f"SUMMARY:{escape_text(summary)}",
        f"DESCRIPTION:{escape_text(description)}",
        f"URL:{link}",
        "TRANSP:TRANSPARENT", "END:VEVENT", "END:VCALENDAR",
    ]
    return "".join(fold(line) for line in lines).encode()
