"""Researcher accounts: every researcher route needs a login; login, logout, password changes,
the password policy, cookies, CLI."""
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.datastructures import MultiDict
from werkzeug.security import check_password_hash

from tests.factories import RESEARCHER_PASSWORD
from webapp import auth, create_app
from webapp.extensions import db
from webapp.models import Researcher

NEW_PASSWORD = "a brand new passphrase"

# Values for the URL variables of researcher routes; any value must be refused without login.
URL_VALUES = {"slug": "some-study", "action": "open", "username": "ada"}


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
    factory.study(slug="some-study", title="Secret pilot")  # a real study leaks nothing
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
    ("grace", " " * 10, "only spaces"),
    ("grace.hopper", "grace.hopper", "username"),
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
    return create_app({"SECRET_KEY": "a-long-random-production-key-of-48-characters!!",
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
    page = client.get("/auth/login", base_url="https://lab.example").get_data(as_text=True)
    return re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)


def test_testing_apps_keep_plain_cookies(app):
    assert app.config["SESSION_COOKIE_SECURE"] is False


# --- sessions end on logout and on a password change ------------------------------------------

def _signed_in(app, password=RESEARCHER_PASSWORD):
    """A browser signed in with "keep me signed in": (client, session cookie, remember cookie)."""
    client = app.test_client()
    response = client.post("/auth/login", data={"username": "ada", "password": password,
                                                "remember": "y"})
    assert response.status_code == 302
    return client, client.get_cookie("session").value, client.get_cookie("remember_token").value


def _replay(app, name, value):
    """A fresh browser that presents only the cookie ``name``: what a thief of it gets."""
    thief = app.test_client()
    thief.set_cookie(name, value)
    return thief.get("/researcher/")


def _assert_refused(app, session_cookie, remember_cookie):
    for name, value in (("session", session_cookie), ("remember_token", remember_cookie)):
        response = _replay(app, name, value)
        assert response.status_code == 302, name
        assert response.headers["Location"].startswith("/auth/login"), name


def test_stolen_cookies_work_until_logout_and_never_after(app, researcher):
    client, session_cookie, remember_cookie = _signed_in(app)
    assert _replay(app, "session", session_cookie).status_code == 200  # the cookies are real
    assert _replay(app, "remember_token", remember_cookie).status_code == 200
    assert client.post("/auth/logout").status_code == 302
    _assert_refused(app, session_cookie, remember_cookie)


def test_a_password_change_signs_out_every_other_browser(app, researcher):
    _, session_cookie, remember_cookie = _signed_in(app)
    other, *_ = _signed_in(app)
    assert other.get("/auth/password").status_code == 200
    response = other.post("/auth/password", data={
        "current_password": RESEARCHER_PASSWORD, "new_password": NEW_PASSWORD,
        "confirm_password": NEW_PASSWORD})
    assert response.status_code == 303
    _assert_refused(app, session_cookie, remember_cookie)
    assert other.get("/researcher/").status_code == 200  # the browser that changed it stays in
    with app.app_context():
        assert auth.authenticate("ada", NEW_PASSWORD) is not None
        assert auth.authenticate("ada", RESEARCHER_PASSWORD) is None


@pytest.mark.parametrize("form, status, message", [
    ({"current_password": "not my password", "new_password": NEW_PASSWORD,
      "confirm_password": NEW_PASSWORD}, 401, "current password is wrong"),
    ({"current_password": RESEARCHER_PASSWORD, "new_password": NEW_PASSWORD,
      "confirm_password": NEW_PASSWORD + "!"}, 400, "do not match"),
    ({"current_password": RESEARCHER_PASSWORD, "new_password": " " * 12,
      "confirm_password": " " * 12}, 400, "only spaces"),
    ({"current_password": RESEARCHER_PASSWORD, "new_password": "ada",
      "confirm_password": "ada"}, 400, "at least 10"),
])
def test_a_refused_password_change_changes_nothing(app, logged_in, form, status, message):
    response = logged_in.post("/auth/password", data=form)
    assert response.status_code == status
    assert message in response.get_data(as_text=True)
    assert logged_in.get("/researcher/").status_code == 200
    with app.app_context():
        assert auth.authenticate("ada", RESEARCHER_PASSWORD) is not None


def test_the_password_page_needs_a_login(client):
    response = client.get("/auth/password")
    assert response.status_code == 302 and response.headers["Location"].startswith("/auth/login")


def test_a_session_from_before_epochs_is_refused(app, logged_in):
    """Cookies signed before epochs carry the bare id: they must not sign anyone in."""
    with logged_in.session_transaction() as session:
        session["_user_id"] = session["_user_id"].partition(":")[0]
        assert session["_user_id"].isdigit()
    assert logged_in.get("/researcher/").status_code == 302


def test_cli_sets_a_password_and_signs_out_every_browser(app, runner, researcher):
    _, session_cookie, remember_cookie = _signed_in(app)
    result = runner.invoke(args=["set-password", "ada", "--password-stdin"], input=f"{NEW_PASSWORD}\n")
    assert result.exit_code == 0, result.output
    assert "Changed the password of 'ada'" in result.output
    _assert_refused(app, session_cookie, remember_cookie)
    with app.app_context():
        assert auth.authenticate("ada", NEW_PASSWORD) is not None


@pytest.mark.parametrize("args, password, message", [
    (["set-password", "nobody", "--password-stdin"], NEW_PASSWORD, "no researcher 'nobody'"),
    (["set-password", "ada", "--password-stdin"], " " * 10, "only spaces"),
    (["set-password", "ada", "--password-stdin"], "ada", "at least 10"),
])
def test_cli_set_password_refuses_bad_input(app, runner, researcher, args, password, message):
    result = runner.invoke(args=args, input=f"{password}\n")
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output
    with app.app_context():
        assert auth.authenticate("ada", RESEARCHER_PASSWORD) is not None


# --- one password policy, and the login form accepts what it accepts ------------------------

@pytest.mark.parametrize("password", ["x" * 9, " " * 10, "\t \u3000 " * 4, "ada", "ADA-ada-ADA",
                                      "x" * 1025])
def test_the_policy_refuses(password):
    username = "ada-ada-ada" if password == "ADA-ada-ADA" else "ada"
    with pytest.raises(ValueError):
        auth.check_password_policy(password, username)


@pytest.mark.parametrize("password", ["x" * 10, "x" * 1024, "  spaced out  ", "ada" * 4,
                                      "pässwörd ünïcode", " " * 9 + "x"])
def test_the_policy_accepts_and_the_account_can_sign_in(app, client, researcher, password):
    with app.app_context():
        auth.check_password_policy(password, "grace")
        auth.create_researcher("grace", password)
    response = client.post("/auth/login", data={"username": "grace", "password": password})
    assert response.status_code == 302


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(password=st.text(st.characters(exclude_categories=["Cs"]), max_size=1100))
def test_the_login_form_accepts_every_password_the_policy_accepts(app, password):
    try:
        auth.check_password_policy(password, "ada")
    except ValueError:
        return
    with app.test_request_context("/auth/login", method="POST"):
        form = auth.LoginForm(formdata=MultiDict({"username": "ada", "password": password}))
        assert form.validate(), form.errors


def test_cli_refuses_a_whitespace_only_password(runner):
    result = runner.invoke(args=["create-researcher", "grace", "--password-stdin"],
                           input=" " * 10 + "\n")
    assert result.exit_code == 2 and "only spaces" in result.output


def test_cli_creates_an_admin(app, runner):
    result = runner.invoke(args=["create-researcher", "root", "--admin", "--password-stdin"],
                           input=f"{RESEARCHER_PASSWORD}\n")
    assert result.exit_code == 0 and "administrator" in result.output, result.output
    with app.app_context():
        assert auth.find_researcher("root").is_admin
