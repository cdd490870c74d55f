"""Gunicorn servers for the benchmarks: the real app, or a bare Flask app as the yardstick.

A server runs as a child process group on a free local port; workers can be listed and
killed, and the whole server stopped and started again on the same port.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil

PROJECT_ROOT = Path(__file__).resolve().parents[2]
GUNICORN_CONF = PROJECT_ROOT / "webapp" / "gunicorn.conf.py"
APP_TARGET = "webapp:create_app()"
BARE_TARGET = "bench.harness.bare:create_bare_app()"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """One gunicorn master and its workers; ``env`` is added to this process's environment."""

    def __init__(self, target: str = APP_TARGET, workers: int = 4, env: dict | None = None,
                 ready_path: str = "/api/openapi.json", log_path: Path | None = None):
        self.target, self.workers, self.ready_path = target, workers, ready_path
        self.env = {**os.environ, **(env or {}), "PYTHONPATH": str(PROJECT_ROOT)}
        self.port = free_port()
        self.log_path = log_path
        self.process: subprocess.Popen | None = None
        self.restarts = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60) -> "Server":
        command = [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF),
                   "-b", f"127.0.0.1:{self.port}", "-w", str(self.workers), self.target]
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=self.env, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready(timeout_s)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode} (log: {self.log_path})")
            try:
                with urllib.request.urlopen(self.base_url + self.ready_path, timeout=2) as answer:
                    if answer.status == 200 and len(self.worker_pids()) >= self.workers:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"gunicorn not ready after {timeout_s} s (log: {self.log_path})")

    def worker_pids(self) -> list[int]:
        if self.process is None or self.process.poll() is not None:
            return []
        try:
            return [child.pid for child in psutil.Process(self.process.pid).children()]
        except psutil.NoSuchProcess:
            return []

    def kill_worker(self, rng) -> int | None:
        """SIGKILL one worker chosen by ``rng``; the master forks a replacement."""
        pids = self.worker_pids()
        if not pids:
            return None
        pid = pids[int(rng.integers(len(pids)))]
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        return pid

    def stop(self, timeout_s: float = 30) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)  # graceful: workers finish their request
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def restart(self) -> None:
        """Stop the whole server and start it again on the same port (clients see refusals)."""
        self.stop()
        self.start()
        self.restarts += 1

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
