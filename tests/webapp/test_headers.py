"""Security headers on every response, and templates and scripts that keep to the policy.

That the pages really work under the policy is checked in a browser by
tests/browser/test_csp.py.
"""
import re
from pathlib import Path

import pytest

from webapp.headers import CONTENT_SECURITY_POLICY, PLOTLY_POLICY

ROOT = Path(__file__).resolve().parents[2]
DIRECTIVES = {"default-src": "'self'", "script-src": "'self'", "style-src": "'self'",
              "img-src": "'self' blob:", "media-src": "'self' blob:", "object-src": "'none'",
              "base-uri": "'none'", "frame-ancestors": "'none'", "form-action": "'self'"}


def _directives(policy: str) -> dict:
    return dict(part.strip().split(" ", 1) for part in policy.split(";"))


@pytest.fixture
def site(app, logged_in, factory):
    """A signed-in researcher's study with a stored trial, and an open participant study
    with its media files: (client, run page, first stimulus URL)."""
    session = factory.session(factory.study(slug="pilot"))
    factory.trial(session)
    factory.stimulus_set("tiny", per_category=2, files=True)
    factory.catch_set()
    factory.open_study(slug="study")
    run = logged_in.get("/p/study", query_string={"participant": "p-1"}).headers["Location"]
    state = logged_in.get(f"/api/session/{run.rsplit('/', 1)[-1]}").json
    return logged_in, run, state["trials"][0]["stimulus"]["url"]


STATUSES = {"home": 200, "login": 200, "studies": 200, "study": 200, "panel": 200, "export": 200,
            "plotly": 200, "static": 200, "entry": 303, "entry refused": 400, "run": 200,
            "api": 200, "api refused": 400, "api unknown": 404, "media": 200, "openapi": 200,
            "not found": 404, "wrong method": 405}


def _every_kind_of_response(client, run, media):
    api = f"/api/session/{run.rsplit('/', 1)[-1]}"
    return {
        "home": client.get("/"),
        "login": client.application.test_client().get("/auth/login"),  # signed out
        "studies": client.get("/researcher/"),
        "study": client.get("/researcher/studies/pilot"),
        "panel": client.get("/researcher/studies/pilot/panel"),
        "export": client.get("/researcher/studies/pilot/export.zip"),
        "plotly": client.get("/researcher/vendor/plotly.min.js"),
        "static": client.get("/static/js/runner.js"),
        "entry": client.get("/p/study", query_string={"participant": "p-1"}),
        "entry refused": client.get("/p/study", query_string={"participant": "bad id!"}),
        "run": client.get(run),
        "api": client.get(api),
        "api refused": client.post(f"{api}/trials", json={"bogus": 1}),
        "api unknown": client.get("/api/session/nope"),
        "media": client.get(media),
        "openapi": client.get("/api/openapi.json"),
        "not found": client.get("/no/such/page"),
        "wrong method": client.delete("/"),
    }


def test_every_response_carries_the_security_headers(site):
    client, run, media = site
    answers = _every_kind_of_response(client, run, media)
    assert {name: response.status_code for name, response in answers.items()} == STATUSES
    for name, response in answers.items():
        headers = response.headers
        policy = _directives(headers.get("Content-Security-Policy", ""))
        assert {key: policy.get(key) for key in DIRECTIVES} == DIRECTIVES, name
        assert headers.get("X-Frame-Options") == "DENY", name
        assert headers.get("X-Content-Type-Options") == "nosniff", name
        assert headers.get("Referrer-Policy") in ("same-origin", "no-referrer"), name


def test_inline_code_is_allowed_nowhere_and_inline_style_only_for_plotly(site):
    client, run, media = site
    for name, response in _every_kind_of_response(client, run, media).items():
        policy = response.headers["Content-Security-Policy"]
        assert "unsafe-eval" not in policy and "script-src 'self';" in policy, name
        assert policy == (PLOTLY_POLICY if name == "study" else CONTENT_SECURITY_POLICY), name
    # The exception adds inline <style> elements (plotly.js's own rules), not style attributes.
    assert set(_directives(PLOTLY_POLICY)) - set(DIRECTIVES) == {"style-src-elem"}


def test_participant_pages_keep_their_stricter_referrer_policy_and_isolation(site):
    client, run, media = site
    answers = _every_kind_of_response(client, run, media)
    for name in ("entry", "entry refused", "run", "api", "api refused", "api unknown"):
        assert answers[name].headers["Referrer-Policy"] == "no-referrer", name
    for name in ("home", "login", "studies", "study", "export"):
        assert answers[name].headers["Referrer-Policy"] == "same-origin", name
    assert answers["run"].headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert answers["run"].headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert answers["media"].headers["Cross-Origin-Resource-Policy"] == "same-origin"


def test_every_download_route_is_an_attachment(app, site):
    """Exports and reports are files to save, never pages to render on this origin."""
    client = site[0]
    downloads = [rule for rule in app.url_map.iter_rules()
                 if re.search(r"export|report|download|\.(zip|csv|json|html)$", rule.rule)
                 and "GET" in rule.methods and not rule.rule.startswith("/api/")]
    assert downloads
    for rule in downloads:
        url = rule.rule.replace("<slug>", "pilot")
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.headers["Content-Disposition"].startswith("attachment;"), url


# --- templates and scripts keep to the policy ------------------------------------------------

# report/report.html is no page of the app: it is the self-contained report file that
# `manage.py report` writes, opened from disk, with plotly.js inlined on purpose.
TEMPLATES = sorted(p for p in (ROOT / "templates").rglob("*.html") if p.parent.name != "report")
SCRIPTS = sorted((ROOT / "static" / "js").rglob("*.js"))
INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")", re.I)
# Attributes are matched anywhere, not only inside a tag: Jinja may write them ({% if %}onclick=).
INLINE_HANDLER = re.compile(r"(?<![\w-])on[a-z]+\s*=\s*[\"'{]", re.I)
STYLE_ATTRIBUTE = re.compile(r"(?<![\w-])style\s*=\s*[\"'{]|<style\b", re.I)
# eval and its kin, javascript: URLs, and inline styles or handlers set as attributes, also
# through screens.js's el(tag, {attribute: value}).
UNSAFE_SCRIPT = re.compile(r"\beval\s*\(|new\s+Function\s*\(|javascript:|"
                           r"set(Timeout|Interval)\(\s*[\"'`]|"
                           r"setAttribute\(\s*[\"'](style|on[a-z]+)[\"']|"
                           r"[{,]\s*[\"']?(style|on[a-z]+)[\"']?\s*:\s*[\"'`]", re.I)


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: str(p.relative_to(ROOT)))
def test_templates_have_no_inline_code_or_style(path):
    text = path.read_text()
    for pattern in (INLINE_SCRIPT, INLINE_HANDLER, STYLE_ATTRIBUTE, re.compile("javascript:")):
        assert not pattern.search(text), (pattern.pattern, pattern.search(text))


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_scripts_need_no_eval_or_inline_code(path):
    match = UNSAFE_SCRIPT.search(path.read_text())
    assert match is None, match



def test_static_scripts_may_run_as_workers_of_the_isolated_runner(client):
    # Chromium starts the clip presenter's worker in the COEP require-corp runner page only if
    # its script says require-corp too (static/js/present.js falls back to the main thread).
    for script in ("present_worker.js", "pacing.js"):
        response = client.get(f"/static/js/{script}")
        assert response.status_code == 200
        assert response.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert "Cross-Origin-Embedder-Policy" not in client.get("/static/css/runner.css").headers
