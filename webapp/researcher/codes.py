"""The codes a study's sessions were shown, and checking a platform's list against them.

A researcher pastes the codes workers submitted (CrowdWorks, Lancers, MTurk, a lab's own
pool) and sees which ones this study issued, to whom, for which session and outcome.  Codes
are recomputed from the sessions (:func:`webapp.participant.sessions.session_code`), so
nothing else is stored to check one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd
from sqlalchemy import select

from experiments.designs import Design
from experiments.platforms import PLATFORMS
from experiments.verdict import ENDED
from webapp.extensions import db
from webapp.models import Session, Study, Subject
from webapp.models.study import StudyVersion
from webapp.participant import sessions, texts

MAX_CODES = 100_000  # a pasted list past this is refused, not read
MAX_CODE_CHARS = 64
_SEPARATORS = re.compile(r"[\s,;]+")


class CodeListError(ValueError):
    """A pasted list that is not one: too many codes."""


@dataclass(frozen=True)
class Issued:
    participant: str
    session_number: int
    status: str


def issued_codes(study: Study) -> dict[str, list[Issued]]:
    """Each code the study's participants were shown (an ended session's; previews and the
    simulated participant's left out), with who was shown it: one participant for a platform
    of unique codes, everyone of that outcome and session for shared ones."""
    settings = settings_by_version(study)
    rows = db.session.execute(
        select(Session.id, Session.session_number, Session.status, Subject.external_id,
               Session.study_version)
        .join(Session.subject)
        .where(Subject.study_id == study.id, Subject.kind == "human",
               Session.status.in_(ENDED), Session.simulated.is_(False))
        .order_by(Session.id))
    found: dict[str, list[Issued]] = {}
    for session_id, number, status, participant, version in rows:
        code = sessions.session_code(study.slug, settings.get(version, settings[None]),
                                     session_id, number, status)
        if code is not None:  # every ended status has one
            found.setdefault(code, []).append(Issued(participant, number, status))
    return found


def settings_by_version(study: Study) -> dict[int | None, dict]:
    """The participant-side settings each frozen version of ``study`` ran with (a session's
    platform is its version's), and under None the study's own (an unfrozen draft's)."""
    frozen = db.session.execute(select(StudyVersion.version, StudyVersion.design_snapshot)
                                .where(StudyVersion.study_id == study.id))
    return {None: texts.study_settings(study.design_snapshot),
            **{version: texts.study_settings(snapshot) for version, snapshot in frozen}}


def parse_codes(text: str) -> list[str]:
    """The codes of a pasted list (one per line, or separated by commas, semicolons or
    spaces), in order, as the platform shows them (case aside)."""
    codes = [code for code in _SEPARATORS.split(text) if code]
    if len(codes) > MAX_CODES:
        raise CodeListError(f"expected at most {MAX_CODES} codes, got {len(codes)}")
    return codes


def check_codes(study: Study, codes: list[str]) -> pd.DataFrame:
    """One row per pasted code: ``code, valid, participant, session_number, status, note``.

    A code this study never issued is not valid, nor is a participant's own code pasted a
    second time (two workers submitting one code); a shared code (Prolific's) is valid
    however often it comes, and names no participant."""
    issued = issued_codes(study)
    seen: set[str] = set()
    rows = []
    for pasted in codes:
        code = pasted.upper()[:MAX_CODE_CHARS]
        whom = issued.get(code, [])
        first = whom[0] if whom else None
        if first is None:
            valid, note = False, "not a code of this study"
        elif len(whom) == 1:
            valid = code not in seen
            note = "" if valid else "submitted more than once"
        else:
            valid, note = True, f"a shared code, shown to {len(whom)} participants"
        seen.add(code)
        rows.append({"code": pasted[:MAX_CODE_CHARS], "valid": valid,
                     "participant": whom[0].participant if len(whom) == 1 else "",
                     "session_number": first.session_number if first else None,
                     "status": first.status if first else "", "note": note})
    return pd.DataFrame(rows, columns=["code", "valid", "participant", "session_number",
                                       "status", "note"]).astype({"session_number": "Int64"})


def shared_codes(study: Study) -> dict[int, dict[str, str]]:
    """The codes to enter on the platform once, by session number and outcome; none for a
    platform whose participants each get their own."""
    settings = texts.study_settings(study.design_snapshot)
    if PLATFORMS[settings["platform"]].codes != "shared":
        return {}
    return {number: sessions.completion_codes(study.slug, number)
            for number in range(1, Design.from_snapshot(study).sessions + 1)}


def with_codes(participants: pd.DataFrame, study: Study) -> pd.DataFrame:
    """The roster with each ended human session's ``completion_code`` (empty otherwise)."""
    settings = settings_by_version(study)
    ended = participants["status"].isin(ENDED) & (participants["subject_kind"] == "human")
    codes = [sessions.session_code(
        study.slug, settings.get(None if pd.isna(row.study_version) else int(row.study_version),
                                 settings[None]),
        int(row.session_id), int(row.session_number), row.status) if is_ended else ""
        for row, is_ended in zip(participants.itertuples(), ended)]
    return participants.assign(completion_code=codes)
