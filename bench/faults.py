"""Faults injected while simulated participants run (issue 6).

Each fault is a context manager running beside the load, counting what it did:

* :class:`WorkerKiller` — SIGKILL a random gunicorn worker every ``every_s`` seconds;
* :class:`LockHolder` — an outside connection holds the database write lock for longer than
  the server's busy timeout, so writers wait it out and answer 503 + Retry-After;
* :class:`Exporter` — a signed-in researcher downloads the study export from the server for
  ``busy_s`` of every ``every_s`` seconds, while a read transaction is held open for the whole
  window, as a long export's snapshot is;
* :class:`Restarter` — stop the whole server and start it again mid-run.
"""
from __future__ import annotations

import io
import threading
import time
import zipfile

import numpy as np
import sqlalchemy as sa

from bench.harness.client import Researcher
from bench.harness.site import RESEARCHER


class Fault:
    """A thread that calls ``step`` on a schedule until the ``with`` block ends."""

    first_s = 1.0
    every_s = 1.0

    def __init__(self):
        self.stop = threading.Event()
        self.count = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        if self.stop.wait(self.first_s):
            return
        while not self.stop.is_set():
            began = time.monotonic()
            if self.step():
                self.count += 1
            self.stop.wait(max(0.0, self.every_s - (time.monotonic() - began)))

    def step(self) -> bool:
        raise NotImplementedError

    def summary(self) -> str:
        return f"{type(self).__name__}: {self.count}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


class WorkerKiller(Fault):
    def __init__(self, server, every_s: float = 1.0, seed: int = 0):
        super().__init__()
        self.server, self.every_s, self.rng = server, every_s, np.random.default_rng(seed)

    def step(self) -> bool:
        return self.server.kill_worker(self.rng) is not None

    def summary(self) -> str:
        return f"{self.count} workers SIGKILLed"


class Restarter(Fault):
    """Restart the server once, ``at_s`` seconds into the run."""

    def __init__(self, server, at_s: float):
        super().__init__()
        self.server, self.first_s = server, at_s

    def _loop(self) -> None:
        if not self.stop.wait(self.first_s):
            began = time.monotonic()
            self.server.restart()
            self.count, self.down_s = 1, time.monotonic() - began

    def summary(self) -> str:
        down = getattr(self, "down_s", 0.0)
        return f"{self.count} restart(s), down {down:.1f} s"


class LockHolder(Fault):
    """Take the write lock from outside the app and keep it ``hold_s`` (> the busy timeout)."""

    def __init__(self, database_url: str, hold_s: float, every_s: float, first_s: float = 2.0):
        super().__init__()
        self.url, self.hold_s, self.every_s, self.first_s = database_url, hold_s, every_s, first_s
        self.engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)

    def step(self) -> bool:
        with self.engine.connect() as connection:
            raw = connection.connection.dbapi_connection
            if self.engine.dialect.name == "sqlite":
                raw.isolation_level = None
                raw.execute("BEGIN IMMEDIATE")  # the same lock every app writer takes
            else:
                connection.exec_driver_sql("BEGIN")
                connection.exec_driver_sql("LOCK TABLE trial IN EXCLUSIVE MODE")
            self.stop.wait(self.hold_s)
            raw.rollback()
        return True

    def summary(self) -> str:
        return f"{self.count} x lock held {self.hold_s:.1f} s"

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self.engine.dispose()


class Exporter(Fault):
    """A researcher downloading the study's export from the server, as the dashboard's button
    does, back to back for ``busy_s`` of every ``every_s`` seconds, while a read transaction is
    held open for the whole window, as a long export's snapshot is.

    The export runs in a gunicorn worker beside the participants' requests, as it does in
    production; every download must be a complete zip.
    """

    def __init__(self, server, site, busy_s: float = 7.0, every_s: float = 8.0):
        super().__init__()
        self.server, self.site, self.busy_s, self.every_s = server, site, busy_s, every_s
        self.first_s = every_s - busy_s
        self.reader = sa.create_engine(site.database_url, poolclass=sa.pool.NullPool)
        self.exports, self.longest_s, self.failed = 0, 0.0, []

    def step(self) -> bool:
        researcher = Researcher(self.server.base_url, *RESEARCHER)
        window_end = time.monotonic() + self.busy_s
        with self.reader.connect() as held:  # the long read snapshot an export holds
            held.exec_driver_sql("BEGIN")
            held.exec_driver_sql("SELECT count(*) FROM trial").all()
            while time.monotonic() < window_end and not self.stop.is_set():
                began = time.monotonic()
                status, body = researcher.request(
                    "GET", f"/researcher/studies/{self.site.slug}/export.zip")
                self.longest_s = max(self.longest_s, time.monotonic() - began)
                self.exports += 1
                if status != 200 or not zipfile.is_zipfile(io.BytesIO(body)):
                    self.failed.append(status)
            held.exec_driver_sql("ROLLBACK")
        return True

    def summary(self) -> str:
        failed = f", {len(self.failed)} FAILED {sorted(set(self.failed))}" if self.failed else ""
        return (f"{self.count} export windows, {self.exports} exports over HTTP, "
                f"longest {self.longest_s:.2f} s{failed}")

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self.reader.dispose()
