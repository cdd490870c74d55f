"""Reliability benchmark (issue 6): load, killed workers, exports, a locked database, restarts.

    python bench/load.py                      # full: L1 10 min, L2/F1 60 s, F2 2 min, F3, restart
    python bench/load.py --l1-minutes 3 --only L1 --only F2
    python bench/load.py --database postgresql+psycopg://postgres@127.0.0.1:5432/postgres

Prints one table: trial-POST latencies (answered attempts), stored trials/s, retries seen
(503, connection errors) and the audit (missing / duplicate / unexpected rows, requests that
gave up).  ``--database`` names a PostgreSQL server; each scenario gets a fresh database on it.
Participants with a think time (L1, F2, F3, restart) arrive at 20 per second; L2 and F1 start
all 50 at once.  A session is 14 trials; whoever finishes one enters again as someone new.
Goals (2-core machine, SQLite WAL): L1 p95 <= 50 ms, p99 <= 100 ms, 0 failures; L2 >= 300
stored trials/s; F1 0 missing / 0 duplicate; F2 p99 <= 100 ms and 0 x 503; F3 0 missing.
"""
from __future__ import annotations

import argparse
import math
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import scenarios  # noqa: E402
from bench.harness.scenarios import Row, Run  # noqa: E402

COLUMNS = ("scenario", "users", "secs", "trials", "trials/s", "p50 ms", "p95 ms", "p99 ms",
           "max ms", "503", "conn err", "missing", "dup", "unexpected", "gave up", "audit")


def row_cells(row: Row) -> list[str]:
    s = row.stats()
    a = row.audit

    def num(value, digits=1):
        return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"

    audit_cells = ([str(a.missing), str(a.duplicate), str(a.unexpected), str(a.gave_up),
                    "ok" if a.ok else "FAIL"] if a else ["-"] * 4 + ["n/a"])
    return [row.name, str(row.participants), f"{row.duration_s:.0f}", str(s["trials"]),
            num(s["trials_per_s"]), num(s["p50_ms"]), num(s["p95_ms"]), num(s["p99_ms"]),
            num(s["max_ms"]), str(s["n503"]), str(s["conn_errors"]), *audit_cells]


def table(rows: list[Row]) -> str:
    cells = [list(COLUMNS)] + [row_cells(r) for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = [" | ".join(c.rjust(w) for c, w in zip(line, widths)) for line in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def notes(rows: list[Row]) -> list[str]:
    by = {r.name: r for r in rows}
    out = [f"{r.name} faults: {r.faults}" for r in rows if r.faults]
    if "L2" in by and "L2-bare" in by:
        app, yard = by["L2"].stats()["trials_per_s"], by["L2-bare"].stats()["trials_per_s"]
        out.append(f"L2 ratio app / bare Flask: {app:.0f} / {yard:.0f} = {app / yard:.2f}")
    for r in rows:
        out += [f"{r.name} failure: {f}" for f in r.outcome.failures[:5]]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", help="PostgreSQL server URL (default: SQLite in a temp folder)")
    parser.add_argument("--l1-minutes", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=60.0, help="L2 / F1 / F3 / restart length")
    parser.add_argument("--f2-seconds", type=float, default=120.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--only", action="append", choices=("L1", "L2", "F1", "F2", "F3", "restart"))
    parser.add_argument("--keep", type=Path, help="work folder to keep (default: a temp folder)")
    args = parser.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the servers are stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    wanted = args.only or ["L1", "L2", "F1", "F2", "F3", "restart"]
    with tempfile.TemporaryDirectory(prefix="chronoscope-load-") as tmp:
        run = Run(args.keep or Path(tmp), args.database, args.workers)
        plan = {"L1": lambda: [scenarios.l1(run, args.l1_minutes * 60)],
                "L2": lambda: [scenarios.bare(run, 50, args.seconds), scenarios.l2(run, args.seconds)],
                "F1": lambda: [scenarios.f1(run, args.seconds)],
                "F2": lambda: [scenarios.f2(run, args.f2_seconds)],
                "F3": lambda: [scenarios.f3(run, args.seconds)],
                "restart": lambda: [scenarios.restart(run, args.seconds)]}
        rows = []
        for name in wanted:
            rows += plan[name]()
            print(f"done {name}", file=sys.stderr, flush=True)
    print(table(rows))
    for line in notes(rows):
        print(line)
    return 0 if all(r.audit is None or r.audit.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
