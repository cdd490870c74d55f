"""The benchmark scenarios (L1, L2, F1-F3, restart) as functions returning one table row each.

Every scenario builds a fresh site, serves it with gunicorn, runs simulated participants
beside its faults, and audits the database against what the clients sent.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench import faults
from bench.harness.audit import Audit, audit
from bench.harness.participants import Outcome, run_participants
from bench.harness.server import BARE_TARGET, Server
from bench.harness.site import Site, build_site, fresh_postgres


@dataclass
class Run:
    """Where to run: a work folder and, optionally, a PostgreSQL server URL."""

    folder: Path
    database: str | None = None  # postgresql+psycopg://... server URL; None: SQLite
    workers: int = 4
    seed: int = 0
    notes: list[str] = field(default_factory=list)

    def site(self, name: str) -> Site:
        url = fresh_postgres(self.database) if self.database else None
        return build_site(self.folder / name, url)


@dataclass
class Row:
    name: str
    participants: int
    duration_s: float
    outcome: Outcome
    audit: Audit | None
    faults: str = ""

    def trial_latencies_ms(self) -> np.ndarray:
        """Trial POST attempts that got an answer (refused connections have no latency)."""
        return np.array([a.seconds * 1000 for a in self.outcome.attempts
                         if a.kind == "trial" and a.status and a.status < 500], dtype=float)

    def stats(self) -> dict:
        lat = self.trial_latencies_ms()
        pct = (lambda q: float(np.percentile(lat, q))) if lat.size else (lambda q: float("nan"))
        statuses = [a.status for a in self.outcome.attempts]
        acked = sum(s.status in (200, 201) for s in self.outcome.sent)
        elapsed = max(self.outcome.ended - self.outcome.started, 1e-9)
        return {"trials": acked, "trials_per_s": acked / elapsed, "p50_ms": pct(50),
                "p95_ms": pct(95), "p99_ms": pct(99), "max_ms": float(lat.max()) if lat.size else float("nan"),
                "n503": statuses.count(503), "conn_errors": statuses.count(0),
                "n5xx_other": sum(500 <= s != 503 for s in statuses if s)}


def _serve(run: Run, site: Site, busy_timeout_ms: int | None = None) -> Server:
    log = site.instance / "gunicorn.log"
    return Server(workers=run.workers, env=site.env(busy_timeout_ms), log_path=log)


def load(run: Run, name: str, participants: int, duration_s: float, think_s: float,
         make_faults=lambda server, site: (), busy_timeout_ms: int | None = None) -> Row:
    """One scenario: serve a fresh site, run participants beside the faults, audit."""
    site = run.site(name)
    with _serve(run, site, busy_timeout_ms) as server, contextlib.ExitStack() as stack:
        active = [stack.enter_context(f) for f in make_faults(server, site)]
        outcome = run_participants(server.base_url, site.slug, participants, duration_s,
                                   think_s, seed=run.seed)
        stack.close()
        summary = "; ".join(f.summary() for f in active)
    return Row(name, participants, duration_s, outcome, audit(site.database_url, site.slug, outcome),
               summary)


def bare(run: Run, participants: int, duration_s: float) -> Row:
    """L2's yardstick: the same clients against a bare Flask endpoint (no database)."""
    run.folder.mkdir(parents=True, exist_ok=True)
    with Server(BARE_TARGET, workers=run.workers, log_path=run.folder / "bare.log") as server:
        outcome = run_participants(server.base_url, "bare", participants, duration_s, 0.0,
                                   seed=run.seed)
    return Row("L2-bare", participants, duration_s, outcome, None, "no database")


def l1(run: Run, duration_s: float, participants: int = 200, think_s: float = 2.0) -> Row:
    return load(run, "L1", participants, duration_s, think_s)


def l2(run: Run, duration_s: float, participants: int = 50) -> Row:
    return load(run, "L2", participants, duration_s, 0.0)


def f1(run: Run, duration_s: float, participants: int = 50, every_s: float = 1.0) -> Row:
    return load(run, "F1", participants, duration_s, 0.0, lambda server, site: (
        faults.WorkerKiller(server, every_s, seed=run.seed),))


def f2(run: Run, duration_s: float, participants: int = 200, think_s: float = 2.0,
       busy_s: float = 7.0, every_s: float = 8.0) -> Row:
    return load(run, "F2", participants, duration_s, think_s, lambda server, site: (
        faults.Exporter(server, site, busy_s, every_s),))


def f3(run: Run, duration_s: float, participants: int = 50, think_s: float = 1.0,
       busy_timeout_ms: int | None = None, hold_s: float = 7.0, every_s: float = 15.0) -> Row:
    """The lock is held ``hold_s``, longer than the busy timeout (5 s unless given)."""
    return load(run, "F3", participants, duration_s, think_s, lambda server, site: (
        faults.LockHolder(site.database_url, hold_s, every_s),), busy_timeout_ms=busy_timeout_ms)


def restart(run: Run, duration_s: float, participants: int = 50, think_s: float = 1.0) -> Row:
    return load(run, "restart", participants, duration_s, think_s, lambda server, site: (
        faults.Restarter(server, duration_s / 2),))
