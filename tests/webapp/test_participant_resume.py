"""Resuming needs the first browser's resume key: an id alone opens nobody's session.

Each test client is one browser with its own cookies: the participant's ``browser``, and
``other`` (another browser, someone who knows the id, or the participant after clearing
their cookies)."""
import hashlib
import re
from datetime import timedelta

import pytest
from sqlalchemy import select

from experiments.texts import defaults
from tests.factories import RESEARCHER_PASSWORD, Factory
from webapp import create_app
from webapp.extensions import db
from webapp.models import ResumeLink, Session, Subject
from webapp.participant import resume
from webapp.participant.sessions import now


@pytest.fixture
def study(factory):
    factory.aot_study()  # two sessions, a day apart
    return "study"


DEVICE = {"user_agent": "Mozilla/5.0", "screen_w": 1920, "screen_h": 1080, "window_w": 1900,
          "window_h": 1000, "refresh_hz": 60.0, "device_pixel_ratio": 1.0, "touch": False,
          "video_check_ok": True}


def enter(browser, **params):
    return browser.get("/p/study", query_string=params)


def token_of(response):
    assert response.status_code == 303, response.data
    return response.headers["Location"].rsplit("/", 1)[-1].split("?")[0]


def opened(browser, response, tab="tab-1"):
    """The session a runner page has opened (its tab claimed it, as runner.js does first)."""
    token = token_of(response)
    assert browser.post(f"/api/session/{token}/claim", json={"client": tab}).status_code == 204
    return token


def session_row(app, token):
    with app.app_context():
        row = db.session.scalar(select(Session).where(Session.token == token))
        return {"status": row.status, "device_info": row.device_info,
                "active_client": row.active_client}


def session_id(app, token):
    with app.app_context():
        return db.session.scalar(select(Session.id).where(Session.token == token))


def assert_sent_elsewhere(response, token, lang="en"):
    """The page for a known id without its key: says where to go, shows nothing of the session."""
    html = response.get_data(as_text=True)
    assert response.status_code == 403 and "Location" not in response.headers
    assert token not in html and "/run/" not in html and "/api/" not in html
    assert defaults(lang)["resume_elsewhere_title"] in html
    assert resume.COOKIE not in response.headers.get("Set-Cookie", "")


@pytest.mark.parametrize("link", [
    {"participant": "P01"},
    {"PROLIFIC_PID": "5f0c1d2e3b4a59687766aabb", "STUDY_ID": "s1", "SESSION_ID": "x1"},
])
def test_an_id_alone_neither_opens_nor_changes_someone_elses_session(app, study, link):
    browser, other = app.test_client(), app.test_client()
    token = opened(browser, enter(browser, **link), "victim-tab")
    before = session_row(app, token)
    # The bare link's form sends the same query; ?lang= would have changed the language.
    for attempt in (link, {**link, "lang": "de"}, {**link, "STUDY_ID": "other"}):
        assert_sent_elsewhere(enter(other, **attempt), token)
    assert session_row(app, token) == before
    # The participant's own browser still resumes, in the same session.
    assert token_of(enter(browser, **link)) == token


def test_every_outcome_of_a_known_id_needs_the_key(app, study):
    """Finished, waiting for session 2 or screened out: another browser learns none of it."""
    browser, other = app.test_client(), app.test_client()
    tokens = {pid: opened(browser, enter(browser, participant=pid)) for pid in ("done", "waits")}
    tokens["out"] = token_of(enter(browser, participant="out"))  # screened out before the claim
    assert browser.post(f"/api/session/{tokens['out']}/screen-out",
                        json={"reasons": ["device"]}).status_code == 200
    with app.app_context():
        for pid, status in (("done", "no_consent"), ("waits", "completed")):
            row = db.session.scalar(select(Session).where(Session.token == tokens[pid]))
            row.status, row.completed_at = status, now()
        db.session.commit()
    for pid, token in tokens.items():
        assert_sent_elsewhere(enter(other, participant=pid), token)
        assert enter(browser, participant=pid).status_code == 200  # done, wait, screened out


def test_the_resume_cookie_is_private_to_the_study_and_only_its_hash_is_stored(app, study):
    browser = app.test_client()
    response = enter(browser, participant="p-1")
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith(f"{resume.COOKIE}=") and "; Path=/p/study" in cookie
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    key = cookie.split(";")[0].split("=", 1)[1]
    with app.app_context():
        stored = db.session.scalar(select(Subject.resume_key_hash))
    assert stored == hashlib.sha256(key.encode()).hexdigest() and key not in stored
    # Over https the cookie is Secure as well.
    secure = app.test_client().get("/p/study", query_string={"participant": "p-2"},
                                   base_url="https://localhost")
    assert "Secure" in secure.headers["Set-Cookie"]


def test_a_link_scanners_visit_does_not_take_the_participants_place(app, study):
    """A mail scanner or link preview fetches a participant's link (no runner page ever
    opens): the participant's own browser then takes the session, and from the moment its
    runner opened it, the scanner is sent elsewhere like anyone."""
    scanner, browser = app.test_client(), app.test_client()
    fetched = token_of(enter(scanner, participant="mailed-1"))
    token = opened(browser, enter(browser, participant="mailed-1"))
    assert scanner.get(f"/api/session/{fetched}").status_code == 404
    assert_sent_elsewhere(enter(scanner, participant="mailed-1"), token)
    assert token_of(enter(browser, participant="mailed-1")) == token


def test_a_session_handed_to_the_next_browser_is_lost_to_whoever_entered_before(app, study):
    """Someone enters with a participant's id before they do and keeps the link's answer
    without opening it: the participant's own entry then takes the session, and the earlier
    token opens nothing (it would read, answer and take over the participant's session)."""
    attacker, browser = app.test_client(), app.test_client()
    early = token_of(enter(attacker, participant="P01"))
    assert attacker.post(f"/api/session/{early}/device", json=DEVICE).status_code == 204
    token = opened(browser, enter(browser, participant="P01"))
    assert token != early
    assert attacker.get(f"/api/session/{early}").status_code == 404
    assert attacker.post(f"/api/session/{early}/consent", json={"consent": False}).status_code \
        == 404
    assert attacker.post(f"/api/session/{early}/claim", json={"client": "x"}).status_code == 404
    assert session_row(app, token) == {"status": "started", "device_info": {},
                                       "active_client": "tab-1"}
    assert_sent_elsewhere(enter(attacker, participant="P01"), token)


def test_a_browser_that_read_the_session_unopened_loses_it_to_the_tab_that_opens_it(app, study):
    """Another browser's entry finds the participant's session not yet opened, and the
    participant's runner claims it before that entry writes: the session stays theirs."""
    from webapp.models import Study
    from webapp.participant import store

    browser = app.test_client()
    token = token_of(enter(browser, participant="P01"))
    with app.app_context(), db.engine.connect() as connection:
        study_id = db.session.scalar(select(Study.id).where(Study.slug == study))
        seen = store.last_session(connection, study_id, "P01")
        assert resume.unopened(seen)
        assert browser.post(f"/api/session/{token}/claim", json={"client": "t"}).status_code \
            == 204
        assert resume.hand_over(connection, seen, None) is None
    assert session_row(app, token)["active_client"] == "t"
    assert token_of(enter(browser, participant="P01")) == token


def test_one_browser_keeps_the_keys_of_several_participants(app, study):
    """A lab computer: several participants of one study enter on it, each resumes there."""
    lab = app.test_client()
    tokens = {pid: token_of(enter(lab, participant=pid)) for pid in ("L1", "L2", "L3")}
    for pid, token in tokens.items():
        assert token_of(enter(lab, participant=pid)) == token


def test_session_two_opens_in_the_same_browser_and_not_in_another(app, study):
    browser, other = app.test_client(), app.test_client()
    token = token_of(enter(browser, participant="p-1"))
    with app.app_context():
        row = db.session.scalar(select(Session).where(Session.token == token))
        row.status, row.completed_at = "completed", now() - timedelta(hours=21)
        db.session.commit()
    assert_sent_elsewhere(enter(other, participant="p-1"), token)
    second = token_of(enter(browser, participant="p-1"))
    assert second != token and session_row(app, second)["status"] == "started"


def _limited_app(tmp_path, **limits):
    app = create_app({"TESTING": True, "SECRET_KEY": "test-secret",
                      "INSTANCE_PATH": str(tmp_path / "inst"),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'limits.db'}",
                      # the new participants all come from the test client's one address
                      "NEW_SESSIONS_PER_ADDRESS_PER_STUDY": "1000 per hour", **limits})
    with app.app_context():
        db.create_all()
    Factory(app).aot_study()
    return app


def test_entries_of_known_ids_without_their_key_are_throttled(tmp_path):
    app = _limited_app(tmp_path, RETURNING_ENTRIES_PER_ADDRESS="3 per hour")
    browser = app.test_client()
    tokens = [opened(browser, enter(browser, participant=f"p{n}")) for n in range(5)]
    codes = [enter(app.test_client(), participant=f"p{n}").status_code for n in range(5)]
    assert codes == [403] * 3 + [429] * 2
    busy = enter(app.test_client(), participant="p0")
    assert busy.headers["Retry-After"] and tokens[0] not in busy.get_data(as_text=True)
    # Participants in their own browser are never counted, nor refused.
    assert [token_of(enter(browser, participant=f"p{n}")) for n in range(5)] == tokens
    other_address = app.test_client().get("/p/study", query_string={"participant": "p0"},
                                          environ_base={"REMOTE_ADDR": "10.0.0.9"})
    assert other_address.status_code == 403
    with app.app_context():
        db.engine.dispose()


def test_the_limit_per_study_holds_across_addresses(tmp_path):
    app = _limited_app(tmp_path, RETURNING_ENTRIES_PER_STUDY="2 per hour")
    first = app.test_client()
    opened(first, enter(first, participant="p0"))
    codes = [app.test_client().get("/p/study", query_string={"participant": "p0"},
                                   environ_base={"REMOTE_ADDR": f"10.0.0.{n}"}).status_code
             for n in range(4)]
    assert codes == [403, 403, 429, 429]
    with app.app_context():
        db.engine.dispose()


# --- the researcher's single-use resume link -----------------------------------------------

@pytest.fixture
def team(app, study, factory, researcher):
    """ada owns "study"; eddie edits it, vic views it."""
    from webapp.models import Study, access

    with app.app_context():
        row = db.session.scalar(select(Study).where(Study.slug == "study"))
        for name, role in (("ada", "owner"), ("eddie", "editor"), ("vic", "viewer")):
            if name != "ada":
                factory.researcher(name)
            access.share(row, name, role)
        db.session.commit()


def signed_in(app, username):
    client = app.test_client()
    assert client.post("/auth/login", data={"username": username,
                                            "password": RESEARCHER_PASSWORD}).status_code == 302
    return client


def issue(researcher, participant="p-1"):
    return researcher.post("/researcher/studies/study/resume-links",
                           data={"participant": participant})


def issued_code(response):
    assert response.status_code == 200, response.data
    found = re.search(r'id="issued-resume-link">[^<]*\?resume=([A-Za-z0-9_-]+)<',
                      response.get_data(as_text=True))
    return found.group(1)


def test_a_researchers_resume_link_moves_the_participant_to_a_new_browser_once(app, team):
    """Day 1 on the laptop, day 2 on another computer: the researcher's link opens the same
    participant there, once; the link is audited and its code is not stored."""
    laptop, desktop, stranger = app.test_client(), app.test_client(), app.test_client()
    token = opened(laptop, enter(laptop, participant="p-1"))
    row = session_id(app, token)
    assert_sent_elsewhere(enter(desktop, participant="p-1"), token)
    code = issued_code(issue(signed_in(app, "eddie")))
    # Opening the link (as a mail scanner would) does not use it: a button does.
    for _ in range(2):
        page = desktop.get("/p/study", query_string={"resume": code})
        assert page.status_code == 200 and b'id="resume-continue"' in page.data
    used = desktop.post("/p/study", data={"resume": code})
    assert used.status_code == 303 and resume.COOKIE in used.headers["Set-Cookie"]
    moved = token_of(desktop.get(used.headers["Location"]))
    assert session_id(app, moved) == row and session_id(app, token) is None  # the session ...
    assert token_of(enter(desktop, participant="p-1")) == moved  # ... under a new token
    # Single use; the laptop's key is replaced, and its tab or history opens nothing.
    again = stranger.post("/p/study", data={"resume": code})
    assert again.status_code == 404 and defaults("en")["resume_link_invalid"] in again.get_data(
        as_text=True)
    assert resume.COOKIE not in again.headers.get("Set-Cookie", "")
    assert_sent_elsewhere(enter(laptop, participant="p-1"), moved)
    assert laptop.get(f"/api/session/{token}").status_code == 404
    assert laptop.post(f"/api/session/{token}/claim", json={"client": "t"}).status_code == 404
    with app.app_context():
        link = db.session.scalars(select(ResumeLink)).one()
        assert link.issued_by == "eddie" and link.used_at is not None
        assert link.code_hash == hashlib.sha256(code.encode()).hexdigest()
    study_page = signed_in(app, "ada").get("/researcher/studies/study").get_data(as_text=True)
    assert 'id="resume-links"' in study_page and "eddie" in study_page and code not in study_page


def test_an_expired_or_foreign_link_opens_nothing(app, team):
    browser, other = app.test_client(), app.test_client()
    token = opened(browser, enter(browser, participant="p-1"))
    code = issued_code(issue(signed_in(app, "ada")))
    with app.app_context():
        link = db.session.scalars(select(ResumeLink)).one()
        link.expires_at = now() - timedelta(seconds=1)
        db.session.commit()
    assert other.get("/p/study", query_string={"resume": code}).status_code == 404
    assert other.post("/p/study", data={"resume": code}).status_code == 404
    assert other.post("/p/study", data={"resume": "x" * 32}).status_code == 404
    assert other.post("/p/study", data={}).status_code == 404
    assert_sent_elsewhere(enter(other, participant="p-1"), token)


def test_a_new_link_replaces_the_participants_earlier_unused_ones(app, team):
    """A researcher sends a second link (the first went to a wrong address, or was lost):
    the first no longer opens the participant's session."""
    browser, stray, participant = app.test_client(), app.test_client(), app.test_client()
    token = opened(browser, enter(browser, participant="p-1"))
    researcher = signed_in(app, "ada")
    first = issued_code(issue(researcher))
    second = issued_code(issue(researcher))
    assert stray.post("/p/study", data={"resume": first}).status_code == 404
    assert_sent_elsewhere(enter(stray, participant="p-1"), token)
    assert participant.post("/p/study", data={"resume": second}).status_code == 303


def test_only_editors_and_owners_issue_links_and_only_for_participants(app, team):
    token_of(enter(app.test_client(), participant="p-1"))
    assert issue(signed_in(app, "vic")).status_code == 403
    refused = signed_in(app, "ada")
    response = issue(refused, participant="nobody")
    assert response.status_code == 303
    assert "No participant" in refused.get(response.headers["Location"]).get_data(as_text=True)
    with app.app_context():
        assert db.session.scalars(select(ResumeLink)).all() == []


def test_the_command_line_issues_a_link_that_works(app, study):
    browser, other = app.test_client(), app.test_client()
    row = session_id(app, opened(browser, enter(browser, participant="p-1")))
    result = app.test_cli_runner().invoke(args=["study", "resume-link", "study", "p-1",
                                                "--base-url", "https://lab.example.org"])
    assert result.exit_code == 0, result.output
    link = result.stdout.strip()
    assert link.startswith("https://lab.example.org/p/study?resume=")
    used = other.post("/p/study", data={"resume": link.split("resume=")[1]})
    assert session_id(app, token_of(other.get(used.headers["Location"]))) == row
    with app.app_context():
        assert db.session.scalars(select(ResumeLink.issued_by)).one().startswith("cli:")
    missing = app.test_cli_runner().invoke(args=["study", "resume-link", "study", "nobody"])
    assert missing.exit_code != 0 and "No participant 'nobody'" in missing.output


def test_a_link_used_by_two_browsers_at_once_lets_one_in(any_db_app, factory):
    from concurrent.futures import ThreadPoolExecutor

    from webapp.researcher import studies

    factory.aot_study()
    first = any_db_app.test_client()
    row = session_id(any_db_app, opened(first, enter(first, participant="p-1")))
    with any_db_app.app_context():
        code, _ = resume.issue_link(studies.get_study("study"), "p-1", "ada")
    browsers = [any_db_app.test_client() for _ in range(6)]
    with ThreadPoolExecutor(6) as pool:
        used = list(pool.map(lambda b: b.post("/p/study", data={"resume": code}), browsers))
    assert sorted(r.status_code for r in used) == [303] + [404] * 5
    winner = browsers[[r.status_code for r in used].index(303)]
    assert session_id(any_db_app, token_of(enter(winner, participant="p-1"))) == row
    assert all(enter(b, participant="p-1").status_code == 403 for b in [first, *browsers]
               if b is not winner)


def switch(browser, token, tab="tab-1", reasons=("browser",)):
    return browser.post(f"/api/session/{token}/switch?client={tab}", json={"reasons": list(reasons)})


def test_a_browser_asked_to_switch_hands_the_same_id_to_the_next_browser(app, study):
    """Issue 28: Safari refused by the study's policy; the participant opens the same link in
    Chrome, which starts the same id afresh (new token and key): Safari's open nothing more."""
    safari, chrome, later = app.test_client(), app.test_client(), app.test_client()
    token = opened(safari, enter(safari, participant="P-switch"))
    assert safari.post(f"/api/session/{token}/device?client=tab-1", json=DEVICE).status_code == 204
    assert switch(safari, token).json == {"switch": True}
    moved = opened(chrome, enter(chrome, participant="P-switch"), "chrome-tab")
    assert moved != token
    assert safari.get(f"/api/session/{token}").status_code == 404
    row = session_row(app, moved)
    assert row["status"] == "started" and row["active_client"] == "chrome-tab"
    assert row["device_info"]["switched_from"] == [
        {"device": DEVICE, "switch": {"reasons": ["browser"], "at": row["device_info"][
            "switched_from"][0]["switch"]["at"]}}]
    # Chrome now holds the session's key: a third browser is sent back to it, and so is
    # Safari, whose key no longer opens it.
    assert_sent_elsewhere(enter(later, participant="P-switch"), moved)
    assert_sent_elsewhere(enter(safari, participant="P-switch"), moved)


def test_the_refused_browser_taking_its_session_up_again_closes_the_switch(app, study):
    """Issue 28: Safari was asked to switch, but the participant stayed (a reload: Safari's
    tab claims the session again). The session is Safari's again: Chrome entering with the
    id is sent back to it, as for any session, instead of taking it over before consent."""
    safari, chrome = app.test_client(), app.test_client()
    token = opened(safari, enter(safari, participant="P-stays"))
    assert switch(safari, token).json == {"switch": True}
    assert opened(safari, enter(safari, participant="P-stays"), "tab-2") == token
    assert_sent_elsewhere(enter(chrome, participant="P-stays"), token)
    row = session_row(app, token)
    assert row["active_client"] == "tab-2" and row["device_info"]["switch"]["closed_at"]
    assert switch(safari, token, tab="tab-2").json == {"switch": True}  # asked again: open
    moved = opened(chrome, enter(chrome, participant="P-stays"), "chrome-tab")
    assert moved != token and safari.get(f"/api/session/{token}").status_code == 404


def test_no_switch_once_consent_is_given(app, study):
    """After consent the session is the participant's (trials may follow): a switch asked for
    then changes nothing, and another browser is sent back to the first."""
    browser, other = app.test_client(), app.test_client()
    token = opened(browser, enter(browser, participant="P-consented"))
    assert browser.post(f"/api/session/{token}/consent?client=tab-1",
                        json={"consent": True}).status_code == 200
    assert switch(browser, token).json == {"switch": False}
    assert_sent_elsewhere(enter(other, participant="P-consented"), token)


@pytest.mark.parametrize("reasons, code", [(["video"], "out_of_range"), ([], "no_reason")])
def test_a_switch_names_what_a_switch_fixes(app, study, reasons, code):
    browser = app.test_client()
    token = opened(browser, enter(browser, participant="P-bad-switch"))
    response = switch(browser, token, reasons=reasons)
    assert response.status_code == 400 and response.json["error"] == code
    assert not session_row(app, token)["device_info"].get("switch")
