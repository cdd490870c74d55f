"""The live site that whole-session browser tests run against: the real app on a temporary
database with a tiny stimulus set and one open study per shipped design, served by werkzeug
in a thread on a free port.  Shared by tests/browser (Chromium) and tests/engines (Firefox
ESR, WebKitGTK) through the ``site`` fixture, which tests/conftest.py registers.

One site for the whole test session; every test is its own participant, so tests stay
independent without paying for a new site each time.

In front of the app sit test-only switches (``site.faults``), usable from any browser
driver: a network outage for the participant API and media, a recorder of page errors for
drivers that cannot read the browser console, and the answer to every trial post.
"""
import json
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from werkzeug.serving import make_server

from tests.factories import make_app, open_site_study, store_tiny_stimuli, tiny_designs

# The paths a participant's browser fetches while a session runs.
NETWORK_PATHS = ("/api/", "/media/")
ERROR_RECORDER_PATH = "/__test__/record-errors.js"
# A classic script put first in <head>, so it runs before the runner's modules: uncaught
# errors, unhandled rejections and console.error calls land in window.__pageErrors.
ERROR_RECORDER = b"""(() => {
  const errors = window.__pageErrors = [];
  addEventListener("error", (e) => errors.push(`${e.message} at ${e.filename}:${e.lineno}`));
  addEventListener("unhandledrejection", (e) => errors.push(`unhandled rejection: ${e.reason}`));
  const original = console.error.bind(console);
  console.error = (...args) => {
    errors.push(`console.error: ${args.join(" ")}`);
    original(...args);
  };
})();
"""


@dataclass
class Site:
    app: object
    base_url: str
    slugs: dict
    faults: "Faults"


class Faults:
    """WSGI middleware with test-only switches; the app behind it is untouched.

    ``offline``: while true, every request to the participant API or to media is answered by
    closing the connection without a response, as when the network is down (the browser's
    fetch fails; no HTTP status ever reaches the page).
    ``record_errors``: while true, HTML pages load ERROR_RECORDER before anything else.
    ``trial_posts``: (path, HTTP status, the answer's error code or None) of every trial post
    the app answered, whichever way the page sent it (fetch, or sendBeacon as it went away),
    a crash as 500: 409 ``trial_index_taken`` is a trial run twice.
    """

    def __init__(self, app):
        self.app = app
        self.offline = False
        self.record_errors = False
        self.trial_posts: list[tuple[str, int, str | None]] = []

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if self.offline and path.startswith(NETWORK_PATHS):
            environ["werkzeug.socket"].shutdown(socket.SHUT_RDWR)
            # werkzeug treats this as a connection the client dropped: nothing is written.
            raise ConnectionResetError("test network switched off")
        if environ.get("REQUEST_METHOD") == "POST" and path.endswith("/trials"):
            return self._noting_trial_post(path, environ, start_response)
        if path == ERROR_RECORDER_PATH:
            start_response("200 OK", [("Content-Type", "text/javascript"),
                                      ("Content-Length", str(len(ERROR_RECORDER)))])
            return [ERROR_RECORDER]
        if not self.record_errors:
            return self.app(environ, start_response)
        return self._with_recorder(environ, start_response)

    def _noting_trial_post(self, path, environ, start_response):
        """The app's answer to a trial post (JSON, never a page), noted in ``trial_posts``."""
        try:
            status, headers, body = _held_answer(self.app, environ)
            data = _read(body)
        except Exception:  # TESTING lets the app's exception through: werkzeug answers 500
            self.trial_posts.append((path, 500, None))
            raise
        code = int(status.split()[0])
        try:
            error = json.loads(data).get("error") if code >= 400 else None
        except ValueError:
            error = None
        self.trial_posts.append((path, code, error))
        start_response(status, headers)
        return [data]

    def _with_recorder(self, environ, start_response):
        status, headers, body = _held_answer(self.app, environ)
        if not any(k.lower() == "content-type" and v.startswith("text/html") for k, v in headers):
            start_response(status, headers)
            return body
        tag = f'<head>\n  <script src="{ERROR_RECORDER_PATH}"></script>'.encode()
        html = _read(body).replace(b"<head>", tag, 1)
        start_response(status, [(k, str(len(html)) if k.lower() == "content-length" else v)
                                for k, v in headers])
        return [html]


def _held_answer(app, environ):
    """The app's answer (status, headers, body iterable), held back from the server so that
    the middleware may read or change it before answering."""
    answer = {}

    def hold(status, headers, exc_info=None):
        answer.update(status=status, headers=headers)
        return lambda data: None  # Flask answers with the iterable, never with write()

    body = app(environ, hold)
    return answer["status"], answer["headers"], body


def _read(body) -> bytes:
    try:
        return b"".join(body)
    finally:
        getattr(body, "close", lambda: None)()


@contextmanager
def writing(app):
    """The ORM session of an app context, writing in one transaction that begins IMMEDIATE as
    the app's own writers do (webapp/database.py), committed at the end.  A test's read-then-write
    in a plain (DEFERRED) transaction fails at once with "database is locked" on SQLite when a
    live page's request wrote in between (seen in CI)."""
    from webapp.extensions import db

    with app.app_context():
        db.session.connection(execution_options={"sqlite_begin": "IMMEDIATE"})
        yield db.session
        db.session.commit()


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site")
    app = make_app(tmp, f"sqlite:///{tmp / 'site.db'}")
    store_tiny_stimuli(app)
    slugs = {}
    for kind, design in tiny_designs().items():
        slug = f"tiny-{kind.replace('_', '-')}"
        # Frame ordering needs no keyboard: its study takes tablets too, so that a touch-only
        # browser (tests/browser/test_session_frame_order.py) can drag with its finger.
        devices = ("desktop", "tablet") if kind == "frame_order" else ("desktop",)
        open_site_study(app, slug, design, devices=devices)
        slugs[kind] = slug
    faults = Faults(app)
    server = make_server("127.0.0.1", 0, faults, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Site(app=app, base_url=f"http://127.0.0.1:{server.server_port}", slugs=slugs,
               faults=faults)
    server.shutdown()
    thread.join(timeout=5)
    from webapp.extensions import db

    with app.app_context():
        db.engine.dispose()
