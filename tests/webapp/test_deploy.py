"""Production as documented: the shipped stack (webapp/deploy: the nginx site's files and the
environment file; webapp/gunicorn.conf.py) started as it is, Debian's nginx in front of real
gunicorn with 4 workers, PostgreSQL and Redis, on loopback only.  Each client sends from a
loopback address of its own, random per run: Redis keeps counts across runs for an hour."""
import os
import random
import re
import shutil
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlencode

import pytest
import redis
import sqlalchemy as sa

from bench.harness.client import exchange, header
from bench.harness.participants import Outcome, Participant
from bench.harness.proxy import DEPLOY, NGINX, Proxy, shipped_env
from bench.harness.server import Server
from bench.harness.site import build_site, fresh_postgres

CSRF = re.compile(rb'name="csrf_token" type="hidden" value="([^"]+)"')


def new_address() -> str:
    return f"127.{random.randrange(3, 255)}.{random.randrange(256)}.{random.randrange(1, 255)}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory, postgres_server_url):
    if not Path(NGINX).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("Debian's nginx is not installed (make debian)")
        pytest.skip("Debian's nginx is not installed (make debian)")
    try:
        redis.Redis.from_url(shipped_env({})["CHRONOSCOPE_RATELIMIT_STORAGE_URI"]).ping()
    except redis.ConnectionError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Redis unreachable: {error}")
        pytest.skip(f"Redis unreachable: {error}")
    folder = tmp_path_factory.mktemp("stack")
    server_url = postgres_server_url.url.render_as_string(hide_password=False)
    site = build_site(folder, fresh_postgres(server_url))
    with Server(workers=4, env=shipped_env(site.env()), log_path=folder / "gunicorn.log") as server, \
            Proxy(server.port, folder / "nginx") as proxy:
        yield site, server, proxy
    with postgres_server_url.connect() as connection:
        name = sa.engine.make_url(site.database_url).database
        connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def get(base_url, path, source, headers=None):
    port = int(base_url.rsplit(":", 1)[1])
    return exchange("127.0.0.1", port, 30, "GET", path, headers=headers, source=source)


def test_participants_get_through_and_every_trial_is_stored(stack):
    site, _, proxy = stack
    outcome, people = Outcome(started=time.monotonic()), []
    for n in range(3):
        people.append(Participant(proxy.base_url, site.slug, f"p{n}", 0, time.time() + 120,
                                  outcome, seed=n, source=new_address()))
    threads = [threading.Thread(target=p.session, args=(f"{p.name}-{uuid.uuid4().hex[:8]}",))
               for p in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [f for p in people for f in p.failures] == []
    # Every session ended; the simulated participants guess attention checks.
    assert set(outcome.sessions.values()) <= {"completed", "failed_attention"}
    assert len(outcome.sessions) == 3
    sent = {s.client_uuid for p in people for s in p.sent}
    engine = sa.create_engine(site.database_url)
    with engine.connect() as connection:
        stored = set(connection.scalars(sa.text("SELECT client_uuid FROM trial")))
    engine.dispose()
    assert len(sent) == 14 * 3 and sent <= stored


def test_pages_keep_the_app_s_headers_and_name_no_version(stack):
    _, _, proxy = stack
    status, headers, _ = get(proxy.base_url, "/auth/login", new_address())
    assert status == 200
    assert [name for name, _ in headers].count("Content-Security-Policy") == 1
    assert header(headers, "Server") == "nginx"


def test_the_app_counts_the_client_not_the_proxy_nor_a_forged_header(stack):
    """New sessions per address and study (3 an hour) through the proxy."""
    site, _, proxy = stack
    client = new_address()
    codes = [get(proxy.base_url, f"/p/{site.slug}?participant=f{uuid.uuid4().hex[:8]}", client,
                 {"X-Forwarded-For": f"203.0.113.{n}"})[0] for n in range(5)]
    assert codes == [303, 303, 303, 429, 429]
    assert get(proxy.base_url, f"/p/{site.slug}?participant=o{uuid.uuid4().hex[:8]}",
               new_address())[0] == 303


def sign_in_attempts(port, n, headers=None, source=None) -> list[int]:
    status, answer, body = exchange("127.0.0.1", port, 30, "GET", "/auth/login",
                                    headers=headers, source=source)
    cookie = next(value.split(";", 1)[0] for name, value in answer
                  if name.lower() == "set-cookie" and value.startswith("session="))
    token = CSRF.search(body).group(1).decode()
    statuses = []
    for i in range(n):
        form = urlencode({"csrf_token": token, "username": f"guess-{uuid.uuid4().hex[:8]}",
                          "password": "not the password"}).encode()
        statuses.append(exchange("127.0.0.1", port, 30, "POST", "/auth/login", form, {
            **(headers or {}), "Cookie": cookie,
            "Content-Type": "application/x-www-form-urlencoded"}, source)[0])
    return statuses


def test_sign_in_limits_hold_across_the_four_workers(stack):
    """The red team got 40 sign-ins through in 4.3 s against 10 a minute (counts per worker).
    Straight to gunicorn, as the proxy would send them (one X-Forwarded-For it trusts)."""
    _, server, _ = stack
    forwarded = {"X-Forwarded-For": f"10.{random.randrange(256)}.{random.randrange(256)}.1"}
    statuses = sign_in_attempts(server.port, 20, forwarded)
    assert statuses == [401] * 10 + [429] * 10


def test_the_proxy_refuses_a_sign_in_flood_before_the_app(stack):
    _, _, proxy = stack
    source = new_address()
    statuses = sign_in_attempts(proxy.port, 10, source=source)
    assert statuses[:6] == [401] * 6 and set(statuses[6:]) == {429}  # 10 a minute, burst 5
    status, headers, body = exchange("127.0.0.1", proxy.port, 30, "POST", "/auth/login", b"",
                                     source=source)
    assert status == 429 and header(headers, "Retry-After") == "2"
    assert header(headers, "Content-Security-Policy").startswith("default-src 'none'")
    assert b"try again" in body


def test_the_proxy_holds_a_flood_of_the_cheapest_route(stack):
    _, server, proxy = stack
    source = new_address()
    statuses = [get(proxy.base_url, "/api/openapi.json", source)[0] for _ in range(60)]
    assert statuses.count(200) >= 31 and statuses.count(429) >= 1  # a burst of 30, 5 a second
    assert statuses.count(200) + statuses.count(429) == 60


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test certificate")
def test_the_production_site_file_is_valid_nginx(tmp_path):
    """The TLS site as shipped, with only its certificate paths and ports replaced."""
    import subprocess

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost", "-days", "1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    site = (DEPLOY / "nginx" / "chronoscope-site.conf").read_text()
    site = re.sub(r"/etc/letsencrypt/\S+/fullchain\.pem", str(cert), site)
    site = re.sub(r"/etc/letsencrypt/\S+/privkey\.pem", str(key), site)
    site = site.replace("snippets/chronoscope-locations.conf",
                        str(DEPLOY / "nginx" / "chronoscope-locations.conf"))
    (tmp_path / "site.conf").write_text(site)
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid; error_log stderr; events {{}} http {{ "
        f"include {DEPLOY / 'nginx' / 'chronoscope-http.conf'}; include {tmp_path}/site.conf; }}")
    checked = subprocess.run([NGINX, "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"),
                              "-e", "stderr"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
