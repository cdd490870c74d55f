"""CSRF: with protection on (as in production), every researcher form refuses a missing or
forged token and accepts the one the page handed out."""
import re

import pytest

from tests.factories import RESEARCHER_PASSWORD
from webapp import auth
from webapp.extensions import db
from webapp.models import Study, access

NEW_PASSWORD = "a brand new passphrase"

TOKEN = re.compile(r'name="csrf_token" (?:type="hidden" )?value="([^"]+)"')


@pytest.fixture
def csrf_app(app):
    # The app fixture runs with TESTING, where CSRF is off by default; production has it on.
    app.config["WTF_CSRF_ENABLED"] = True
    return app


def _token(client, url):
    page = client.get(url)
    assert page.status_code == 200, url
    return TOKEN.search(page.get_data(as_text=True)).group(1)


def _login(client):
    token = _token(client, "/auth/login")
    response = client.post("/auth/login", data={"username": "ada", "password": RESEARCHER_PASSWORD,
                                                "csrf_token": token})
    assert response.status_code == 302
    return client


@pytest.mark.parametrize("token", [None, "", "forged-token", "IjEyMyI.ZZZ.abc"])
def test_login_refuses_a_missing_or_forged_token(csrf_app, researcher, token):
    client = csrf_app.test_client()
    client.get("/auth/login")  # a session exists, so only the token is wrong
    data = {"username": "ada", "password": RESEARCHER_PASSWORD}
    if token is not None:
        data["csrf_token"] = token
    response = client.post("/auth/login", data=data)
    assert response.status_code == 400
    assert client.get("/researcher/").status_code == 302  # not signed in


def test_login_accepts_the_token_of_its_page(csrf_app, researcher):
    client = _login(csrf_app.test_client())
    assert client.get("/researcher/").status_code == 200


def test_a_token_from_another_session_is_refused(csrf_app, researcher):
    other_token = _token(csrf_app.test_client(), "/auth/login")
    client = csrf_app.test_client()
    client.get("/auth/login")
    response = client.post("/auth/login", data={"username": "ada", "password": RESEARCHER_PASSWORD,
                                                "csrf_token": other_token})
    assert response.status_code == 400


def _forms(slug):
    return [
        ("/researcher/studies", {"slug": "new-study", "design": "arrow-of-time",
                                 "stimulus_set": "synthetic", "title": "New"}),
        (f"/researcher/studies/{slug}/open", {}),
        (f"/researcher/studies/{slug}/members", {"username": "grace", "role": "viewer"}),
        (f"/researcher/studies/{slug}/members/grace/remove", {}),
        ("/auth/password", {"current_password": RESEARCHER_PASSWORD, "new_password": NEW_PASSWORD,
                            "confirm_password": NEW_PASSWORD}),
        ("/auth/logout", {}),
    ]


def test_researcher_forms_refuse_requests_without_a_valid_token(csrf_app, researcher, factory):
    factory.stimulus_set()
    study = factory.study(status="draft")
    factory.researcher("grace", role_in={study.slug: "editor"})
    client = _login(csrf_app.test_client())
    for url, data in _forms(study.slug):
        for token in (None, "forged"):
            body = dict(data, **({} if token is None else {"csrf_token": token}))
            response = client.post(url, data=body)
            assert response.status_code == 400, (url, token)
    with csrf_app.app_context():
        row = db.session.get(Study, study.id)
        assert row.status == "draft"
        assert access.role_of(auth.find_researcher("grace"), row) == "editor"
        assert db.session.query(Study).count() == 1
        assert auth.authenticate("ada", RESEARCHER_PASSWORD) is not None
    assert client.get("/researcher/").status_code == 200  # the logout was refused too


def test_researcher_forms_work_with_the_page_token(csrf_app, researcher, factory):
    factory.stimulus_set()
    study = factory.study(status="draft")
    factory.researcher("grace")
    client = _login(csrf_app.test_client())
    token = _token(client, f"/researcher/studies/{study.slug}")
    for url, data in _forms(study.slug):
        response = client.post(url, data=dict(data, csrf_token=token))
        assert response.status_code in (302, 303), (url, response.status_code)
        assert "flash-error" not in client.get(response.headers["Location"]).get_data(as_text=True)
    with csrf_app.app_context():
        row = db.session.get(Study, study.id)
        assert row.status == "open"
        assert access.role_of(auth.find_researcher("grace"), row) is None  # added, removed
        assert db.session.query(Study).count() == 2
        assert auth.authenticate("ada", NEW_PASSWORD) is not None
    assert client.get("/researcher/").status_code == 302  # signed out


def test_the_participant_api_is_exempt_and_only_it(csrf_app):
    from webapp.extensions import csrf

    exempt = {bp.name for bp in csrf._exempt_blueprints}
    assert "researcher" not in exempt and "auth" not in exempt
    assert "api" in csrf_app.blueprints, "the participant JSON API blueprint is named 'api'"
    assert "api" in exempt
    # A token-less POST to the API reaches the API (404 for an unknown token), not a CSRF 400.
    response = csrf_app.test_client().post("/api/session/" + "x" * 43 + "/heartbeat", json={})
    assert response.status_code == 404


def test_the_participant_api_neither_reads_nor_sets_the_cookie(csrf_app, researcher):
    """Its exemption holds because it never consults the cookie session: a signed-in
    researcher's cookie is not even opened there (no Vary: Cookie, no Set-Cookie)."""
    client = _login(csrf_app.test_client())
    response = client.post("/api/session/" + "x" * 43 + "/heartbeat", json={})
    assert response.status_code == 404
    assert "Set-Cookie" not in response.headers and "Vary" not in response.headers
    assert client.get("/researcher/").status_code == 200  # the researcher's session is intact
