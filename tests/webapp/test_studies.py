"""Study set-up and lifecycle, from Python, the CLI and the dashboard."""
import pytest
from sqlalchemy import select

from experiments import study_file
from experiments.catch import KEYS as CATCH_KEYS
from experiments.designs import DESIGNS, Design
from webapp.cli.studies import DEMO_STUDIES
from webapp.extensions import db
from webapp.models import Session, Study, access
from webapp.participant import sessions
from webapp.researcher import lifecycle, studies

PATHS = [  # action sequence -> final status
    (["open"], "open"),
    (["open", "pause"], "paused"),
    (["open", "pause", "open"], "open"),
    (["open", "pause", "close"], "closed"),
    (["close"], "closed"),
]
INVALID = [  # (actions leading there, refused action)
    ([], "pause"),
    (["open"], "open"),
    (["open", "pause"], "pause"),
    (["close"], "open"),
    (["close"], "pause"),
    (["close"], "close"),
]


@pytest.fixture
def ctx(app, factory):
    factory.stimulus_set()
    with app.app_context():
        yield


# Designs that run on any set's main clips; a sweep design needs its sweep clips (below).
GENERAL_DESIGNS = sorted(name for name, design in DESIGNS.items() if not design.included_splits)


@pytest.mark.parametrize("design", GENERAL_DESIGNS)
def test_a_study_is_created_as_a_draft_with_its_design_snapshot(ctx, design):
    study = studies.create_study("pilot-1", design, "synthetic", title="  Pilot  ")
    assert (study.slug, study.title, study.status, study.design) == ("pilot-1", "Pilot", "draft", design)
    assert Design.from_snapshot(study) == DESIGNS[design]
    assert study.exclusion_rules_version == DESIGNS[design].exclusions.version
    assert lifecycle.allowed_actions(study) == ["open", "close", "stop"]


def test_a_sweep_design_on_a_set_without_its_sweep_clips_is_refused_clearly(ctx):
    with pytest.raises(studies.StudyError, match="cannot run on stimulus set 'synthetic'"):
        studies.create_study("sweep", "tra-sweep", "synthetic")
    assert studies.get_study("sweep") is None


@pytest.mark.parametrize("slug, design, stimulus_set, message", [
    ("Bad Slug", "arrow-of-time", "synthetic", "slug"),
    ("-dash", "arrow-of-time", "synthetic", "slug"),
    ("../etc", "arrow-of-time", "synthetic", "slug"),
    ("ok", "no-such-design", "synthetic", "unknown design"),
    ("ok", "arrow-of-time", "no-such-set", "unknown stimulus set"),
])
def test_bad_studies_are_refused(ctx, slug, design, stimulus_set, message):
    with pytest.raises(studies.StudyError, match=message):
        studies.create_study(slug, design, stimulus_set)
    assert db.session.query(Study).count() == 0


@pytest.mark.parametrize("title", ["A\x00title", "line\nbreak", "bell\x07"])
def test_titles_with_control_characters_are_refused(ctx, title):
    # A NUL byte reached PostgreSQL (a 500) in the red team's run.
    with pytest.raises(studies.StudyError, match="control characters"):
        studies.create_study("ok", "arrow-of-time", "synthetic", title=title)
    assert db.session.query(Study).count() == 0


def test_a_stimulus_set_the_design_cannot_schedule_is_refused(app, factory):
    factory.stimulus(factory.clip(stimulus_set="forward-only"), direction="forward")
    with app.app_context(), pytest.raises(studies.StudyError, match="cannot run on stimulus set"):
        studies.create_study("s", "arrow-of-time", "forward-only")


def test_a_slug_is_taken_once(ctx):
    studies.create_study("pilot", "arrow-of-time", "synthetic")
    with pytest.raises(studies.StudyError, match="already exists"):
        studies.create_study("pilot", "frame-ordering", "synthetic")


@pytest.mark.parametrize("actions, final", PATHS)
def test_valid_transitions(ctx, actions, final):
    studies.create_study("s", "arrow-of-time", "synthetic")
    for action in actions:
        study = lifecycle.transition("s", action)
    assert study.status == final
    db.session.expire_all()
    assert studies.get_study("s").status == final


@pytest.mark.parametrize("actions, refused", INVALID)
def test_invalid_transitions_are_refused_and_change_nothing(ctx, actions, refused):
    studies.create_study("s", "arrow-of-time", "synthetic")
    for action in actions:
        lifecycle.transition("s", action)
    before = studies.get_study("s").status
    with pytest.raises(studies.StudyError, match=f"cannot {refused}"):
        lifecycle.transition("s", refused)
    db.session.expire_all()
    assert studies.get_study("s").status == before


def test_unknown_actions_and_studies_are_refused(ctx):
    studies.create_study("s", "arrow-of-time", "synthetic")
    with pytest.raises(studies.StudyError, match="unknown action"):
        lifecycle.transition("s", "delete")
    with pytest.raises(studies.StudyError, match="no study"):
        lifecycle.transition("nope", "open")


def test_participant_links(app, ctx):
    app.config["PUBLIC_URL"] = "https://lab.example/chrono"
    assert studies.participant_link("s") == "https://lab.example/chrono/p/s"
    prolific = studies.participant_link("s", prolific=True)
    assert prolific == ("https://lab.example/chrono/p/s?PROLIFIC_PID={{%PROLIFIC_PID%}}"
                        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    with app.test_request_context("/", base_url="http://study.host:8000"):
        assert studies.participant_link("s") == "http://study.host:8000/p/s"


def test_an_opened_study_admits_participants_at_its_link(app, client, factory):
    """The link the dashboard shows leads into the study once it is open, and not before."""
    factory.stimulus_set()
    with app.app_context():
        studies.create_study("s", "arrow-of-time", "synthetic")
        path = studies.participant_link("s").removeprefix(app.config["PUBLIC_URL"])
    assert client.get(path + "?participant=P1").status_code in (403, 404)
    with app.app_context():
        lifecycle.transition("s", "open")
    assert client.get(path + "?participant=P1").status_code not in (403, 404)


# Issue 15: a lab that avoids f (WebKitGTK leaves fullscreen on it) answers with d and k.
DK_STUDY = ('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
            '[responses]\nkeys = ["d", "k"]\n')
NO_D_OR_K = ("the catch set 'catch' has no video for response key 'd' or 'k' (it holds f, j): "
             "run `python manage.py stimuli generate` to add every key's video, or set "
             "blocks.catch_per_block = 0")


def test_catch_trials_the_stored_catch_set_cannot_show_are_refused_with_the_fix(ctx, factory):
    # A catch set generated before it held every key: f and j only (the CLI's words:
    # tests/webapp/test_study_file_cli.py).
    factory.catch_set()
    with pytest.raises(studies.StudyError) as refused:
        studies.create_study_from_config("dk", study_file.loads(DK_STUDY))
    assert str(refused.value) == NO_D_OR_K
    assert studies.get_study("dk") is None
    without = DK_STUDY + "[blocks]\ncatch_per_block = 0\n"
    studies.create_study_from_config("dk", study_file.loads(without))  # no check to show
    with pytest.raises(studies.StudyError, match="no video for response key 'd' or 'k'"):
        lifecycle.update_study("dk", study_file.loads(DK_STUDY))  # nor by a change
    factory.catch_set(keys=("d",))  # one key is not enough: every check would be the same press
    with pytest.raises(studies.StudyError, match=r"response key 'k' \(it holds d, f, j\)"):
        studies.create_study_from_config("dk-2", study_file.loads(DK_STUDY))


def test_a_study_answering_with_d_and_k_checks_attention_with_d_and_k(app, client, factory):
    factory.stimulus_set()
    factory.catch_set(keys=CATCH_KEYS)
    with app.app_context():
        studies.create_study_from_config("dk", study_file.loads(DK_STUDY))
        lifecycle.transition("dk", "open")
    location = client.get("/p/dk", query_string={"participant": "p-1"}).headers["Location"]
    with app.app_context():
        session = db.session.scalar(select(Session).where(
            Session.token == location.rsplit("/", 1)[-1]))
        condition, schedule = session.condition, session.schedule
    assert condition["catch_available"] is True and set(condition["key_mapping"]) == {"d", "k"}
    catch = [t for t in schedule if t["trial_type"] == "catch"]
    assert len(catch) == len({t["block"] for t in schedule if t["block"] != "practice"}) >= 2
    assert {t["instructed_key"] for t in catch} == {"d", "k"}
    for trial in catch:
        assert trial["correct_response"] == condition["key_mapping"][trial["instructed_key"]]


# --- CLI -----------------------------------------------------------------------------------

def test_cli_lifecycle(app, runner, factory):
    factory.stimulus_set()
    result = runner.invoke(args=["study", "create", "pilot", "--design", "arrow-of-time",
                                 "--stimulus-set", "synthetic", "--title", "Pilot"])
    assert result.exit_code == 0, result.output
    assert "draft" in result.output
    result = runner.invoke(args=["study", "open", "pilot"])
    assert result.exit_code == 0, result.output
    assert "now open" in result.output and "/p/pilot" in result.output
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in result.output
    with app.app_context():
        codes = sessions.completion_codes("pilot")
    assert f"completed={codes['completed']}, failed_attention={codes['failed_attention']}" in result.output
    for action, status in (("pause", "paused"), ("close", "closed")):
        result = runner.invoke(args=["study", action, "pilot"])
        assert result.exit_code == 0 and f"now {status}" in result.output, result.output
    result = runner.invoke(args=["study", "list"])
    assert "pilot" in result.output and "closed" in result.output and "arrow-of-time" in result.output


def test_cli_demo_opens_one_study_per_design_once(app, runner, factory):
    factory.stimulus_set()
    for _ in range(2):  # `make run` calls it on every start
        result = runner.invoke(args=["study", "demo"])
        assert result.exit_code == 0, result.output
        # each demo prints three working links: try it, simulated, Prolific
        assert result.output.count("/p/demo-") == 3 * len(DEMO_STUDIES)
    with app.app_context():
        demos = db.session.query(Study).filter(Study.slug.like("demo-%")).all()
        assert sorted(e.design for e in demos) == sorted(DEMO_STUDIES.values())
        assert {e.status for e in demos} == {"open"}


def test_cli_links_say_which_server_they_assume(app, client, runner, factory):
    """`study links`, `list` and `demo` print links for CHRONOSCOPE_PUBLIC_URL (or its
    default), say so, and take --base-url for a server elsewhere; every link printed works."""
    from urllib.parse import urlsplit

    factory.stimulus_set()
    factory.study(slug="pilot")
    default = app.config["PUBLIC_URL"]
    for args in (["study", "links", "pilot"], ["study", "list"], ["study", "demo"]):
        result = runner.invoke(args=args)
        assert result.exit_code == 0, result.output
        assert f"Links assume this server is reached at {default}" in result.stderr
        assert "--base-url" in result.stderr and "CHRONOSCOPE_PUBLIC_URL" in result.stderr
        moved = runner.invoke(args=[*args, "--base-url", "http://127.0.0.1:5721/"])
        assert moved.exit_code == 0, moved.output
        links = [word for word in moved.stdout.split() if "/p/" in word]
        assert links and all(link.startswith("http://127.0.0.1:5721/p/") for link in links)
        assert default not in moved.stdout and "http://127.0.0.1:5721" in moved.stderr
        for link in links:  # the printed links open the study (the bare one asks for the id)
            if "{{%" not in link:
                parts = urlsplit(link.replace("?participant=ID", "?participant=someone"))
                response = client.get(parts.path, query_string=parts.query)
                assert response.status_code in (200, 303), (link, response.status_code)
    assert app.config["PUBLIC_URL"] == default  # the option changes no setting
    wrong = runner.invoke(args=["study", "links", "pilot", "--base-url", "javascript:alert(1)"])
    assert wrong.exit_code == 2 and "not an http(s) address" in wrong.output


def test_study_open_prints_its_links_for_base_url(app, runner, factory):
    """`study open` prints the links as `study links` does, and takes --base-url too."""
    factory.stimulus_set()
    factory.study(slug="pilot", status="draft")
    default = app.config["PUBLIC_URL"]
    result = runner.invoke(args=["study", "open", "pilot", "--base-url", "https://lab.example.org/"])
    assert result.exit_code == 0, result.output
    links = [word for word in result.stdout.split() if "/p/" in word]
    assert links and all(link.startswith("https://lab.example.org/p/pilot") for link in links)
    assert "https://lab.example.org/" in result.stderr and default not in result.stdout
    assert app.config["PUBLIC_URL"] == default


@pytest.mark.parametrize("args, message", [
    (["study", "open", "nope"], "no study"),
    (["study", "create", "x", "--design", "nope", "--stimulus-set", "synthetic"], "unknown design"),
    (["study", "create", "x", "--design", "arrow-of-time", "--stimulus-set", "nope"], "unknown stimulus set"),
])
def test_cli_data_errors_print_the_error_alone(runner, factory, args, message):
    # Issue 28: a data error came under click's usage header, as if the command were mistyped.
    factory.stimulus_set()
    result = runner.invoke(args=args)
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and message in result.output
    assert "Usage:" not in result.output and "Traceback" not in result.output


def test_cli_refuses_an_invalid_transition(runner, factory):
    factory.stimulus_set()
    factory.study(slug="done", status="closed")
    result = runner.invoke(args=["study", "open", "done"])
    assert result.exit_code == 1
    assert "cannot open study 'done': it is closed" in result.output


def _roles(app, slug):
    with app.app_context():
        return sorted((m.researcher.username, m.role)
                      for m in access.members(studies.get_study(slug)))


def test_cli_creates_a_study_for_its_owner_and_shares_it(app, runner, researcher, factory):
    factory.stimulus_set()
    factory.researcher("grace")
    result = runner.invoke(args=["study", "create", "pilot", "--design", "arrow-of-time",
                                 "--stimulus-set", "synthetic", "--owner", "ada"])
    assert result.exit_code == 0, result.output
    assert _roles(app, "pilot") == [("ada", "owner")]
    result = runner.invoke(args=["study", "share", "pilot", "grace", "--role", "editor"])
    assert result.exit_code == 0 and "grace is now editor of 'pilot'" in result.output, result.output
    result = runner.invoke(args=["study", "share", "pilot", "grace", "--role", "viewer"])
    assert _roles(app, "pilot") == [("ada", "owner"), ("grace", "viewer")]
    result = runner.invoke(args=["study", "unshare", "pilot", "grace"])
    assert result.exit_code == 0 and "grace no longer has access" in result.output, result.output
    assert _roles(app, "pilot") == [("ada", "owner")]


def test_cli_creates_a_study_without_owner_for_admins_only(app, runner, factory):
    factory.stimulus_set()
    result = runner.invoke(args=["study", "create", "pilot", "--design", "arrow-of-time",
                                 "--stimulus-set", "synthetic"])
    assert result.exit_code == 0, result.output
    assert "no owner" in result.output
    assert _roles(app, "pilot") == []


@pytest.mark.parametrize("args, message", [
    (["study", "create", "x", "--design", "arrow-of-time", "--stimulus-set", "synthetic",
      "--owner", "nobody"], "no researcher 'nobody'"),
    (["study", "share", "nope", "ada", "--role", "viewer"], "no study 'nope'"),
    (["study", "share", "pilot", "nobody", "--role", "viewer"], "no researcher 'nobody'"),
    (["study", "share", "pilot", "ada", "--role", "admin"], "'admin' is not one of"),
    (["study", "share", "pilot", "ada", "--role", "viewer"], "at least one owner"),
    (["study", "unshare", "pilot", "ada"], "at least one owner"),
    (["study", "unshare", "pilot", "grace"], "grace is not a member of 'pilot'"),
])
def test_cli_sharing_errors_are_refused(app, runner, researcher, factory, args, message):
    factory.stimulus_set()
    factory.study(slug="pilot")
    factory.researcher("grace")
    result = runner.invoke(args=args)
    # A role outside the choices is mistyped (usage); the others are the data's.
    assert result.exit_code == (2 if "--role" in args and "admin" in args else 1), result.output
    assert message in result.output and "Traceback" not in result.output
    assert _roles(app, "pilot") == [("ada", "owner")]
    with app.app_context():
        assert studies.get_study("x") is None  # nothing half-made


def test_cli_list_without_studies(runner):
    result = runner.invoke(args=["study", "list"])
    assert result.exit_code == 0 and "No studies yet" in result.output


# --- dashboard -----------------------------------------------------------------------------

def test_dashboard_creates_and_moves_a_study(app, logged_in, factory):
    factory.stimulus_set()
    page = logged_in.get("/researcher/").get_data(as_text=True)
    assert "arrow-of-time" in page and "frame-ordering" in page and "synthetic" in page
    response = logged_in.post("/researcher/studies", data={
        "slug": "web-pilot", "title": "Web pilot", "design": "frame-ordering", "stimulus_set": "synthetic"})
    assert response.status_code == 303
    assert response.headers["Location"] == "/researcher/studies/web-pilot"
    page = logged_in.get("/researcher/studies/web-pilot").get_data(as_text=True)
    assert "http://localhost/p/web-pilot" in page and 'id="action-open"' in page
    with app.app_context():
        codes = sessions.completion_codes("web-pilot")
    for outcome, code in codes.items():  # what Prolific must be told, as participants get them
        assert f'<code id="code-{outcome}">{code}</code>' in page
    response = logged_in.post("/researcher/studies/web-pilot/open", follow_redirects=True)
    assert "is now open" in response.get_data(as_text=True)
    response = logged_in.post("/researcher/studies/web-pilot/open", follow_redirects=True)
    assert "cannot open study &#39;web-pilot&#39;: it is open" in response.get_data(as_text=True)
    with app.app_context():
        assert studies.get_study("web-pilot").status == "open"


@pytest.mark.parametrize("data, message", [
    ({"slug": "Bad Slug", "design": "arrow-of-time", "stimulus_set": "synthetic"}, "slug must be"),
    ({"slug": "ok", "design": "nope", "stimulus_set": "synthetic"}, "expected one of"),
    ({"slug": "", "design": "arrow-of-time", "stimulus_set": "synthetic"}, "This field is required"),
])
def test_dashboard_explains_a_refused_study(logged_in, factory, data, message):
    factory.stimulus_set()
    response = logged_in.post("/researcher/studies", data=data)
    assert response.status_code == 400
    assert message in response.get_data(as_text=True)


def test_dashboard_404s_for_unknown_studies_and_actions(logged_in, factory):
    factory.study(slug="s")
    assert logged_in.get("/researcher/studies/nope").status_code == 404
    assert logged_in.post("/researcher/studies/nope/open").status_code == 404
    assert logged_in.post("/researcher/studies/s/delete").status_code == 404


def test_cli_warns_about_response_keys_a_browser_keeps(runner, factory, tmp_path):
    factory.stimulus_set()
    result = runner.invoke(args=["study", "create", "keys", "--design", "arrow-of-time",
                                 "--stimulus-set", "synthetic"])
    assert result.exit_code == 0, result.output
    # The shipped designs answer with f, which WebKitGTK keeps; the default study refuses
    # WebKit, so no browser it accepts loses the key.
    assert "Warning: Response key" not in result.output
    webkit = tmp_path / "webkit.toml"
    webkit.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
                      '[participants]\nbrowsers = ["chromium", "firefox", "webkit"]\n')
    # A study file opting WebKit in with f is refused: no F press could ever be stored there.
    result = runner.invoke(args=["study", "create", "keys-webkit", "--from", str(webkit)])
    assert result.exit_code != 0
    assert "participants.browsers: Response key 'f'" in result.output
    assert "WebKitGTK" in result.output and "nothing was created" in result.output
    # A study stored without a file (an older one) still gets the warning when it opens.
    snapshot = DESIGNS["arrow-of-time"].to_dict()
    snapshot["study_config"] = {"stimulus_set": "synthetic",
                                "browsers": ["chromium", "firefox", "webkit"]}
    factory.study(slug="keys-webkit", status="draft", design_snapshot=snapshot)
    result = runner.invoke(args=["study", "open", "keys-webkit"])
    assert "Warning: Response key 'f'" in result.output
    escape = DESIGNS["arrow-of-time"].with_changes(response_keys=("escape", "j")).to_dict()
    factory.study(slug="escape", status="draft", design_snapshot=escape)
    assert "Warning: Response key 'escape'" in runner.invoke(args=["study", "open", "escape"]).output
    safe = DESIGNS["arrow-of-time"].with_changes(response_keys=("j", "k")).to_dict()
    factory.study(slug="safe", status="draft", design_snapshot=safe)
    result = runner.invoke(args=["study", "open", "safe"])
    assert result.exit_code == 0 and "now open" in result.output
    assert "Warning" not in result.output


def test_study_page_warns_about_response_keys_a_browser_it_accepts_reserves(logged_in, factory):
    from experiments.designs import DESIGNS
    from webapp.researcher.studies import STUDY_CONFIG_KEY

    # The default study refuses WebKit, the one engine that keeps f: no warning (the page
    # warned about f for every study, unlike `study create` and `open`).
    factory.study(slug="keys-page")
    page = logged_in.get("/researcher/studies/keys-page").get_data(as_text=True)
    assert 'id="key-warnings"' not in page
    snapshot = DESIGNS["arrow-of-time"].to_dict()
    snapshot[STUDY_CONFIG_KEY] = {"stimulus_set": "synthetic",
                                  "browsers": ["chromium", "firefox", "webkit"]}
    factory.study(slug="keys-webkit", design_snapshot=snapshot)
    page = logged_in.get("/researcher/studies/keys-webkit").get_data(as_text=True)
    assert 'id="key-warnings"' in page and "Response key &#39;f&#39;" in page
