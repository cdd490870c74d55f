"""The participant's texts, language, screen-out and restarted trials through the session API
(webapp/participant/texts.py, api.py, sessions.screen_out)."""
import re
from pathlib import Path

import pytest
from sqlalchemy import select

from experiments.designs import STUDY_CONFIG_KEY
from experiments.texts import defaults
from tests.webapp.test_api import answer, schedule_of, start
from webapp.extensions import db
from webapp.models import Session, Study, Trial
from webapp.participant import sessions


@pytest.fixture
def study(factory):
    factory.aot_study()


def offer_languages(app, languages, slug="study"):
    with app.app_context():
        study = db.session.scalar(select(Study).where(Study.slug == slug))
        study.design_snapshot = {**study.design_snapshot,
                                 STUDY_CONFIG_KEY: {"languages": languages}}
        db.session.commit()


def test_state_carries_the_texts_in_the_study_language(app, client, study):
    offer_languages(app, ["de", "en"])
    api = start(client, consent=None)
    state = client.get(api).json
    # No ?lang= and no Accept-Language: the study's first language.
    assert state["language"] == "de"
    assert state["texts"]["consent_yes"] == defaults("de")["consent_yes"]
    assert "{duration_minutes}" not in state["texts"]["consent"]
    assert state["requirements"]["devices"] == ["desktop"]
    english = client.get(api, headers={"Accept-Language": "en-GB,en;q=0.8"}).json
    assert english["language"] == "en" and english["texts"]["consent_yes"] == "I consent"
    # ?lang= wins over the browser; a language the study does not offer is ignored.
    assert client.get(f"{api}?lang=en", headers={"Accept-Language": "de"}).json["language"] == "en"
    assert client.get(f"{api}?lang=fr").json["language"] == "de"


def test_run_page_and_closed_page_use_the_texts(app, client, study):
    offer_languages(app, ["de"])
    response = client.get("/p/study", query_string={"PROLIFIC_PID": "p-1", "lang": "de"})
    assert response.status_code == 303 and response.headers["Location"].endswith("?lang=de")
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert '<html lang="de">' in page and defaults("de")["noscript"] in page
    assert '"lang": "de"' in page
    closed = client.get("/p/nothing-here", headers={"Accept-Language": "de"}).get_data(as_text=True)
    assert defaults("de")["no_study"] in closed


def test_screen_out_ends_the_session_with_its_own_code(app, client, study):
    api = start(client, consent=None)
    answer_ = client.post(f"{api}/screen-out", json={"reasons": ["device", "browser"]})
    assert answer_.status_code == 200
    with app.app_context():
        codes = sessions.completion_codes("study")
        row = db.session.scalar(select(Session))
        assert row.status == "screened_out" and row.completed_at is not None
        assert row.device_info["screen_out"]["reasons"] == ["device", "browser"]
    assert codes["screened_out"] not in (codes["completed"], codes["no_consent"])
    assert answer_.json["status"] == "screened_out"
    assert answer_.json["completion_code"] == codes["screened_out"]
    assert answer_.json["redirect_url"].endswith(f"cc={codes['screened_out']}")
    # Ended: nothing more is taken, and coming back shows the ending again.
    assert client.post(f"{api}/consent", json={"consent": True}).status_code == 409
    assert client.get(api).json["status"] == "screened_out"


def test_screen_out_takes_only_known_reasons(client, study):
    api = start(client, consent=None)
    assert client.post(f"{api}/screen-out", json={"reasons": ["bored"]}).status_code == 400


def test_a_restarted_trial_is_recorded_in_its_row(app, client, study):
    api = start(client)
    first = schedule_of(app, api)[0]
    assert client.post(f"{api}/trials", json=answer(first, restarted=True)).status_code == 201
    with app.app_context():
        assert db.session.scalar(select(Trial.extra))["restarted"] is True


JS = Path(__file__).resolve().parents[2] / "static" / "js"
# Literals that are code, not words a participant reads: CSS selectors, DOM names, MIME types.
ALLOWED = {"frame hint", "feedback correct", "feedback incorrect", "application/json",
           "frame_order", "video-box", "key-legend", " = ", " ", "(any-pointer: fine)",
           "feedback ${kind}", 'feedback ${right ? "correct" : "incorrect"}',
           "position:fixed;left:0;top:0;font:1px/1 sans-serif;color:rgba(128,128,128,0.02);"
           "pointer-events:none;visibility:hidden;",
           # Diagnostics of the MP4 parser and decoders and HTTP errors: thrown for the console
           # and the researchers; a participant sees only the error_reload text and a code.
           "HTTP ${status}", "the clip could not be decoded", "box ${type} overruns its parent",
           "no ${path}", "sample table does not add up", "no video track", "not H.264", "no avcC",
           "stts and stsz disagree"}
_LITERAL = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`""",
                      re.S)
# Messages for developers: the console and thrown errors (never shown to a participant).
_DEVELOPER = re.compile(r"(console\.\w+|new \w*Error|throw new \w+|withTimeout)\([^()]*$")


def participant_literals(source: str) -> list[str]:
    """String literals with a space and a letter, outside comments and developer messages."""
    found = []
    for match in _LITERAL.finditer(source):
        literal = match.group(0)
        if literal.startswith(("//", "/*")):
            continue
        body = literal[1:-1]
        line_start = source.rfind("\n", 0, match.start()) + 1
        before = source[line_start:match.start()]
        if _DEVELOPER.search(before) or body in ALLOWED or body.startswith("${"):
            continue
        if re.search(r" ", body) and re.search(r"[A-Za-z]{2,}", body):
            found.append(literal)
    return found


def test_no_english_left_in_the_runner():
    """Every word a participant reads comes from the texts: no sentence in static/js."""
    offenders = {}
    for path in sorted(JS.rglob("*.js")):
        if path.name == "researcher.js":
            continue
        found = participant_literals(path.read_text("utf-8"))
        if found:
            offenders[path.relative_to(JS).as_posix()] = found
    assert not offenders, offenders


def test_the_literal_finder_finds_a_sentence():
    assert participant_literals('show("x", el("h1", {}, "Loading the next clips…"));') == [
        '"Loading the next clips…"']
    assert participant_literals('throw new Error(`unknown trial type ${t}`);') == []


def _token(response) -> str:
    assert response.status_code == 303, response.data
    return response.headers["Location"].split("?")[0].rsplit("/", 1)[-1]


def _session(app, token) -> Session:
    with app.app_context():
        return db.session.scalar(select(Session).where(Session.token == token))


def test_consent_records_the_language_and_the_text_read(app, client, study):
    """The consent record says in which language, and which wording, the participant read:
    the session's language (the link's ?lang=), not the browser's; it is exported with the
    session (participants.csv's device_info)."""
    from webapp.participant import texts
    from webapp.researcher.roster import roster_frame

    offer_languages(app, ["en", "de"])
    token = _token(client.get("/p/study?PROLIFIC_PID=p-de&lang=de"))
    english_browser = {"Accept-Language": "en-GB,en;q=0.9"}
    # The run page and the state follow the session's language, whatever the browser says.
    page = client.get(f"/run/{token}", headers=english_browser).get_data(as_text=True)
    assert '<html lang="de">' in page and '"lang": "de"' in page
    api = f"/api/session/{token}"
    assert client.get(api, headers=english_browser).json["language"] == "de"
    assert client.post(f"{api}/consent", json={"consent": True},
                       headers=english_browser).status_code == 200
    row = _session(app, token)
    consent = row.device_info["consent"]
    assert consent["given"] is True and consent["language"] == "de"
    assert consent["study_version"] == row.study_version
    with app.app_context():
        german, english = (texts.consent_version(sessions.session_by_token(
            db.session.connection(), token), language) for language in ("de", "en"))
        exported = roster_frame("study").set_index("session_id").loc[row.id, "device_info"]
    assert consent["text_version"] == german != english and len(german) == 16
    assert exported["consent"]["language"] == "de"
    assert exported["consent"]["text_version"] == german


def test_the_next_session_keeps_the_language_of_the_first(app, client, study):
    """Session 2 opens in the language of session 1 (the browser's does not matter), unless
    its link says ?lang=."""
    from datetime import timedelta

    offer_languages(app, ["en", "de"])
    english_browser = {"Accept-Language": "en"}
    first = _token(client.get("/p/study?participant=p-2&lang=de"))
    client.post(f"/api/session/{first}/consent", json={"consent": True})
    with app.app_context():
        row = db.session.scalar(select(Session).where(Session.token == first))
        row.status, row.completed_at = "completed", sessions.now() - timedelta(days=2)
        db.session.commit()
    second = _token(client.get("/p/study?participant=p-2", headers=english_browser))
    assert second != first and _session(app, second).device_info["language"] == "de"
    page = client.get(f"/run/{second}", headers=english_browser).get_data(as_text=True)
    assert '<html lang="de">' in page
    assert client.get(f"/api/session/{second}", headers=english_browser).json["language"] == "de"
    # Coming back with ?lang=en: from now on the session is English, and so is its consent.
    assert _token(client.get("/p/study?participant=p-2&lang=en")) == second
    assert client.get(f"/api/session/{second}").json["language"] == "en"
    client.post(f"/api/session/{second}/consent", json={"consent": True}, headers={
        "Accept-Language": "de"})
    assert _session(app, second).device_info["consent"]["language"] == "en"
