"""Login flood: participants' trial latency while clients flood ``/auth/login`` or the cheapest
route, through the production stack as shipped.

    python bench/login_flood.py                  # 3 rounds x 5 phases of 20 s, through nginx
    python bench/login_flood.py --rounds 5 --seconds 30
    python bench/login_flood.py --direct         # gunicorn alone, no proxy (the old setup)
    python bench/login_flood.py --database sqlite

One server for the whole run: Debian's nginx with the shipped site (webapp/deploy/nginx, on a
loopback port, bench/harness/proxy.py) in front of gunicorn (webapp/gunicorn.conf.py, 4 sync
workers) started from the shipped environment (webapp/deploy/chronoscope.env: Redis for the
rate limits, one trusted proxy) on a fresh PostgreSQL database.  Only the limits on new sessions
are lifted, since one study takes every simulated participant.  In each phase simulated
participants (bench/harness) take trials with a think time, each from a loopback address of
its own (127.0.2.x), beside flooding clients in another process (so that their Python does not
hold this one's GIL, and at nice 19, since they stand for other machines), each from its own
address (127.0.1.x) and sending its next request as soon as the last is answered, for the
phase's length and no longer:

* ``unloaded``: no flood, the baseline;
* ``login 8``, ``login 32``: wrong passwords, half for the site's real researcher and half for
  made-up usernames, with a fresh session and CSRF token every 50 attempts, as a script would;
* ``cheapest 8``, ``cheapest 32``: GET /api/openapi.json, the app's cheapest route.

Phases are interleaved, rotating their order each round, so the host's drift hits them alike.
The table gives, per phase, the median over rounds of the trial p50 and p99 with their range,
the ratio of those medians to the unloaded ones of this run, the flood's answers per second by
status (429/503 from nginx or the app, 401 a password hashed), and the 1-minute load average at
the phase's end.  Trials lost: acknowledged but not stored, or given up on after the retry
budget.  Goal: participants' p99 with 32 flooders within 2x of unloaded, 0 trials lost.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa  # noqa: E402

from bench.harness.client import exchange  # noqa: E402
from bench.harness.participants import run_participants  # noqa: E402
from bench.harness.proxy import Proxy, shipped_env  # noqa: E402
from bench.harness.server import Server  # noqa: E402
from bench.harness.site import RESEARCHER, build_site, fresh_postgres  # noqa: E402

CSRF = re.compile(rb'name="csrf_token" type="hidden" value="([^"]+)"')
ATTEMPTS_PER_TOKEN = 50
POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
PHASES = [("unloaded", 0), ("login", 8), ("login", 32), ("cheapest", 8), ("cheapest", 32)]


def flooder_address(i: int) -> str:
    return f"127.0.1.{i + 1}"


def cheapest_client(base_url: str, until: float, seed: int, source: str, counts: Counter) -> None:
    parts = urlsplit(base_url)
    while time.time() < until:
        try:
            counts[exchange(parts.hostname, parts.port, 10, "GET", "/api/openapi.json",
                            source=source)[0]] += 1
        except OSError:
            counts["connection error"] += 1


def login_client(base_url: str, until: float, seed: int, source: str, counts: Counter) -> None:
    """Wrong passwords back to back until ``until`` (time.time()); answers counted by status."""
    rng = random.Random(seed)
    parts = urlsplit(base_url)
    while time.time() < until:
        try:
            status, headers, body = exchange(parts.hostname, parts.port, 10, "GET", "/auth/login",
                                             source=source)
            token = CSRF.search(body)
            cookie = next((value.split(";", 1)[0] for name, value in headers
                           if name.lower() == "set-cookie" and value.startswith("session=")), "")
            if status != 200 or token is None:
                counts[f"login page {status}"] += 1
                continue
            for _ in range(ATTEMPTS_PER_TOKEN):
                if time.time() >= until:
                    return
                username = RESEARCHER[0] if rng.random() < 0.5 else f"guess-{rng.randrange(10**9)}"
                form = urlencode({"csrf_token": token.group(1).decode(), "username": username,
                                  "password": f"guess {rng.randrange(10**12)}"})
                status, _, _ = exchange(parts.hostname, parts.port, 10, "POST", "/auth/login",
                                        form.encode(), {"Cookie": cookie, "Content-Type":
                                                        "application/x-www-form-urlencoded"},
                                        source)
                counts[status] += 1
        except OSError:
            counts["connection error"] += 1


CLIENTS = {"login": login_client, "cheapest": cheapest_client}


def flood(kind: str, base_url: str, clients: int, duration_s: float, seed: int, results) -> None:
    """The flooding process: ``clients`` threads; puts its status counts on ``results``.
    At the lowest CPU priority: the flooders stand for other machines, and on this one they
    must not take the server's cores (a refusal costs nginx microseconds, a request loop in
    Python much more)."""
    os.nice(19)
    until = time.time() + duration_s
    counts = [Counter() for _ in range(clients)]
    threads = [threading.Thread(target=CLIENTS[kind], args=(base_url, until, seed * 1000 + i,
                                                            flooder_address(i), c))
               for i, c in enumerate(counts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put(dict(sum(counts, Counter())))


def phase(base_url: str, slug: str, kind: str, flooders: int, args, seed: int) -> dict:
    """One phase: participants for ``args.seconds``, beside ``flooders`` clients of ``kind``."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    flooding = None
    if flooders:
        flooding = context.Process(target=flood, args=(kind, base_url, flooders, args.seconds,
                                                       seed, results))
        flooding.start()
    outcome = run_participants(base_url, slug, args.participants, args.seconds, args.think_s,
                               seed=seed, prefix=f"{kind}{flooders}-",
                               sources=[f"127.0.2.{i + 1}" for i in range(args.participants)])
    counts = {}
    if flooding is not None:
        counts = results.get(timeout=60)
        flooding.join()
    trials = [a for a in outcome.attempts if a.kind == "trial"]
    latencies = np.array([a.seconds * 1000 for a in trials if 0 < a.status < 500])
    return {"p50": float(np.percentile(latencies, 50)), "p99": float(np.percentile(latencies, 99)),
            "trials": len(latencies), "retried": sum(not 0 < a.status < 500 for a in trials),
            "failures": len(outcome.failures), "flood": counts, "load": os.getloadavg()[0],
            "sent": outcome.sent}


def lost_trials(database_url: str, sent: list) -> int:
    """Trials acknowledged (2xx) but not stored, plus those given up on after the retry budget."""
    engine = sa.create_engine(database_url)
    with engine.connect() as connection:
        stored = set(connection.scalars(sa.text("SELECT client_uuid FROM trial")))
    engine.dispose()
    return sum(s.status is None or (200 <= s.status < 300 and s.client_uuid not in stored)
               for s in sent)


def drop_database(server_url: str, database_url: str) -> None:
    engine = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        name = sa.engine.make_url(database_url).database
        connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    engine.dispose()


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} [{min(values):.1f}-{max(values):.1f}]"


def report(results: dict[tuple, list[dict]], seconds: float) -> list[str]:
    base = {q: statistics.median(r[q] for r in results[PHASES[0]]) for q in ("p50", "p99")}
    lines = [f"{'phase':>10} | {'trials':>6} | {'p50 ms median [range]':>22} | "
             f"{'p99 ms median [range]':>22} | {'p50 x':>5} | {'p99 x':>5} | "
             f"{'flood answers/s by status':<34} | {'load1':>5} | retried | fail"]
    lines.append("-" * len(lines[0]))
    for (kind, flooders), rows in results.items():
        medians = {q: statistics.median(r[q] for r in rows) for q in ("p50", "p99")}
        statuses = sum((Counter(r["flood"]) for r in rows), Counter())
        flood = ", ".join(f"{k}: {n / (seconds * len(rows)):.0f}" for k, n in sorted(
            statuses.items(), key=str)) or "-"
        lines.append(
            f"{kind + (f' {flooders}' if flooders else ''):>10} | "
            f"{statistics.median(r['trials'] for r in rows):>6.0f} | "
            f"{spread([r['p50'] for r in rows]):>22} | {spread([r['p99'] for r in rows]):>22} | "
            f"{medians['p50'] / base['p50']:>5.2f} | {medians['p99'] / base['p99']:>5.2f} | "
            f"{flood:<34} | {statistics.median(r['load'] for r in rows):>5.2f} | "
            f"{sum(r['retried'] for r in rows):>7} | {sum(r['failures'] for r in rows)}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--participants", type=int, default=20)
    parser.add_argument("--think-s", dest="think_s", type=float, default=0.5)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--database", default=POSTGRES,
                        help="a PostgreSQL server URL (a fresh database on it), or 'sqlite'")
    parser.add_argument("--direct", action="store_true", help="no proxy: gunicorn alone")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: the servers are stopped
    results: dict[tuple, list[dict]] = {phase_: [] for phase_ in PHASES}
    with tempfile.TemporaryDirectory(prefix="chronoscope-login-flood-") as folder:
        site = build_site(Path(folder), None if args.database == "sqlite"
                          else fresh_postgres(args.database))
        # The shipped environment; only new sessions are unlimited (one study takes them all).
        env = {**shipped_env(site.env()),
               **{k: v for k, v in site.env().items() if k.startswith("CHRONOSCOPE_NEW_")}}
        with Server(workers=args.workers, env=env, log_path=site.instance / "gunicorn.log") \
                as server, Proxy(server.port, Path(folder) / "nginx") as proxy:
            base_url = server.base_url if args.direct else proxy.base_url
            for round_ in range(args.rounds):
                shift = round_ % len(PHASES)
                for n, (kind, flooders) in enumerate(PHASES[shift:] + PHASES[:shift]):
                    row = phase(base_url, site.slug, kind, flooders, args, seed=round_ * 100 + n)
                    results[kind, flooders].append(row)
                    print(f"round {round_ + 1}/{args.rounds}, {kind} {flooders}: "
                          f"p99 {row['p99']:.1f} ms", file=sys.stderr, flush=True)
                    time.sleep(2)  # let the flood's queued connections drain
        lost = lost_trials(site.database_url, [s for rows in results.values() for r in rows
                                               for s in r["sent"]])
        if args.database != "sqlite":
            drop_database(args.database, site.database_url)
    print(f"login flood {'straight to gunicorn' if args.direct else 'through nginx'}: "
          f"{args.rounds} rounds x {args.seconds:.0f} s per phase, {args.participants} "
          f"participants (think {args.think_s} s), {args.workers} workers, "
          f"{'SQLite' if args.database == 'sqlite' else 'PostgreSQL'}, {os.cpu_count()} CPUs")
    for line in report(results, args.seconds):
        print(line)
    p99 = {phase_: statistics.median(r["p99"] for r in rows) for phase_, rows in results.items()}
    for kind in ("login", "cheapest"):
        ratio = p99[kind, 32] / p99[PHASES[0]]
        print(f"goal: p99 with 32 {kind} flooders within 2x of unloaded: {ratio:.2f}x -> "
              f"{'met' if ratio <= 2 else 'NOT met'}")
    print(f"trials lost (acknowledged and not stored, or given up on): {lost}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
