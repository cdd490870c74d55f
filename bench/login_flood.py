"""Login flood: participants' trial latency while clients flood ``/auth/login``.

    python bench/login_flood.py                  # 3 rounds x 4 phases of 20 s
    python bench/login_flood.py --rounds 5 --seconds 30
    python bench/login_flood.py --no-limits      # no rate limits: as a flood from many addresses

One gunicorn server (webapp/gunicorn.conf.py, 4 sync workers, SQLite) serves a built site for
the whole run.  In each phase simulated participants (bench/harness) take trials with a think
time, beside flooding clients in another process (so that their Python does not hold this
one's GIL), each sending its next request as soon as the last is answered:

* ``unloaded``: no flood, the baseline;
* ``login 8``, ``login 32``: wrong passwords, half for the site's real researcher and half for
  made-up usernames, with a fresh session and CSRF token every 50 attempts, as a script would;
* ``control 32``: GET /api/openapi.json, the app's cheapest route: what any flood of that many
  clients costs participants on this machine, whatever the app answers.

Everything runs on 127.0.0.1, so the rate limit per address covers the whole flood;
``--no-limits`` raises the sign-in limits out of reach, to show what the one-hash-at-a-time lock
and the low priority do alone, as against a flood from more addresses than the limits tell apart.

Phases are interleaved, rotating their order each round, so the host's drift hits them alike.
The table gives, per phase, the median over rounds of the trial p50 and p99 with their range,
the ratio of those medians to the unloaded ones of this run, the flood's answers per second by
status (each 401 cost one password hash), and the 1-minute load average at the phase's end.
Goal: participants' p99 with 32 login flooders within 2x of unloaded.
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

from bench.harness.client import exchange  # noqa: E402
from bench.harness.participants import run_participants  # noqa: E402
from bench.harness.server import Server  # noqa: E402
from bench.harness.site import RESEARCHER, build_site  # noqa: E402

CSRF = re.compile(rb'name="csrf_token" type="hidden" value="([^"]+)"')
ATTEMPTS_PER_TOKEN = 50
UNLIMITED_LOGIN = {"CHRONOSCOPE_LOGIN_ATTEMPTS_PER_ADDRESS": "1000000 per minute",
                   "CHRONOSCOPE_LOGIN_FAILURES_PER_ACCOUNT": "1000000 per hour"}
PHASES = [("unloaded", 0), ("login", 8), ("login", 32), ("control", 32)]


def control_client(base_url: str, until: float, seed: int, counts: Counter) -> None:
    parts = urlsplit(base_url)
    while time.time() < until:
        try:
            counts[exchange(parts.hostname, parts.port, 10, "GET", "/api/openapi.json")[0]] += 1
        except OSError:
            counts["connection error"] += 1


def login_client(base_url: str, until: float, seed: int, counts: Counter) -> None:
    """Wrong passwords back to back until ``until`` (time.time()); answers counted by status."""
    rng = random.Random(seed)
    parts = urlsplit(base_url)
    while time.time() < until:
        try:
            status, headers, body = exchange(parts.hostname, parts.port, 10, "GET", "/auth/login")
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
                                                        "application/x-www-form-urlencoded"})
                counts[status] += 1
        except OSError:
            counts["connection error"] += 1


CLIENTS = {"login": login_client, "control": control_client}


def flood(kind: str, base_url: str, clients: int, duration_s: float, seed: int, results) -> None:
    """The flooding process: ``clients`` threads; puts its status counts on ``results``."""
    until = time.time() + duration_s
    counts = [Counter() for _ in range(clients)]
    threads = [threading.Thread(target=CLIENTS[kind], args=(base_url, until, seed * 1000 + i, c))
               for i, c in enumerate(counts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put(dict(sum(counts, Counter())))


def phase(server: Server, slug: str, kind: str, flooders: int, args, seed: int) -> dict:
    """One phase: participants for ``args.seconds``, beside ``flooders`` clients of ``kind``."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    flooding = None
    if flooders:
        flooding = context.Process(target=flood, args=(kind, server.base_url, flooders,
                                                       args.seconds, seed, results))
        flooding.start()
    outcome = run_participants(server.base_url, slug, args.participants, args.seconds,
                               args.think_s, seed=seed, prefix=f"{kind}{flooders}-")
    counts = {}
    if flooding is not None:
        counts = results.get(timeout=60)
        flooding.join()
    latencies = np.array([a.seconds * 1000 for a in outcome.attempts
                          if a.kind == "trial" and 0 < a.status < 500])
    return {"p50": float(np.percentile(latencies, 50)), "p99": float(np.percentile(latencies, 99)),
            "trials": len(latencies), "failures": len(outcome.failures), "flood": counts,
            "load": os.getloadavg()[0]}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} [{min(values):.1f}-{max(values):.1f}]"


def report(results: dict[tuple, list[dict]], seconds: float) -> list[str]:
    base = {q: statistics.median(r[q] for r in results[PHASES[0]]) for q in ("p50", "p99")}
    lines = [f"{'phase':>10} | {'trials':>6} | {'p50 ms median [range]':>22} | "
             f"{'p99 ms median [range]':>22} | {'p50 x':>5} | {'p99 x':>5} | "
             f"{'flood answers/s by status':<34} | {'load1':>5} | fail"]
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
            f"{sum(r['failures'] for r in rows)}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--participants", type=int, default=20)
    parser.add_argument("--think-s", dest="think_s", type=float, default=0.5)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--no-limits", dest="limits", action="store_false",
                        help="sign-in limits out of reach (the lock and low priority remain)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: the server is stopped
    results: dict[tuple, list[dict]] = {phase_: [] for phase_ in PHASES}
    with tempfile.TemporaryDirectory(prefix="chronoscope-login-flood-") as folder:
        site = build_site(Path(folder))
        env = {**site.env(), **({} if args.limits else UNLIMITED_LOGIN)}
        with Server(workers=args.workers, env=env, log_path=site.instance / "gunicorn.log") as server:
            for round_ in range(args.rounds):
                shift = round_ % len(PHASES)
                for n, (kind, flooders) in enumerate(PHASES[shift:] + PHASES[:shift]):
                    row = phase(server, site.slug, kind, flooders, args, seed=round_ * 100 + n)
                    results[kind, flooders].append(row)
                    print(f"round {round_ + 1}/{args.rounds}, {kind} {flooders}: "
                          f"p99 {row['p99']:.1f} ms", file=sys.stderr, flush=True)
                    time.sleep(2)  # let the flood's queued connections drain
    print(f"login flood, rate limits {'on' if args.limits else 'off'}: {args.rounds} rounds x "
          f"{args.seconds:.0f} s per phase, {args.participants} participants (think "
          f"{args.think_s} s), {args.workers} workers, {os.cpu_count()} CPUs")
    for line in report(results, args.seconds):
        print(line)
    p99 = {phase_: statistics.median(r["p99"] for r in rows) for phase_, rows in results.items()}
    ratio = p99["login", 32] / p99[PHASES[0]]
    print(f"goal: p99 with 32 login flooders within 2x of unloaded: {ratio:.2f}x -> "
          f"{'met' if ratio <= 2 else 'NOT met'} (any flood of 32 clients, the control: "
          f"{p99['control', 32] / p99[PHASES[0]]:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
