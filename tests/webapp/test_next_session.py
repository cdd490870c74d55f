"""The end of a session with another to come: when it opens, its calendar file (.ics) and
the wait page (webapp/participant/calendar.py, api.py calendar_file, views.py)."""
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

from experiments.designs import ARROW_OF_TIME, STUDY_CONFIG_KEY
from experiments.texts import defaults
from tests.webapp.test_api import answer, run_all, schedule_of, start
from webapp.extensions import db
from webapp.models import Session, Study

GAP = timedelta(hours=ARROW_OF_TIME.session_gap_hours)


@pytest.fixture
def study(factory):
    factory.aot_study()


def complete(client, app, participant, correct_catch=True) -> str:
    """Session 1 of ``participant`` run and completed; its API path."""
    api = start(client, participant)
    for trial in schedule_of(app, api):
        right = correct_catch or trial["trial_type"] != "catch"
        assert client.post(f"{api}/trials", json=answer(trial, right)).status_code == 201
    assert client.post(f"{api}/complete").status_code == 200
    return api


def row(app, api) -> Session:
    with app.app_context():
        return db.session.scalar(select(Session).where(Session.token == api.rsplit("/", 1)[-1]))


def move_completion(app, api, completed_at: datetime) -> None:
    with app.app_context():
        session = db.session.scalar(select(Session).where(Session.token == api.rsplit("/", 1)[-1]))
        session.completed_at = completed_at
        db.session.commit()


# --- a tiny RFC 5545 reader, written from the RFC, not from the code under test -----------

def read_ics(data: bytes) -> list[tuple[str, dict, str]]:
    """(name, parameters, value) of every content line, unfolded (RFC 5545 3.1)."""
    text = data.decode("utf-8")
    assert "\n" not in text.replace("\r\n", ""), "lines must end in CRLF"
    assert text.endswith("\r\n")
    physical = text.split("\r\n")[:-1]
    for line in physical:
        assert len(line.encode()) <= 75, f"line longer than 75 octets: {line!r}"
    logical = []
    for line in physical:
        if line.startswith((" ", "\t")):
            logical[-1] += line[1:]
        else:
            logical.append(line)
    out = []
    for line in logical:
        head, _, value = line.partition(":")
        name, *params = head.split(";")
        out.append((name.upper(), dict(p.split("=", 1) for p in params), value))
    return out


def unescape(value: str) -> str:
    """An RFC 5545 TEXT value (3.3.11) as plain text."""
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            out.append({"n": "\n", "N": "\n"}.get(value[i + 1], value[i + 1]))
            i += 2
        else:
            assert value[i] not in ",;", f"unescaped {value[i]!r} in TEXT {value!r}"
            out.append(value[i])
            i += 1
    return "".join(out)


def event(data: bytes) -> dict[str, str]:
    lines = read_ics(data)
    names = [name for name, _, _ in lines]
    assert names[0] == "BEGIN" and lines[0][2] == "VCALENDAR" and lines[-1][2] == "VCALENDAR"
    assert ("VERSION", {}, "2.0") in lines and "PRODID" in names
    begins = [i for i, (n, _, v) in enumerate(lines) if n == "BEGIN" and v == "VEVENT"]
    ends = [i for i, (n, _, v) in enumerate(lines) if n == "END" and v == "VEVENT"]
    assert len(begins) == len(ends) == 1
    props = {name: value for name, _, value in lines[begins[0] + 1:ends[0]]}
    assert {"UID", "DTSTAMP", "DTSTART", "SUMMARY", "DESCRIPTION"} <= set(props)
    return props


def utc_time(value: str) -> datetime:
    assert value.endswith("Z"), f"not a UTC time: {value}"  # RFC 5545 3.3.5 form #2
    return datetime.strptime(value, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)


def second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0, tzinfo=moment.tzinfo or timezone.utc)


# --- the end of session 1 --------------------------------------------------------------------

def test_completing_session_one_says_when_session_two_opens(app, client, study):
    api = start(client, "p-next")
    run_all(client, app, api)
    done = client.post(f"{api}/complete").json
    completed = row(app, api).completed_at
    assert done["status"] == "completed" and done["completion_code"]
    upcoming = done["next_session"]
    assert upcoming["session"] == 2 and upcoming["sessions"] == 2
    assert upcoming["opens_at"] == (completed + GAP).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert upcoming["calendar_url"] == f"{api}/calendar.ics"
    # Coming back to the ended session (another claim, a reload's GET) says the same.
    claimed = client.post(f"{api}/claim", json={"client": "tab"})
    assert claimed.status_code == 409 and claimed.json["next_session"] == upcoming
    assert client.get(api).json["next_session"] == upcoming
    assert client.post(f"{api}/complete").json == done


def test_failed_attention_and_the_last_session_have_no_next_session(app, client, study):
    failed = complete(client, app, "p-catch", correct_catch=False)
    assert row(app, failed).status == "failed_attention"
    assert "next_session" not in client.post(f"{failed}/complete").json
    assert client.get(f"{failed}/calendar.ics").status_code == 404
    unfinished = start(client, "p-unfinished")
    assert client.get(f"{unfinished}/calendar.ics").json["error"] == "no_next_session"
    first = complete(client, app, "p-both")
    move_completion(app, first, datetime.now(timezone.utc) - 2 * GAP)
    second_api = "/api/session/" + client.get(
        "/p/study", query_string={"PROLIFIC_PID": "p-both"}).headers["Location"].rsplit("/", 1)[-1]
    client.post(f"{second_api}/consent", json={"consent": True})
    run_all(client, app, second_api)
    last = client.post(f"{second_api}/complete").json
    assert last["status"] == "completed" and "next_session" not in last
    assert client.get(f"{second_api}/calendar.ics").status_code == 404


# --- the calendar file -----------------------------------------------------------------------

def test_the_calendar_file_starts_when_session_two_becomes_available(app, client, study):
    api = complete(client, app, "p-ics")
    response = client.get(f"{api}/calendar.ics")
    assert response.status_code == 200 and response.mimetype == "text/calendar"
    assert "attachment" in response.headers["Content-Disposition"]
    assert ".ics" in response.headers["Content-Disposition"]
    props = event(response.data)
    completed = row(app, api).completed_at
    assert utc_time(props["DTSTART"]) == second(completed + GAP)
    assert utc_time(props["DTEND"]) > utc_time(props["DTSTART"])
    assert abs(utc_time(props["DTSTAMP"]) - datetime.now(timezone.utc)) < timedelta(minutes=5)
    assert unescape(props["SUMMARY"]) == "Study session 2 of 2"
    # Re-downloading updates the same event.
    assert event(client.get(f"{api}/calendar.ics").data)["UID"] == props["UID"]

    # Session 2 opens when the file said, and stores that as its available_from. (Completion
    # is moved back so that the link opens now; the file follows the stored completion.)
    move_completion(app, api, datetime.now(timezone.utc) - GAP - timedelta(minutes=5))
    props = event(client.get(f"{api}/calendar.ics").data)
    description = unescape(props["DESCRIPTION"])
    link = props["URL"]
    assert link in description and "recruitment site" in description
    url = urlsplit(link)
    assert url.path == "/p/study" and "PROLIFIC_PID=p-ics" in url.query
    entered = client.get(f"{url.path}?{url.query}")
    assert entered.status_code == 303 and "/run/" in entered.headers["Location"]
    session_two = row(app, urlsplit(entered.headers["Location"]).path)
    assert session_two.session_number == 2
    assert second(session_two.available_from) == utc_time(props["DTSTART"])


def test_a_calendar_link_reaches_only_its_own_session(app, client, study):
    alice, bob = complete(client, app, "alice-1"), complete(client, app, "bob-2")
    move_completion(app, bob, datetime(2031, 3, 4, 5, 6, 7, tzinfo=timezone.utc))
    mine = client.get(f"{alice}/calendar.ics").data.decode()
    theirs = client.get(f"{bob}/calendar.ics").data.decode()
    assert "alice-1" in mine and "bob-2" not in mine
    assert "bob-2" in theirs and "alice-1" not in theirs
    assert utc_time(event(theirs.encode())["DTSTART"]) == datetime(2031, 3, 5, 1, 6, 7,
                                                                   tzinfo=timezone.utc)
    # The token is the credential: the file (which gets shared) never holds one.
    for api, text in ((alice, mine), (bob, theirs)):
        assert api.rsplit("/", 1)[-1] not in text.replace("\r\n ", "")
    # No query reaches another participant's session; no made-up token reaches any.
    assert client.get(f"{alice}/calendar.ics", query_string={"PROLIFIC_PID": "bob-2"}
                      ).status_code == 400
    assert client.get(f"{alice}/calendar.ics", query_string={"token": bob.rsplit("/", 1)[-1]}
                      ).status_code == 400
    assert client.get(f"{alice}x/calendar.ics").status_code == 404
    assert client.get("/api/session/" + "A" * 43 + "/calendar.ics").status_code == 404


def test_a_german_participant_gets_a_german_calendar_file(app, client, study):
    with app.app_context():
        row_ = db.session.scalar(select(Study).where(Study.slug == "study"))
        row_.design_snapshot = {**row_.design_snapshot, STUDY_CONFIG_KEY: {"languages": ["en", "de"]}}
        db.session.commit()
    api = complete(client, app, "p-de")
    for query, headers in (({"lang": "de"}, {}), ({}, {"Accept-Language": "de-AT,de;q=0.9"})):
        props = event(client.get(f"{api}/calendar.ics", query_string=query, headers=headers).data)
        summary, description = unescape(props["SUMMARY"]), unescape(props["DESCRIPTION"])
        assert summary == "Studiensitzung 2 von 2"
        assert description.startswith("Sitzung 2 von 2 der Studie")
        assert "Rekrutierungsseite" in description and "recruitment" not in description
        assert "lang=de" in props["URL"]
    english = event(client.get(f"{api}/calendar.ics").data)
    assert unescape(english["SUMMARY"]) == "Study session 2 of 2"


def test_a_study_may_word_the_calendar_itself(app, client, study):
    texts = {"en": {"calendar_summary": "Time game, part {next_session}; bring coffee, please",
                    "calendar_description": "Hi; see you, {link} \\ thanks"}}
    with app.app_context():
        row_ = db.session.scalar(select(Study).where(Study.slug == "study"))
        row_.design_snapshot = {**row_.design_snapshot, STUDY_CONFIG_KEY: {"texts": texts}}
        db.session.commit()
    props = event(client.get(f"{complete(client, app, 'p-own')}/calendar.ics").data)
    assert unescape(props["SUMMARY"]) == "Time game, part 2; bring coffee, please"
    assert unescape(props["DESCRIPTION"]).startswith("Hi; see you, http")
    assert unescape(props["DESCRIPTION"]).endswith(" \\ thanks")


def test_long_lines_fold_between_characters():
    from webapp.participant import calendar

    line = "DESCRIPTION:" + "Säße Grüße — " * 20
    folded = calendar.fold(line)
    parts = folded[:-2].split("\r\n")
    assert all(len(p.encode()) <= 75 for p in parts)
    assert "".join([parts[0], *(p[1:] for p in parts[1:])]) == line
    assert calendar.escape_text("a,b;c\\d\ne") == "a\\,b\\;c\\\\d\\ne"


# --- the wait page ---------------------------------------------------------------------------

def test_the_wait_page_gives_the_opening_time_for_the_browser_to_localise(app, client, study):
    api = complete(client, app, "p-early")
    move_completion(app, api, datetime(2035, 6, 1, 12, 30, tzinfo=timezone.utc))
    page = client.get("/p/study", query_string={"PROLIFIC_PID": "p-early"})
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert defaults("en")["wait_title"] in html
    assert '<time data-local datetime="2035-06-02T08:30:00Z">2035-06-02 08:30 UTC</time>' in html
    assert "js/wait.js" in html and 'class="runner"' in html and 'class="stage"' in html
