"""The dashboard's study form, study versions, previews and the first-run links."""
import csv
import html
import io
import re
from urllib.parse import urlsplit

from sqlalchemy import select

from experiments import study_file
from webapp.extensions import db
from webapp.models import Session
from webapp.models.study import StudyVersion
from webapp.researcher import exports, lifecycle, studies

FORM = {"slug": "pilot", "design": "arrow-of-time", "stimulus_set": "synthetic"}


def _form(logged_in, url="/researcher/studies", **values):
    page = logged_in.get("/researcher/").get_data(as_text=True)
    assert 'name="csrf_token"' in page or True
    return logged_in.post(url, data={**FORM, **values})


def test_the_form_creates_a_study_with_the_study_files_fields(app, logged_in, factory):
    factory.stimulus_set(per_category=2)  # clips for every trial the study asks for
    response = _form(logged_in, title="Pilot", blocks="2", trials_per_block="3",
                     practice_trials="2", keys="d, k", fixation_ms="400", languages="en, de",
                     places="12", catch_per_block="0")
    assert response.status_code == 303, response.get_data(as_text=True)
    with app.app_context():
        config = studies.study_config(studies.get_study("pilot"))
    design = config.design
    assert (design.main_blocks, design.max_clips, design.practice.n_trials) == (2, 6, 2)
    assert design.response_keys == ("d", "k") or list(design.response_keys) == ["d", "k"]
    assert (design.fixation_ms, config.places, config.languages) == (400, 12, ("en", "de"))


def test_a_careless_form_value_names_the_field_and_what_was_expected(app, logged_in, factory):
    factory.stimulus_set()
    response = _form(logged_in, trials_per_block="ten", keys="f, f", pass_accuracy="75")
    page = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "blocks.trials_per_block: expected a positive integer, got &#34;ten&#34;" in page
    assert "responses.keys: expected two different keys" in page
    assert "practice.pass_accuracy: expected a proportion from 0 to 1, got 75" in page
    with app.app_context():
        assert studies.get_study("pilot") is None


def test_the_form_offers_only_stimulus_sets_a_design_can_use(app, logged_in, factory):
    factory.stimulus_set()
    page = logged_in.get("/researcher/").get_data(as_text=True)
    options = re.findall(r'<option[^>]*value="([^"]+)"', page.split('id="stimulus_set"')[1]
                         .split("</select>")[0])
    assert "synthetic" in options and "catch" not in options
    response = _form(logged_in, stimulus_set="catch")
    assert response.status_code == 400
    assert "stimulus_set: expected a stimulus set that arrow-of-time can use" in \
        response.get_data(as_text=True)


def test_an_uploaded_study_file_cannot_read_a_file_on_the_server(app, logged_in, factory):
    factory.stimulus_set()
    upload = b'[study]\nlanguages = ["en"]\n[texts.en]\nconsent = {file = "/etc/passwd"}\n'
    response = logged_in.post("/researcher/studies", data={
        **FORM, "study_file": (io.BytesIO(upload), "study.toml")},
        content_type="multipart/form-data")
    page = response.get_data(as_text=True)
    assert response.status_code == 400 and "root:" not in page
    assert "study.toml:4: texts.en.consent: expected the Markdown inline" in page


def test_an_uploaded_study_files_texts_are_stored(app, logged_in, factory):
    factory.stimulus_set()
    upload = b'[texts.en]\nconsent = "Our own consent, {duration_minutes} minutes."\n'
    response = logged_in.post("/researcher/studies", data={
        **FORM, "study_file": (io.BytesIO(upload), "study.toml")},
        content_type="multipart/form-data")
    assert response.status_code == 303, response.get_data(as_text=True)
    with app.app_context():
        config = studies.study_config(studies.get_study("pilot"))
    assert config.texts["en"]["consent"].startswith("Our own consent")


LAB_FILE = """\
[study]
title = "Lab pilot"
design = "arrow-of-time"
stimulus_set = "synthetic"
languages = ["en", "de"]

[sessions]
count = 2
gap_hours = 36

[blocks]
count = 2
trials_per_block = 2
catch_per_block = 1

[practice]
trials = 3

[participants]
places = 17

[texts.en]
consent = "Our own consent, {duration_minutes} minutes."
"""


def _upload(logged_in, source, url="/researcher/studies", **values):
    return logged_in.post(url, data={**FORM, **values,
                                     "study_file": (io.BytesIO(source.encode()), "lab.toml")},
                          content_type="multipart/form-data")


def test_an_uploaded_files_settings_win_over_blank_fields(app, logged_in, factory, runner):
    factory.stimulus_set(per_category=2)  # clips for every trial the study asks for
    response = _upload(logged_in, LAB_FILE)
    assert response.status_code == 303, response.get_data(as_text=True)
    exported = runner.invoke(args=["study", "export-config", "pilot"]).output
    assert study_file.loads(exported) == study_file.loads(LAB_FILE)


def test_a_filled_in_field_overrides_the_uploaded_file_and_an_edit_keeps_it(
        app, logged_in, factory):
    factory.stimulus_set(per_category=2)  # clips for every trial the study asks for
    assert _upload(logged_in, LAB_FILE, places="9").status_code == 303
    with app.app_context():
        config = studies.study_config(studies.get_study("pilot"))
    assert (config.places, config.design.session_gap_hours) == (9, 36)
    # Editing: the form shows the study's values; those left as shown give way to the file.
    page = logged_in.get("/researcher/studies/pilot/edit").get_data(as_text=True)
    shown = dict(re.findall(r'name="(\w+)"[^>]*value="([^"]*)"', page))
    shown.pop("csrf_token", None)
    response = _upload(logged_in, LAB_FILE.replace("places = 17", "places = 21"),
                       url="/researcher/studies/pilot/edit", **{**shown, "blocks": "1"})
    assert response.status_code == 303, response.get_data(as_text=True)
    with app.app_context():
        config = studies.study_config(studies.get_study("pilot"))
    assert (config.places, config.design.main_blocks) == (21, 1)


def test_a_design_other_than_the_uploaded_files_is_an_error_naming_both(app, logged_in, factory):
    factory.stimulus_set()
    response = _upload(logged_in, LAB_FILE, design="frame-ordering")
    assert response.status_code == 400
    assert ("study.design: the form chose &#39;frame-ordering&#39;, the uploaded study file "
            "&#39;arrow-of-time&#39;") in response.get_data(as_text=True)
    with app.app_context():
        assert studies.get_study("pilot") is None


def test_every_error_of_an_uploaded_file_is_shown_as_validate_prints_it(
        app, logged_in, factory, runner, tmp_path):
    factory.stimulus_set()
    source = ('[blocks]\ncount = "three"\ncatch_per_blok = 1\n\n[timing]\nfixation_ms = -1\n'
              '\n[texts.en]\nconsent = "{code} {unknown}"\ndebrief = {file = "debrief.md"}\n')
    (tmp_path / "lab.toml").write_text(source)
    printed = runner.invoke(args=["study", "validate", str(tmp_path / "lab.toml")]).output
    expected = [line for line in printed.splitlines() if line.startswith("lab.toml:")
                and "required" not in line and "debrief" not in line]
    assert len(expected) == 5  # count, catch_per_blok, fixation_ms, {code}, {unknown}
    response = _upload(logged_in, source)
    assert response.status_code == 400
    page = html.unescape(response.get_data(as_text=True))
    for line in expected:
        assert line in page
    # A {file = ...} text would read a file on the server: refused, with its line.
    assert "lab.toml:10: texts.en.debrief: expected the Markdown inline" in page


def test_a_viewer_cannot_change_a_study(app, client, factory, logged_in):
    factory.stimulus_set()
    factory.study(slug="shared", status="draft")
    with app.app_context():
        before = studies.get_study("shared").design_snapshot["main_blocks"]
    factory.researcher("vic", role_in={"shared": "viewer"})
    client.post("/auth/logout")
    client.post("/auth/login", data={"username": "vic", "password": "correct horse battery"})
    response = client.post("/researcher/studies/shared/edit", data={**FORM, "blocks": "1"})
    assert response.status_code == 403
    with app.app_context():
        assert studies.get_study("shared").design_snapshot["main_blocks"] == before


def test_a_change_of_an_opened_study_is_a_new_version_and_sessions_record_theirs(
        app, logged_in, factory, client):
    factory.stimulus_set()
    assert _form(logged_in, blocks="4").status_code == 303
    with app.app_context():
        lifecycle.transition("pilot", "open")
    assert client.get("/p/pilot?participant=P1").status_code == 303
    response = logged_in.post("/researcher/studies/pilot/edit",
                              data={**FORM, "blocks": "2", "based_on": "1"})
    assert response.status_code == 303, response.get_data(as_text=True)
    assert client.get("/p/pilot?participant=P2").status_code == 303
    with app.app_context():
        study = studies.get_study("pilot")
        version = study.config_version
        frozen = {v.version: v.design_snapshot["main_blocks"] for v in lifecycle.versions(study)}
        ran = dict(db.session.execute(select(Session.token, Session.study_version)).all())
        participants = exports.build_export("pilot")["participants.csv"].decode()
        codebook = exports.build_export("pilot")["codebook.md"].decode()
    assert version == 2 and frozen == {1: 4, 2: 2}
    assert sorted(ran.values()) == [1, 2]
    rows = {r["subject_id"]: r["study_version"] for r in csv.DictReader(io.StringIO(participants))}
    assert rows == {"P1": "1", "P2": "2"} and "study_version" in codebook


def test_an_edit_based_on_an_old_version_is_refused(app, logged_in, factory):
    factory.stimulus_set()
    _form(logged_in)
    with app.app_context():
        lifecycle.transition("pilot", "open")
    assert logged_in.post("/researcher/studies/pilot/edit",
                          data={**FORM, "blocks": "2", "based_on": "1"}).status_code == 303
    stale = logged_in.post("/researcher/studies/pilot/edit",
                           data={**FORM, "blocks": "3", "based_on": "1"})
    assert stale.status_code == 409 and "changed meanwhile" in stale.get_data(as_text=True)


def test_an_edit_racing_an_open_never_changes_the_frozen_version(app, logged_in, factory):
    # The researcher loaded the draft's form (version 1); someone opened it before the save.
    factory.stimulus_set()
    _form(logged_in, blocks="4")
    with app.app_context():
        lifecycle.transition("pilot", "open")
    logged_in.post("/researcher/studies/pilot/edit", data={**FORM, "blocks": "1",
                                                           "based_on": "1"})
    with app.app_context():
        version = studies.get_study("pilot").config_version
        v1 = db.session.scalar(select(StudyVersion).where(StudyVersion.version == 1))
        assert v1.design_snapshot["main_blocks"] == 4 and version == 2


def test_study_create_from_on_an_existing_draft_changes_it(app, runner, factory, tmp_path):
    factory.stimulus_set()
    path = tmp_path / "s.toml"
    path.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
                    '[blocks]\ncount = 2\n')
    assert runner.invoke(args=["study", "create", "cfg", "--from", str(path)]).exit_code == 0
    runner.invoke(args=["study", "open", "cfg"])
    path.write_text(path.read_text().replace("count = 2", "count = 3"))
    result = runner.invoke(args=["study", "create", "cfg", "--from", str(path)])
    assert result.exit_code == 0 and "version 2" in result.output, result.output


def test_a_preview_never_enters_the_export_or_takes_a_place(app, logged_in, factory, client):
    factory.stimulus_set()
    _form(logged_in, places="1")
    with app.app_context():
        lifecycle.transition("pilot", "open")
    response = logged_in.post("/researcher/studies/pilot/preview", data={"mode": "manual"})
    assert response.status_code == 303 and "manual=1" in response.location
    token = urlsplit(response.location).path.rsplit("/", 1)[1]
    # The preview consents and posts a trial into the real study, as a participant would.
    state = client.get(f"/api/session/{token}").get_json()
    assert state["simulated"] is True
    client.post(f"/api/session/{token}/consent", json={"consent": True})
    assert client.get("/p/pilot?participant=P1").status_code == 303  # its place is free
    with app.app_context():
        files = exports.build_export("pilot")
    assert "preview-" not in files["participants.csv"].decode()
    assert "preview-" not in files["trials.csv"].decode()


def test_every_link_make_run_prints_works(app, runner, factory, client):
    factory.stimulus_set()
    app.config["PUBLIC_URL"] = "http://127.0.0.1:8123"
    result = runner.invoke(args=["study", "demo", "--local-admin"])
    assert result.exit_code == 0, result.output
    links = re.findall(r"https?://\S+", result.output)
    assert links and all(link.startswith("http://127.0.0.1:8123/") for link in links)
    for link in links:
        url = urlsplit(link)
        path = url.path + (f"?{url.query}" if url.query else "")
        path = path.replace("{{%PROLIFIC_PID%}}", "PID1").replace("{{%STUDY_ID%}}", "S1") \
            .replace("{{%SESSION_ID%}}", "X1")
        response = client.get(path)
        assert response.status_code in (200, 302, 303), (link, response.status_code)
        if "/p/" in path:
            assert response.status_code == 303 and "/run/" in response.location, link
    password = re.search(r"user admin, password (\S+)", result.output).group(1)
    assert client.post("/auth/login", data={"username": "admin", "password": password}
                       ).status_code == 302
    again = runner.invoke(args=["study", "demo", "--local-admin"])
    assert "password" not in again.output.split("Researcher login")[1]


def test_study_links_prints_the_participant_and_prolific_links(app, runner, factory, client):
    factory.stimulus_set()
    runner.invoke(args=["study", "create", "s1", "--design", "arrow-of-time",
                        "--stimulus-set", "synthetic"])
    runner.invoke(args=["study", "open", "s1"])
    result = runner.invoke(args=["study", "links", "s1"])
    assert result.exit_code == 0
    assert "/p/s1?participant=ID" in result.output
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in result.output
    assert client.get("/p/s1?participant=ID").status_code == 303


VERSIONED = ('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
             '[sessions]\ncount = {sessions}\n'
             '[texts.en]\nconsent = "Consent of version {version}, {{duration_minutes}} minutes."\n')


def _version(sessions: int, version: int):
    return study_file.loads(VERSIONED.format(sessions=sessions, version=version))


def test_a_running_session_runs_its_own_version_and_a_new_one_the_current(app, factory, client):
    factory.stimulus_set()
    with app.app_context():
        studies.create_study_from_config("pilot", _version(2, 1))
        lifecycle.transition("pilot", "open")
    first = urlsplit(client.get("/p/pilot?participant=P1").location).path.rsplit("/", 1)[1]
    with app.app_context():
        lifecycle.update_study("pilot", _version(1, 2), based_on=1)
    second = urlsplit(client.get("/p/pilot?participant=P2").location).path.rsplit("/", 1)[1]
    running, new = (client.get(f"/api/session/{t}").get_json() for t in (first, second))
    assert "Consent of version 1" in running["texts"]["consent"]
    assert "Consent of version 2" in new["texts"]["consent"]
    # The design (and with it the practice gate and exclusions) is the session's version's too.
    assert (running["sessions"], new["sessions"]) == (2, 1)
    with app.app_context():
        ran = dict(db.session.execute(select(Session.token, Session.study_version)).all())
    assert ran == {first: 1, second: 2}


def test_entry_records_the_version_it_read_not_a_column_default(app, factory, client,
                                                                 monkeypatch):
    factory.stimulus_set()
    with app.app_context():
        studies.create_study_from_config("pilot", _version(2, 1))
        lifecycle.transition("pilot", "open")
    # The column default would read the study's version again inside the insert; entry passes
    # the version its schedule was built from instead.
    monkeypatch.setattr(Session.__table__.c.study_version, "default", None)
    token = urlsplit(client.get("/p/pilot?participant=P1").location).path.rsplit("/", 1)[1]
    with app.app_context():
        assert db.session.scalar(select(Session.study_version).where(Session.token == token)) == 1


def test_the_form_without_languages_offers_the_designs_shipped_ones(app, logged_in, factory):
    factory.stimulus_set()
    response = _form(logged_in)
    assert response.status_code == 303, response.get_data(as_text=True)
    with app.app_context():
        config = studies.study_config(studies.get_study("pilot"))
    assert config.languages == studies.shipped_languages("arrow-of-time")
    assert "de" in config.languages
