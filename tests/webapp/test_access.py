"""Study access: researchers see and change only the studies they are members of, as far as
their role allows; admins see and do everything.

The route tests are generated from ``app.url_map``: every researcher route that takes a study
is tried with every method, so a route added later is covered without a new test.
"""
from pathlib import Path

import pytest

from tests.factories import RESEARCHER_PASSWORD
from webapp.extensions import db
from webapp.models import Study, access
from webapp.researcher import lifecycle

# Values for the other URL variables of study routes; a route with a variable missing here
# fails test_every_study_route_is_covered until it gets one.
URL_VALUES = {"username": "ada"}
ACTIONS = [*lifecycle.TRANSITIONS, "no-such-action"]
SECRET = "Secret pilot"
ROOT = Path(__file__).resolve().parents[2]
ROLES = ("viewer", "editor", "owner")
# The permission table docs/researcher-guide.md and SECURITY.md state, row by row: the roles allowed.
VIEW = "See the study page, live panel, completion codes and configuration; download exports"
PERMISSION_TABLE = {
    VIEW: {"viewer", "editor", "owner"},
    "Open and pause": {"editor", "owner"},
    "Preview (click by click or simulated participant)": {"editor", "owner"},
    "Exclude or reinstate a participant by hand, with a reason (an exclusion is a Prolific "
    "REJECT)": {"editor", "owner"},
    "Issue a participant a single-use link to continue in another browser": {"editor", "owner"},
    "Check the codes participants submitted on the platform": {"editor", "owner"},
    "Change the configuration (a draft in place, an opened study as a new version)": {"owner"},
    "Close or stop": {"owner"},
    "Add, change or remove members": {"owner"},
}


def study_requests(app, slug):
    """(method, url) of every researcher route taking ``slug``, every action of the lifecycle."""
    requests = []
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("researcher.") or "slug" not in rule.arguments:
            continue
        for action in (ACTIONS if "action" in rule.arguments else [None]):
            values = {name: URL_VALUES[name] for name in rule.arguments - {"slug", "action"}}
            values.update(slug=slug, **({"action": action} if action else {}))
            url = rule.build(values)[1]
            requests += [(method, url) for method in sorted(rule.methods - {"HEAD", "OPTIONS"})]
    return requests


def sign_in(app, username):
    client = app.test_client()
    response = client.post("/auth/login", data={"username": username,
                                                "password": RESEARCHER_PASSWORD})
    assert response.status_code == 302, username
    return client


def snapshot(app, slug="pilot"):
    """What a refused request must leave untouched: the study's state and its members."""
    with app.app_context():
        study = db.session.scalar(db.select(Study).filter_by(slug=slug))
        return (study.status, study.close_mode,
                sorted((m.researcher.username, m.role) for m in access.members(study)))


@pytest.fixture
def team(researcher, factory):
    """ada owns "pilot"; vic views it, eddie edits it; bob is a member of nothing."""
    factory.stimulus_set()
    factory.study(slug="pilot", title=SECRET)
    factory.researcher("vic", role_in={"pilot": "viewer"})
    factory.researcher("eddie", role_in={"pilot": "editor"})
    factory.researcher("bob")
    return "pilot"


def test_every_study_route_is_covered(app):
    routes = study_requests(app, "pilot")
    assert ("GET", "/researcher/studies/pilot") in routes
    assert ("GET", "/researcher/studies/pilot/export.zip") in routes
    assert ("POST", "/researcher/studies/pilot/close") in routes
    assert any(method == "POST" and "/members" in url for method, url in routes)


def test_every_researcher_route_names_its_study_slug(app):
    """The access check finds the study by the URL variable ``slug``: a route naming a study
    any other way would skip it, so any new variable must be looked at (and added above)."""
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith("researcher."):
            assert rule.arguments <= {"slug", "action", *URL_VALUES}, rule.rule


def test_a_non_member_gets_404_on_every_study_route(app, team):
    bob = sign_in(app, "bob")
    before = snapshot(app)
    for slug in ("pilot", "no-such-study"):  # an existing study answers as a missing one
        for method, url in study_requests(app, slug):
            response = bob.open(url, method=method, data={"username": "bob", "role": "owner"})
            assert response.status_code == 404, (method, url, response.status_code)
            assert SECRET.encode() not in response.data, (method, url)
    assert snapshot(app) == before


def test_a_viewer_reads_but_every_state_change_is_403(app, team):
    vic = sign_in(app, "vic")
    before = snapshot(app)
    for method, url in study_requests(app, "pilot"):
        response = vic.open(url, method=method, data={"username": "vic", "role": "owner"})
        if method == "GET":
            assert response.status_code == 200, url
        else:
            assert response.status_code == 403, (method, url, response.status_code)
    assert snapshot(app) == before
    page = vic.get("/researcher/studies/pilot").get_data(as_text=True)
    assert 'id="code-completed"' in page  # viewers see the completion codes
    assert 'id="action-' not in page and 'id="members-form"' not in page


def test_an_editor_opens_and_pauses_but_cannot_close_or_manage_members(app, team):
    eddie = sign_in(app, "eddie")
    assert eddie.post("/researcher/studies/pilot/pause").status_code == 303
    assert eddie.post("/researcher/studies/pilot/open").status_code == 303
    before = snapshot(app)
    assert before[0] == "open"
    for action in ("close", "stop"):
        assert eddie.post(f"/researcher/studies/pilot/{action}").status_code == 403
    assert eddie.post("/researcher/studies/pilot/members",
                      data={"username": "eddie", "role": "owner"}).status_code == 403
    assert eddie.post("/researcher/studies/pilot/members/vic/remove").status_code == 403
    assert snapshot(app) == before
    page = eddie.get("/researcher/studies/pilot").get_data(as_text=True)
    assert 'id="action-pause"' in page and 'id="action-close"' not in page


def test_an_owner_closes_and_manages_members_from_the_study_page(app, team):
    ada = sign_in(app, "ada")
    page = ada.get("/researcher/studies/pilot").get_data(as_text=True)
    assert 'id="members-form"' in page and 'id="action-close"' in page
    response = ada.post("/researcher/studies/pilot/members",
                        data={"username": "bob", "role": "editor"}, follow_redirects=True)
    assert response.status_code == 200 and "bob" in response.get_data(as_text=True)
    assert ("bob", "editor") in snapshot(app)[2]
    assert sign_in(app, "bob").get("/researcher/studies/pilot").status_code == 200
    response = ada.post("/researcher/studies/pilot/members/vic/remove")
    assert response.status_code == 303
    assert sign_in(app, "vic").get("/researcher/studies/pilot").status_code == 404
    assert ada.post("/researcher/studies/pilot/close").status_code == 303
    assert snapshot(app)[0] == "closed"


@pytest.mark.parametrize("data, message", [
    ({"username": "nobody", "role": "viewer"}, "no researcher"),
    ({"username": "bob", "role": "admin"}, "Not a valid choice"),
    ({"username": "ada", "role": "viewer"}, "at least one owner"),  # the last owner
])
def test_member_changes_that_make_no_sense_are_explained(app, team, data, message):
    ada = sign_in(app, "ada")
    before = snapshot(app)
    response = ada.post("/researcher/studies/pilot/members", data=data, follow_redirects=True)
    assert message in response.get_data(as_text=True)
    assert snapshot(app) == before


def test_the_last_owner_cannot_be_removed(app, team):
    ada = sign_in(app, "ada")
    response = ada.post("/researcher/studies/pilot/members/ada/remove", follow_redirects=True)
    assert "at least one owner" in response.get_data(as_text=True)
    assert ("ada", "owner") in snapshot(app)[2]


def test_the_study_list_shows_only_the_researchers_studies(app, team, factory):
    factory.study(slug="bobs-own", title="Bob's own study", owner="bob")
    factory.study(slug="orphan", title="Nobody's study", owner=None)
    pages = {name: sign_in(app, name).get("/researcher/").get_data(as_text=True)
             for name in ("ada", "vic", "bob")}
    assert SECRET in pages["ada"] and SECRET in pages["vic"] and SECRET not in pages["bob"]
    assert "Bob&#39;s own study" in pages["bob"]
    assert "Bob&#39;s own study" not in pages["ada"] and "Bob&#39;s own study" not in pages["vic"]
    assert all("Nobody&#39;s study" not in page for page in pages.values())


def test_an_admin_sees_and_does_everything(app, team, factory):
    factory.study(slug="orphan", title="Nobody's study", owner=None)
    factory.researcher("root", is_admin=True)
    root = sign_in(app, "root")
    page = root.get("/researcher/").get_data(as_text=True)
    assert SECRET in page and "Nobody&#39;s study" in page
    for slug in ("pilot", "orphan"):
        assert root.get(f"/researcher/studies/{slug}").status_code == 200
        assert root.get(f"/researcher/studies/{slug}/export.zip").status_code == 200
        assert root.post(f"/researcher/studies/{slug}/close").status_code == 303
        assert snapshot(app, slug)[0] == "closed"
    assert root.post("/researcher/studies/orphan/members",
                     data={"username": "bob", "role": "viewer"}).status_code == 303
    assert sign_in(app, "bob").get("/researcher/studies/orphan").status_code == 200


def test_a_study_created_on_the_web_is_its_creators(app, team):
    response = sign_in(app, "bob").post("/researcher/studies", data={
        "slug": "bobs-pilot", "design": "arrow-of-time", "stimulus_set": "synthetic"})
    assert response.status_code == 303
    assert snapshot(app, "bobs-pilot")[2] == [("bob", "owner")]
    assert sign_in(app, "ada").get("/researcher/studies/bobs-pilot").status_code == 404


def test_membership_is_checked_on_every_request(app, team):
    """Access is not remembered in the session: removing a member takes effect at once."""
    vic = sign_in(app, "vic")
    assert vic.get("/researcher/studies/pilot/panel").status_code == 200
    with app.app_context():
        access.unshare(db.session.scalar(db.select(Study).filter_by(slug="pilot")), "vic")
    assert vic.get("/researcher/studies/pilot/panel").status_code == 404


def table_row(method, url):
    """The permission table's row of a study request; a route fitting no row fails the test
    that walks the routes until the table (and the documents) say who may use it."""
    tail = url.split("/researcher/studies/pilot", 1)[1]
    if method == "GET":
        return VIEW
    rows = {"/open": "Open and pause", "/pause": "Open and pause",
            "/preview": "Preview (click by click or simulated participant)",
            "/exclusions": next(row for row in PERMISSION_TABLE if row.startswith("Exclude")),
            "/edit": next(row for row in PERMISSION_TABLE if row.startswith("Change")),
            "/resume-links": next(row for row in PERMISSION_TABLE if row.startswith("Issue")),
            "/codes": next(row for row in PERMISSION_TABLE if row.startswith("Check the codes")),
            "/close": "Close or stop", "/stop": "Close or stop",
            "/no-such-action": "Close or stop"}  # any other action is the owners', as close
    if tail.startswith("/members"):
        return "Add, change or remove members"
    assert tail in rows, f"{method} {url} is in no row of the permission table"
    return rows[tail]


def documented_table(name):
    """The action x role table of docs/researcher-guide.md or SECURITY.md: {action: roles marked yes}."""
    lines = [line.strip() for line in (ROOT / name).read_text("utf-8").splitlines()]
    start = lines.index("| Action | Viewer | Editor | Owner |")
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        action, *marks = [cell.strip() for cell in line.strip("|").split("|")]
        assert all(mark in ("yes", "—") for mark in marks), line
        table[action] = {role for role, mark in zip(ROLES, marks) if mark == "yes"}
    return table


@pytest.mark.parametrize("name", ["docs/researcher-guide.md", "SECURITY.md"])
def test_the_documents_state_the_permission_table(name):
    assert documented_table(name) == PERMISSION_TABLE


@pytest.mark.parametrize("role", ROLES)
def test_every_study_route_answers_each_role_as_the_permission_table_says(app, team, role):
    """Allowed: anything but 403 (a form without its fields may be 400); refused: 403."""
    username = {"viewer": "vic", "editor": "eddie", "owner": "ada"}[role]
    client = sign_in(app, username)
    for method, url in study_requests(app, "pilot"):
        allowed = role in PERMISSION_TABLE[table_row(method, url)]
        response = client.open(url, method=method, data={"username": "bob", "role": "viewer"})
        assert (response.status_code != 403) == allowed, (role, method, url,
                                                          response.status_code)


def test_an_editor_cannot_change_the_configuration(app, team):
    eddie = sign_in(app, "eddie")
    response = eddie.post("/researcher/studies/pilot/edit",
                          data={"slug": "pilot", "design": "arrow-of-time",
                                "stimulus_set": "synthetic", "title": "Changed by an editor"})
    assert response.status_code == 403
    with app.app_context():
        study = db.session.scalar(db.select(Study).filter_by(slug="pilot"))
        assert (study.title, study.config_version) == (SECRET, 1)
