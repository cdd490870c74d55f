"""The one rate limiter: limits, client keys, and counts that every worker and server shares,
in Redis and in the database (SQLite and PostgreSQL).  Each test counts under a scope of its
own, so tests on the one Redis of the machine never meet."""
import threading
import uuid

import pytest
import redis
from sqlalchemy import func, select

from bench.harness.server import Server
from bench.harness.site import build_site
from tests.factories import make_app
from tests.webapp.test_deploy import sign_in_attempts
from webapp import create_app, rate_limits
from webapp.extensions import db
from webapp.models import RateLimitCounter

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(params=["sqlite", "postgresql", "redis"])
def store_apps(request, tmp_path):
    """Two apps, as two workers of one server (or two servers), on one store."""
    if request.param == "redis":
        try:
            redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
        except redis.ConnectionError as error:
            pytest.skip(f"Redis unreachable at {REDIS_URL}: {error}")
    url = (request.getfixturevalue("postgres_url") if request.param == "postgresql"
           else f"sqlite:///{tmp_path / 'test.db'}")
    storage = {"RATELIMIT_STORAGE_URI": REDIS_URL if request.param == "redis" else None}
    apps = [make_app(tmp_path / str(n), url, **storage) for n in range(2)]
    yield apps
    for app in apps:
        with app.app_context():
            db.engine.dispose()


def hits(app, limit, scope, n=1):
    with app.app_context():
        return [rate_limits.hit("TEST", limit, scope) for _ in range(n)]


def test_two_workers_count_once(store_apps):
    first, second = store_apps
    scope = uuid.uuid4().hex
    assert hits(first, "3 per hour", scope, 2) + hits(second, "3 per hour", scope) == [0, 0, 0]
    refused = hits(second, "3 per hour", scope) + hits(first, "3 per hour", scope)
    # Until the sliding hour holds under 3 again: at most 4/3 of an hour (the estimate).
    assert all(60 < wait <= 4800 for wait in refused) and refused[0] - refused[1] in (0, 1)
    assert hits(first, "3 per hour", uuid.uuid4().hex) == [0]  # another scope is free


def test_concurrent_hits_never_pass_the_limit(store_apps):
    scope, answers = uuid.uuid4().hex, []

    def worker(app):
        answers.extend(hits(app, "10 per hour", scope, 5))

    threads = [threading.Thread(target=worker, args=(store_apps[n % 2],)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers.count(0) == 10 and len(answers) == 30


def test_refused_requests_write_nothing(tmp_path):
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'test.db'}")
    assert hits(app, "2 per hour", "x", 2) == [0, 0]
    with app.app_context():
        written = list(db.session.execute(select(RateLimitCounter.key, RateLimitCounter.hits)))
    assert hits(app, "2 per hour", "x", 50).count(0) == 0
    with app.app_context():
        assert list(db.session.execute(select(RateLimitCounter.key,
                                              RateLimitCounter.hits))) == written


def test_a_window_edge_lets_no_double_burst_through(tmp_path, monkeypatch):
    """Fixed windows let 2 x the count through across an edge; the sliding estimate does not."""
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'test.db'}")
    clock = [3600 * 1000 + 59.0]  # one second before a minute's edge
    monkeypatch.setattr(rate_limits.time, "time", lambda: clock[0])
    assert hits(app, "10 per minute", "edge", 10).count(0) == 10
    clock[0] += 2  # just after the edge
    assert hits(app, "10 per minute", "edge", 10).count(0) == 0
    clock[0] += 30  # half the last window has slid out: about half the count again
    assert hits(app, "10 per minute", "edge", 10).count(0) == 5


def test_old_windows_are_deleted(tmp_path, monkeypatch):
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'test.db'}")
    clock = [1_000_000.0]
    monkeypatch.setattr(rate_limits.time, "time", lambda: clock[0])
    hits(app, "5 per minute", "a", 3)
    clock[0] += 3600
    hits(app, "5 per minute", "b")
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(RateLimitCounter)) == 1


@pytest.mark.parametrize("address, key", [
    ("192.0.2.7", "192.0.2.7"),
    ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
    ("2001:DB8:1:2::ffff", "2001:db8:1:2::/64"),
    ("fe80::1%eth0", "fe80::/64"),
    ("::ffff:192.0.2.7", "192.0.2.7"),  # an IPv4 client of a dual-stack socket
    ("", "unknown"),
    ("not an address", "not an address"),
])
def test_client_keys(address, key):
    assert rate_limits.client_key(address) == key


@pytest.mark.parametrize("text, limit", [
    ("10 per minute", (10, 60)), ("3 per 10 minutes", (3, 600)), ("20/hour", (20, 3600)),
    ("1 per 2 days", (1, 172800)), ("5 PER SECOND", (5, 1)),
])
def test_limits_are_read(text, limit):
    assert tuple(vars(rate_limits.parse_limit(text)).values()) == limit


@pytest.mark.parametrize("text", ["", "ten per minute", "0 per hour", "5 per 0 hours",
                                  "5 per fortnight", "5"])
def test_a_bad_limit_stops_the_app_at_start(tmp_path, text):
    with pytest.raises(ValueError, match="COUNT per"):
        create_app({"TESTING": True, "INSTANCE_PATH": str(tmp_path),
                    "LOGIN_ATTEMPTS_PER_ADDRESS": text})


@pytest.mark.parametrize("url", ["memory://", "mongodb://x", "redis"])
def test_a_store_other_workers_cannot_see_is_refused(tmp_path, url):
    with pytest.raises(ValueError, match="shared by every worker"):
        create_app({"TESTING": True, "INSTANCE_PATH": str(tmp_path),
                    "RATELIMIT_STORAGE_URI": url})


def test_an_unreachable_redis_answers_503_not_500(tmp_path):
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'test.db'}",
                    RATELIMIT_STORAGE_URI="redis://127.0.0.1:1/0")
    response = app.test_client().post("/auth/login", data={"username": "ada", "password": "x"})
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    with app.app_context():
        db.engine.dispose()


def test_the_default_store_counts_once_across_gunicorn_workers(tmp_path):
    """The red team got 40 sign-ins through in 4.3 s against 10 a minute: each of 4 workers
    counted in its own memory.  The default (no Redis) counts in the database."""
    site = build_site(tmp_path)
    with Server(workers=4, env=site.env(), log_path=tmp_path / "gunicorn.log") as server:
        statuses = sign_in_attempts(server.port, 20)
        workers = len(server.worker_pids())
    assert workers == 4 and statuses == [401] * 10 + [429] * 10


@pytest.mark.parametrize("hops, counted", [(0, "10.0.0.1"), (1, "198.51.100.2")])
def test_x_forwarded_for_is_read_only_from_the_configured_proxies(tmp_path, hops, counted):
    """The last ``hops`` entries are the proxies' own; earlier ones the client could write."""
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'test.db'}", PROXY_HOPS=hops)
    app.add_url_rule("/whoami", "whoami", rate_limits.client)
    answer = app.test_client().get("/whoami", environ_base={"REMOTE_ADDR": "10.0.0.1"},
                                   headers={"X-Forwarded-For": "203.0.113.9, 198.51.100.2"})
    assert answer.get_data(as_text=True) == counted
    with app.app_context():
        db.engine.dispose()
