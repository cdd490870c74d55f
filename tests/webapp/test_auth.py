"""Researcher accounts: every researcher route needs a login; login, logout, cookies, CLI."""
import logging

import pytest
from werkzeug.security import check_password_hash

from tests.webapp.conftest import RESEARCHER_PASSWORD
from webapp import auth, create_app
from webapp.extensions import db
from webapp.models import Researcher

# Values for the URL variables of researcher routes; any value must be refused without login.
URL_VALUES = {"slug": "some-study", "action": "open"}


def _researcher_routes(app):
    routes = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith("researcher."):
            url = rule.build({k: URL_VALUES[k] for k in rule.arguments})[1]
            routes += [(method, url) for method in sorted(rule.methods - {"HEAD", "OPTIONS"})]
    return routes


def test_the_researcher_blueprint_holds_the_dashboard_and_export_routes(app):
    urls = {url for _, url in _researcher_routes(app)}
    assert "/researcher/" in urls
    assert "/researcher/studies/some-study/export.zip" in urls
    assert "/researcher/studies/some-study/open" in urls
    assert len(urls) >= 6


def test_every_researcher_route_is_refused_without_login(app, client, factory):
    factory.experiment(slug="some-study", title="Secret pilot")  # a real study leaks nothing
    routes = _researcher_routes(app)
    for method, url in routes:
        response = client.open(url, method=method)
        assert response.status_code == 302, (method, url, response.status_code)
        assert response.headers["Location"].startswith("/auth/login"), (method, url)
        assert b"Secret pilot" not in response.data


def test_login_opens_the_dashboard_and_logout_closes_it(client, login):
    response = login()
    assert response.status_code == 302
    assert response.headers["Location"] == "/researcher/"
    assert client.get("/researcher/").status_code == 200
    response = client.post("/auth/logout")
    assert response.status_code == 302
    response = client.get("/researcher/")
    assert response.status_code == 302 and response.headers["Location"].startswith("/auth/login")


@pytest.mark.parametrize("username, password", [("ada", "wrong password!"), ("nobody", RESEARCHER_PASSWORD),
                                                ("ada", "")])
def test_wrong_credentials_are_refused(client, login, username, password):
    response = login(username, password)
    assert response.status_code in (400, 401)
    assert b"Researcher sign-in" in response.data
    assert client.get("/researcher/").status_code == 302


def test_login_follows_only_same_site_next_urls(client, researcher):
    data = {"username": "ada", "password": RESEARCHER_PASSWORD}
    response = client.post("/auth/login?next=/researcher/studies/x", data=data)
    assert response.headers["Location"] == "/researcher/studies/x"
    client.post("/auth/logout")
    for evil in ("https://evil.example/", "//evil.example/", "/\\evil.example"):
        response = client.post(f"/auth/login?next={evil}", data=data)
        assert response.headers["Location"] == "/researcher/", evil
        client.post("/auth/logout")


def test_login_page_redirects_a_signed_in_researcher(client, login):
    login()
    response = client.get("/auth/login")
    assert response.status_code == 302 and response.headers["Location"] == "/researcher/"


def test_passwords_are_stored_as_salted_scrypt_hashes(app):
    assert app.config["PASSWORD_HASH_METHOD"] == "scrypt"  # the default, untouched here
    with app.app_context():
        for name in ("ada", "grace"):
            auth.create_researcher(name, RESEARCHER_PASSWORD)
        hashes = [r.password_hash for r in db.session.query(Researcher).order_by(Researcher.id)]
    assert all(h.startswith("scrypt:") for h in hashes)
    assert hashes[0] != hashes[1]  # same password, different salt
    assert RESEARCHER_PASSWORD not in "".join(hashes)
    assert check_password_hash(hashes[1], RESEARCHER_PASSWORD)


@pytest.mark.parametrize("username, password, message", [
    ("ada", RESEARCHER_PASSWORD, "already exists"),
    ("bad name", RESEARCHER_PASSWORD, "username"),
    ("grace", "short", "at least"),
])
def test_bad_accounts_are_refused(app, researcher, username, password, message):
    with app.app_context(), pytest.raises(ValueError, match=message):
        auth.create_researcher(username, password)


def test_cli_creates_a_researcher_from_stdin(app, runner):
    result = runner.invoke(args=["create-researcher", "grace", "--password-stdin"],
                           input=f"{RESEARCHER_PASSWORD}\n")
    assert result.exit_code == 0, result.output
    assert "Created researcher 'grace'" in result.output
    with app.app_context():
        assert auth.authenticate("grace", RESEARCHER_PASSWORD) is not None
        assert auth.authenticate("grace", "not it at all") is None


def test_cli_prompts_for_the_password_twice(app, runner):
    result = runner.invoke(args=["create-researcher", "grace"],
                           input=f"{RESEARCHER_PASSWORD}\n{RESEARCHER_PASSWORD}\n")
    assert result.exit_code == 0, result.output
    assert RESEARCHER_PASSWORD not in result.output  # hidden input


def test_cli_refuses_a_short_password_with_a_usage_error(runner):
    result = runner.invoke(args=["create-researcher", "grace", "--password-stdin"], input="short\n")
    assert result.exit_code == 2
    assert "at least" in result.output
    assert "Traceback" not in result.output


def _production_app(tmp_path, **config):
    return create_app({"SECRET_KEY": "a-long-random-production-key",
                       "INSTANCE_PATH": str(tmp_path / "prod"),
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'prod.db'}", **config})


def test_cookies_are_secure_httponly_and_lax_outside_testing(tmp_path):
    app = _production_app(tmp_path)
    with app.app_context():
        db.create_all()
        auth.create_researcher("ada", RESEARCHER_PASSWORD)
    assert app.config["SESSION_COOKIE_SECURE"] and app.config["REMEMBER_COOKIE_SECURE"]
    client = app.test_client()
    response = client.post("/auth/login", data={"username": "ada", "password": RESEARCHER_PASSWORD,
                                                "remember": "y", "csrf_token": _token(client)},
                           base_url="https://lab.example",
                           # over HTTPS Flask-WTF also checks that the form came from this site
                           headers={"Referer": "https://lab.example/auth/login"})
    assert response.status_code == 302
    cookies = response.headers.getlist("Set-Cookie")
    assert {c.split("=")[0] for c in cookies} >= {"session", "remember_token"}
    for cookie in cookies:
        assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie, cookie
    with app.app_context():
        db.engine.dispose()


def _token(client):
    import re

    page = client.get("/auth/login", base_url="https://lab.example").get_data(as_text=True)
    return re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)


def test_testing_apps_keep_plain_cookies(app):
    assert app.config["SESSION_COOKIE_SECURE"] is False


def test_serving_with_the_development_secret_key_is_warned_about_once(tmp_path, caplog):
    app = _production_app(tmp_path, SECRET_KEY=auth.DEV_SECRET_KEY)
    with caplog.at_level(logging.WARNING):
        client = app.test_client()
        client.get("/auth/login")
        client.get("/auth/login")
    assert caplog.text.count("SECRET_KEY is the development default") == 1
    with app.app_context():
        db.engine.dispose()
