"""Debian's nginx in front of a server, with the shipped site's files (webapp/deploy/nginx)
included as they are, listening on loopback only, from a temporary prefix."""
from __future__ import annotations

import getpass
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from bench.harness.server import PROJECT_ROOT, free_port

DEPLOY = PROJECT_ROOT / "webapp" / "deploy"
# What each machine sets for itself; everything else comes from the shipped environment file.
OWN = ("CHRONOSCOPE_SECRET_KEY", "CHRONOSCOPE_DATABASE_URL", "CHRONOSCOPE_INSTANCE_PATH",
       "CHRONOSCOPE_STIMULUS_ROOT")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
# The production site (chronoscope-site.conf) with TLS and a public name left out: its upstream
# and one loopback server around the shipped locations.
_CONF = """
user {user};
worker_processes 2;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    include {deploy}/nginx/chronoscope-http.conf;
    upstream chronoscope {{ server 127.0.0.1:{upstream}; }}
    server {{
        listen 127.0.0.1:{port};
        include {deploy}/nginx/chronoscope-locations.conf;
    }}
}}
"""


def shipped_env(site_env: dict) -> dict:
    """webapp/deploy/chronoscope.env as a server reads it, with this site's own key, database
    and folders (the OWN names of ``site_env``)."""
    lines = (DEPLOY / "chronoscope.env").read_text().splitlines()
    pairs = (line.split("=", 1) for line in lines if line.strip() and not line.startswith("#"))
    env = {name.strip(): value.strip() for name, value in pairs}
    return {**env, **{name: value for name, value in site_env.items() if name in OWN}}


class Proxy:
    def __init__(self, upstream_port: int, prefix: Path):
        self.upstream_port, self.prefix = upstream_port, Path(prefix)
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30) -> "Proxy":
        self.prefix.mkdir(parents=True, exist_ok=True)
        conf = self.prefix / "nginx.conf"
        conf.write_text(_CONF.format(user=getpass.getuser(), prefix=self.prefix, deploy=DEPLOY,
                                     upstream=self.upstream_port, port=self.port))
        command = [NGINX, "-p", str(self.prefix), "-c", str(conf), "-e", "stderr"]
        subprocess.run([*command, "-t", "-q"], check=True, capture_output=True)
        self.process = subprocess.Popen([*command, "-g", "daemon off;"], start_new_session=True,
                                        stderr=open(self.prefix / "stderr.log", "ab"))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited with {self.process.returncode} "
                                   f"(log: {self.prefix / 'stderr.log'})")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"nginx not listening after {timeout_s} s")

    def stop(self, timeout_s: float = 10) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGQUIT)  # graceful: open requests are answered
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> "Proxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
