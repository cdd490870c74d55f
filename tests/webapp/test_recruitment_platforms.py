"""Recruitment beyond Prolific (issue 28): a study file's platform decides where the id
arrives, which code a participant gets and where each ending sends them; codes are checked
against a platform's list from the command line and the export."""
import csv
import io
import re
from pathlib import Path

import pytest

from experiments import study_file
from tests.webapp.test_api import preload, run_all
from webapp.participant import sessions
from webapp.researcher import exports, lifecycle, studies

SONA_CREDIT = ("https://uni.sona-systems.com/webstudy_credit.aspx?experiment_id=12&"
               "credit_token=0a1b&survey_code={survey_code}")
ROOT = Path(__file__).resolve().parents[2]


def _open(app, slug, recruitment):
    source = ('[study]\ndesign = "arrow-of-time"\nstimulus_set = "tiny"\n'
              '[recruitment]\n' + recruitment)
    with app.app_context():
        studies.create_study_from_config(slug, study_file.loads(source))
        lifecycle.transition(slug, "open")


def _session(client, slug, **query):
    response = client.get(f"/p/{slug}", query_string=query)
    assert response.status_code == 303, response.get_data(as_text=True)
    api = f"/api/session/{response.headers['Location'].rsplit('/', 1)[-1]}"
    assert client.post(f"{api}/consent", json={"consent": True}).status_code == 200
    preload(client, api)
    return api


def _complete(client, app, slug, **query) -> dict:
    api = _session(client, slug, **query)
    run_all(client, app, api)
    done = client.post(f"{api}/complete")
    assert done.status_code == 200
    return done.json


@pytest.fixture
def tiny(factory):
    factory.aot_study()  # the tiny set and the catch set (and a Prolific study "study")


@pytest.mark.usefixtures("person_pace")
def test_sona_brings_the_id_as_id_and_grants_credit_with_each_participants_own_code(
        app, client, runner, tiny):
    _open(app, "sona", f'platform = "sona"\ncompleted_url = "{SONA_CREDIT}"\n')
    links = runner.invoke(args=["study", "links", "sona"]).output
    assert "/p/sona?id=%SURVEY_CODE%" in links and "Prolific link" not in links
    assert "each participant gets their own; check the ones submitted with `manage.py " \
        "study codes sona FILE`" in " ".join(links.split())
    first = _complete(client, app, "sona", id="48213")
    second = _complete(client, app, "sona", id="48214")
    assert first["status"] == second["status"] == "completed"
    assert re.fullmatch(r"[A-Z2-7]{10}", first["completion_code"])
    assert first["completion_code"] != second["completion_code"]
    with app.app_context():
        assert first["completion_code"] not in sessions.completion_codes("sona").values()
    assert first["redirect_url"] == SONA_CREDIT.replace("{survey_code}", "48213")
    # An outcome without a URL of the study's shows the code and sends nobody anywhere.
    declined = client.post(f"{_session_without_consent(client, 'sona', id='48215')}/consent",
                           json={"consent": False}).json
    assert declined["completion_code"] and declined["redirect_url"] is None


def _session_without_consent(client, slug, **query):
    response = client.get(f"/p/{slug}", query_string=query)
    return f"/api/session/{response.headers['Location'].rsplit('/', 1)[-1]}"


@pytest.mark.usefixtures("person_pace")
def test_prolific_keeps_one_shared_code_per_outcome_on_app_prolific_com(app, client, tiny):
    done = [_complete(client, app, "study", PROLIFIC_PID=pid) for pid in ("P1", "P2")]
    with app.app_context():
        shared = sessions.completion_codes("study")["completed"]
    assert [d["completion_code"] for d in done] == [shared, shared]
    assert done[0]["redirect_url"] == \
        f"https://app.prolific.com/submissions/complete?cc={shared}"


def test_the_old_prolific_domain_is_nowhere():
    # Prolific's completion URL on the .co domain fails; app.prolific.com is the one.
    old = re.compile(r"prolific\.co(?![a-z])")
    places = [ROOT / name for name in ("webapp", "experiments", "static/js", "templates",
                                       "docs", "README.md")]
    found = [str(path.relative_to(ROOT)) for place in places
             for path in ([place] if place.is_file() else place.rglob("*"))
             if path.is_file() and path.suffix in (".py", ".js", ".html", ".md", ".toml")
             and old.search(path.read_text(encoding="utf-8"))]
    assert found == []



@pytest.mark.parametrize("pasted", ["survey_code=XXXX", "survey_code=%SURVEY_CODE%", ""])
def test_a_sona_credit_url_that_brings_no_survey_code_back_is_refused(pasted):
    # Pasted as SONA shows it (survey_code=XXXX), every participant's credit went to nobody,
    # and the file was valid.
    url = SONA_CREDIT.replace("survey_code={survey_code}", pasted).rstrip("&")
    with pytest.raises(study_file.StudyFileError) as refused:
        study_file.loads('[study]\ndesign = "arrow-of-time"\nstimulus_set = "tiny"\n'
                         f'[recruitment]\nplatform = "sona"\ncompleted_url = "{url}"\n')
    assert "recruitment.completed_url" in str(refused.value)
    assert "write survey_code={survey_code}" in str(refused.value)

@pytest.mark.usefixtures("person_pace")
def test_a_pasted_list_of_codes_is_checked_from_the_cli_and_the_export(app, client, runner,
                                                                        tiny, tmp_path):
    return_url = "https://pool.example.jp/done?worker={participant}&c={code}&s={study}"
    _open(app, "crowd", f'platform = "generic"\ncompleted_url = "{return_url}"\n')
    codes = {w: _complete(client, app, "crowd", participant=w)["completion_code"]
             for w in ("cw-1", "cw-2")}
    assert _complete(client, app, "crowd", participant="cw-3")["redirect_url"] == \
        f"https://pool.example.jp/done?worker=cw-3&c={_code(app, 'crowd', 'cw-3')}&s=crowd"
    pasted = tmp_path / "codes.txt"
    pasted.write_text(f"{codes['cw-1']}\n{codes['cw-2'].lower()}, GUESSED000\n{codes['cw-1']}\n")
    result = runner.invoke(args=["study", "codes", "crowd", str(pasted)])
    lines = result.output.splitlines()
    assert result.exit_code == 1, result.output
    assert lines[:4] == [f"{codes['cw-1']}\tvalid\tparticipant cw-1, session 1, completed",
                         f"{codes['cw-2'].lower()}\tvalid\tparticipant cw-2, session 1, "
                         "completed",
                         "GUESSED000\tNOT VALID\tnot a code of this study",
                         f"{codes['cw-1']}\tNOT VALID\tparticipant cw-1, session 1, completed; "
                         "submitted more than once"]
    assert lines[-1] == "2 of 4 code(s) valid for 'crowd'."
    with app.app_context():
        rows = list(csv.DictReader(io.StringIO(
            exports.build_export("crowd")["participants.csv"].decode())))
    assert {r["subject_id"]: r["completion_code"] for r in rows if r["subject_id"] != "cw-3"} \
        == codes


def _code(app, slug, participant):
    from sqlalchemy import select

    from webapp.extensions import db
    from webapp.models import Session, Subject

    with app.app_context():
        session_id = db.session.scalar(select(Session.id).join(Session.subject).where(
            Subject.external_id == participant))
        return sessions.participant_code(slug, session_id, "completed")


@pytest.mark.usefixtures("person_pace")
def test_each_session_of_a_multi_day_study_has_its_own_shared_codes(app, client, runner, tiny):
    with app.app_context():
        first, second = (sessions.completion_codes("study", n) for n in (1, 2))
    assert set(first.values()).isdisjoint(second.values())
    links = runner.invoke(args=["study", "links", "study"]).output
    assert f"Completion codes (session 1): completed={first['completed']}" in links
    assert f"Completion codes (session 2): completed={second['completed']}" in links


@pytest.mark.parametrize(("recruitment", "problem"), [
    ('platform = "sona"\n', "5: recruitment.platform: expected recruitment.completed_url too"),
    ('platform = "mturk"\n', "5: recruitment.platform: expected one of prolific, sona, generic"),
    ('completed_url = "http://pool.example/{code}"\n',
     "5: recruitment.completed_url: expected an https:// address (http:// only for localhost, "
     "to test)"),
    ('completed_url = "https://pool.example/{worker}"\n',
     "5: recruitment.completed_url: unknown placeholder {worker}; expected {participant}, "
     "{code}, {study}, {session}"),
    ('platform = "sona"\ncompleted_url = "https://x.example/?s={surveycode}"\n',
     "6: recruitment.completed_url: unknown placeholder {surveycode} (did you mean "
     "{survey_code}?)"),
    ('ended_early_url = "https://x.example/{code"\n',
     "5: recruitment.ended_early_url: expected placeholders written {name}"),
    ('returned_url = "https://x.example/"\n', "5: recruitment.returned_url: unknown key"),
    # The id must not choose the host: ?participant=evil.example sent people there.
    ('completed_url = "https://{participant}/done"\n',
     "5: recruitment.completed_url: expected placeholders in the path or query only"),
    ('completed_url = "https://lab.example@{participant}/x"\n',
     "5: recruitment.completed_url: expected placeholders in the path or query only"),
])
def test_return_urls_are_checked_with_line_and_field(recruitment, problem):
    source = '[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n[recruitment]\n' + recruitment
    problems = [str(p) for p in study_file.check(source)[1]]
    assert len(problems) == 1 and problems[0].startswith(f"study.toml:{problem}"), problems


@pytest.mark.usefixtures("person_pace")
def test_a_session_keeps_the_codes_of_the_version_it_ran(app, client, runner, tiny, tmp_path):
    _open(app, "moved", 'platform = "prolific"\n')
    on_prolific = _complete(client, app, "moved", PROLIFIC_PID="P1")["completion_code"]
    with app.app_context():  # the lab moves the running study to its own pool: version 2
        lifecycle.update_study("moved", study_file.loads(
            '[study]\ndesign = "arrow-of-time"\nstimulus_set = "tiny"\n'
            '[recruitment]\nplatform = "generic"\n'))
        assert on_prolific == sessions.completion_codes("moved")["completed"]
    own = _complete(client, app, "moved", participant="cw-1")["completion_code"]
    assert own != on_prolific and len(own) == 10
    pasted = tmp_path / "codes.txt"
    pasted.write_text(f"{on_prolific} {own}")
    result = runner.invoke(args=["study", "codes", "moved", str(pasted)])
    assert result.exit_code == 0, result.output
    with app.app_context():
        rows = list(csv.DictReader(io.StringIO(
            exports.build_export("moved")["participants.csv"].decode())))
    assert {r["subject_id"]: r["completion_code"] for r in rows} == {"P1": on_prolific,
                                                                   "cw-1": own}


@pytest.mark.usefixtures("person_pace")
def test_the_study_page_checks_a_pasted_list_of_codes(app, client, logged_in, tiny):
    _open(app, "crowd", 'platform = "generic"\n')
    with app.app_context():
        from webapp.models import access

        access.share(studies.require_study("crowd"), "ada", "editor")
    own = _complete(client, app, "crowd", participant="cw-1")["completion_code"]
    page = client.post("/researcher/studies/crowd/codes",
                       data={"codes": f"{own}\nGUESSED000"}).get_data(as_text=True)
    table = page[page.index('<table id="code-check">'):]
    assert "1 of 2 code(s) valid" in table
    assert re.search(rf"<code>{own}</code></td><td>yes</td><td>cw-1</td><td>1</td>"
                     r"<td>completed</td>", table), table
    assert "<code>GUESSED000</code></td><td>NO</td>" in table
    assert "not a code of this study" in table


@pytest.mark.usefixtures("person_pace")
def test_a_code_of_a_session_that_did_not_complete_is_said_to_be_one(app, client, runner, tiny,
                                                                    tmp_path):
    """Declining consent ends with a code too: "2 of 2 valid" read as "pay both" for a worker
    who declined at once (outside review). The summary names the outcomes to pay by."""
    _open(app, "crowd", 'platform = "generic"\n')
    done = _complete(client, app, "crowd", participant="cw-1")["completion_code"]
    api = _session_without_consent(client, "crowd", participant="cw-9")
    declined = client.post(f"{api}/consent", json={"consent": False}).json["completion_code"]
    pasted = tmp_path / "codes.txt"
    pasted.write_text(f"{done}\n{declined}\n")
    result = runner.invoke(args=["study", "codes", "crowd", str(pasted)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1] == f"{declined}\tvalid\tparticipant cw-9, session 1, " \
        "no_consent"
    assert result.output.splitlines()[-1] == ("2 of 2 code(s) valid for 'crowd'. Of these, 1 "
                                              "ended without completing (no_consent: 1): pay by "
                                              "the outcome.")


def test_the_study_page_shows_the_controls_of_the_studys_platform(app, client, logged_in, tiny):
    """Prolific's URL, approve/reject list, next-session allowlist and panel column on a
    Prolific study only; a SONA or generic study shows its own link and return URLs."""
    from html import unescape

    from webapp.models import access

    _open(app, "on-prolific", 'platform = "prolific"\n')
    _open(app, "sona", f'platform = "sona"\ncompleted_url = "{SONA_CREDIT}"\n')
    _open(app, "crowd", 'platform = "generic"\n')
    with app.app_context():
        for slug in ("on-prolific", "sona", "crowd"):
            access.share(studies.require_study(slug), "ada", "editor")
    for slug, query in (("on-prolific", {"PROLIFIC_PID": "P1"}), ("sona", {"id": "48213"}),
                        ("crowd", {"participant": "cw-1"})):
        _session(client, slug, **query)  # a row in the participants table
    prolific_only = ('id="prolific-link"', 'id="prolific-decisions-link"',
                     'id="next-session-allowlist-link"', ">Prolific</th>")

    def page(slug):
        html = logged_in.get(f"/researcher/studies/{slug}").get_data(as_text=True)
        assert 'id="next-session-times-link"' in html  # a two-session design, any platform
        return unescape(html)

    on_prolific = page("on-prolific")
    assert all(control in on_prolific for control in prolific_only)
    assert "{{%PROLIFIC_PID%}}" in on_prolific and 'id="platform-link"' not in on_prolific
    for slug in ("sona", "crowd"):
        html = page(slug)
        assert [c for c in prolific_only if c in html] == [], slug
        panel = logged_in.get(f"/researcher/studies/{slug}/panel").get_data(as_text=True)
        assert 'class="prolific"' not in panel and ">Prolific</th>" not in panel
    sona = page("sona")
    assert re.search(r'id="platform-link">http://[^<]+/p/sona\?id=%SURVEY_CODE%<', sona)
    assert f"completed <code>{SONA_CREDIT}</code>" in sona
    crowd = page("crowd")
    assert re.search(r'id="platform-link">http://[^<]+/p/crowd\?participant=ID<', crowd)
    assert "none: participants are shown their code" in crowd
    # What becomes of an exclusion's reason is said for the study's own platform.
    assert "reason is sent to Prolific with the rejection" in on_prolific
    for html, platform in ((sona, "SONA"), (crowd, "your platform")):
        assert "Prolific with the rejection" not in html
        assert f"nothing is sent to {platform}: grant or refuse credit there" in html
