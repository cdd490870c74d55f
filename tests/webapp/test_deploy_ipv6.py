"""The shipped nginx zones count an IPv6 client by its /64, as the app does: a host picks any
address in its /64 at will, so a zone keyed by the address gave one host 2^64 allowances
(password attempts, pages, participant routes alike).

Loopback has one IPv6 address, so this nginx takes the client's address from a header sent
over loopback (the realip module, test configuration only) and passes everything to a
stand-in upstream of its own: only nginx's refusals are under test."""
import getpass
import os
import socket
import subprocess
from pathlib import Path

import pytest

from bench.harness.client import exchange
from bench.harness.proxy import DEPLOY, NGINX, Proxy
from bench.harness.server import free_port
from tests.waiting import wait_until

_CONF = """
user {user};
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    include {deploy}/nginx/chronoscope-http.conf;
    upstream chronoscope {{ server 127.0.0.1:{upstream}; }}
    server {{ listen 127.0.0.1:{upstream}; location / {{ return 200 "upstream\\n"; }} }}
    server {{
        listen 127.0.0.1:{port};
        set_real_ip_from 127.0.0.1;
        real_ip_header X-Test-Client;
        include {deploy}/nginx/chronoscope-locations.conf;
    }}
}}
"""


@pytest.fixture
def proxy(tmp_path):
    if not Path(NGINX).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("Debian's nginx is not installed")
        pytest.skip("Debian's nginx is not installed")
    proxy = Proxy(free_port(), tmp_path)  # its stop(); started here with this configuration
    (tmp_path / "nginx.conf").write_text(_CONF.format(
        user=getpass.getuser(), prefix=tmp_path, deploy=DEPLOY, upstream=proxy.upstream_port,
        port=proxy.port))
    command = [NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"), "-e", "stderr"]
    proxy.process = subprocess.Popen([*command, "-g", "daemon off;"], start_new_session=True,
                                     stderr=open(tmp_path / "stderr.log", "ab"))
    try:
        wait_until(lambda: listening(proxy.port) or proxy.process.poll() is not None, 30,
                   "nginx neither listened nor exited in 30 s", every_s=0.05)
        assert proxy.process.poll() is None, (tmp_path / "stderr.log").read_text()
        yield proxy
    finally:
        proxy.stop()


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def sign_in_posts(port: int, addresses: list[str]) -> list[int]:
    return [exchange("127.0.0.1", port, 30, "POST", "/auth/login", b"",
                     {"X-Test-Client": address})[0] for address in addresses]


def test_addresses_of_one_ipv6_64_share_the_password_zone(proxy):
    # 10 a minute per client, a burst of 5: the same as from one address.
    statuses = sign_in_posts(proxy.port, [f"2001:db8:1:2::{n + 1:x}" for n in range(10)])
    assert statuses[:6] == [200] * 6 and statuses.count(429) >= 3


def test_each_ipv6_64_and_ipv4_address_is_a_client_of_its_own(proxy):
    addresses = [f"2001:db8:1:{n:x}::1" for n in range(5)] + [f"192.0.2.{n}" for n in range(5)]
    assert sign_in_posts(proxy.port, addresses) == [200] * 10
