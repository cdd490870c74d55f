"""Recruitment platforms, declared once in :data:`PLATFORMS`; a study file picks one by name
(``[recruitment] platform``) and may give a return URL per outcome (``completed_url``, ...).

A platform says where the participant's id arrives in the entry link, which code a
participant is shown (one per outcome and session, shared by everyone and entered once on
the platform, or their own), and where each ending sends them back when the study file gives
no URL of its own.  A URL may hold the placeholders of :data:`PLACEHOLDERS` (and the
platform's own), filled in URL-encoded when a session ends.
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from string import Formatter
from urllib.parse import quote, urlsplit

# The outcomes a study file gives a return URL for, and the session statuses each covers
# (experiments.verdict.ENDED).
URL_OUTCOMES: dict[str, tuple[str, ...]] = {
    "completed": ("completed",),
    "screened_out": ("screened_out",),
    "no_consent": ("no_consent",),  # declined: returned or withdrawn before taking part
    "ended_early": ("failed_attention", "failed_practice", "stopped"),
}
PLACEHOLDERS = {"participant": "the participant's id, as the entry link brought it",
                "code": "the code the participant is shown",
                "study": "the study's slug",
                "session": "the session's number (1, 2, ...)"}
# Codes: "shared" (one per outcome and session, entered once on the platform) or "unique"
# (each participant's own, checked afterwards with `manage.py study codes`).
CODE_POLICIES = ("shared", "unique")
MAX_URL_CHARS = 2000
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete?cc={code}"


@dataclass(frozen=True)
class Platform:
    title: str
    id_param: str  # the entry link's query parameter that brings the participant's id
    codes: str  # one of CODE_POLICIES
    # The return URL by outcome where the study file gives none; followed only by a
    # participant whose link brought id_param (a researcher's ?participant= test goes nowhere).
    urls: Mapping[str, str] = field(default_factory=dict)
    # The platform's own placeholders: name -> the PLACEHOLDERS entry whose value it takes.
    aliases: Mapping[str, str] = field(default_factory=dict)
    required: tuple[str, ...] = ()  # outcomes whose URL the study file must give
    # Placeholders an outcome's URL must hold (one of them), and why: SONA credits only the
    # survey code its credit URL brings back.
    carries: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    carries_why: str = ""


PLATFORMS = {
    "prolific": Platform("Prolific: one code per outcome, entered in Prolific once",
                         "PROLIFIC_PID", "shared",
                         urls={outcome: PROLIFIC_COMPLETE for outcome in URL_OUTCOMES}),
    # SONA's link brings its survey code as ?id=%SURVEY_CODE%; the study's credit-granting
    # URL (webstudy_credit.aspx?...&survey_code=XXXX) takes it back as {survey_code}.
    "sona": Platform("SONA Systems: credit granted by redirecting to the study's credit URL",
                     "id", "unique", aliases={"survey_code": "participant"},
                     required=("completed",), carries={"completed": ("survey_code", "participant")},
                     carries_why="SONA shows the credit URL with survey_code=XXXX, which "
                                 "grants credit to nobody: write survey_code={survey_code}"),
    "generic": Platform("Any pool (CrowdWorks, Lancers, MTurk, the lab's own): each "
                        "participant's own code, and a return URL where given",
                        "participant", "unique"),
}
DEFAULT_PLATFORM = "prolific"


def url_key(outcome: str) -> str:
    """The study file's key of ``outcome``'s return URL (``completed_url``)."""
    return f"{outcome}_url"


def outcome_of(status: str) -> str | None:
    return next((outcome for outcome, statuses in URL_OUTCOMES.items() if status in statuses),
                None)


def url_problem(url: str, platform: Platform, outcome: str) -> str | None:
    """What is wrong with ``outcome``'s return URL for ``platform`` ("expected ..., got
    ..."), or None."""
    known = [*PLACEHOLDERS, *platform.aliases]
    if len(url) > MAX_URL_CHARS:
        return f"expected a URL of at most {MAX_URL_CHARS} characters, got {len(url)}"
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in
                  Formatter().parse(url) if name is not None]
    except ValueError as error:  # a lone { or }
        return f"expected placeholders written {{name}} (a brace alone is not one): {error}"
    for name, spec, conversion in fields:
        if name not in known or spec or conversion:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {{{close[0]}}}?)" if close else ""
            return (f"unknown placeholder {{{name}}}{hint}; expected "
                    f"{', '.join('{%s}' % k for k in known)}")
    needed = platform.carries.get(outcome, ())
    if needed and not {name for name, _, _ in fields} & set(needed):
        return (f"expected {' or '.join('{%s}' % n for n in needed)} in the URL "
                f"({platform.carries_why}), got {url[:120]!r}")
    raw = urlsplit(url)
    if "{" in raw.scheme + raw.netloc:  # the participant's id would choose the host
        return (f"expected placeholders in the path or query only, not in the address's "
                f"host, got {raw.netloc[:80]!r}")
    parts = urlsplit(fill(url, platform, {k: "x" for k in PLACEHOLDERS}))
    local = parts.scheme == "http" and parts.hostname in ("localhost", "127.0.0.1")
    if not (parts.scheme == "https" and parts.hostname) and not local:
        return (f"expected an https:// address (http:// only for localhost, to test), got "
                f"{url[:80]!r}")
    return None


def fill(url: str, platform: Platform, values: Mapping[str, str]) -> str:
    """``url`` with its placeholders replaced by ``values`` (by PLACEHOLDERS), URL-encoded."""
    encoded = {name: quote(str(value), safe="") for name, value in values.items()}
    encoded.update({alias: encoded[name] for alias, name in platform.aliases.items()})
    return url.format_map(encoded)
