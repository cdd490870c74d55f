"""The ~50-second CI form of bench/load.py: L1, F1 and F2 against real gunicorn servers.

What the server owes on any machine is asserted strictly: every trial stored exactly once,
nothing given up, and in L1 and F2 no 5xx and no 503 (no request waited out the database's
busy timeout). Latency only grossly (HUNG_MS): these clients are a closed loop that offers more
trials than a shared 2-core CI machine serves, so their p99 there is mostly that machine's
queue (2.2 s on the CI run that failed, 19 ms on a quiet machine). bench/load.py measures
latency and prints the table.
"""
import re

import pytest

from bench.harness import scenarios
from bench.harness.scenarios import Run

# No request of a working server waits this long, however loaded the machine (the slowest
# seen in CI: 2.2 s); one that does hung or queued behind something pathological.
HUNG_MS = 15_000.0


@pytest.fixture
def run(tmp_path):
    return Run(tmp_path)


def assert_nothing_lost(row):
    audit = row.audit
    assert row.outcome.failures == [], row.outcome.failures[:5]
    assert audit.sent > 0 and audit.stored == audit.sent, audit
    assert (audit.missing, audit.duplicate, audit.unexpected, audit.gave_up) == (0, 0, 0, 0), audit


def assert_served(stats):
    """No server error, no request that waited out the busy timeout (503), none that hung."""
    assert (stats["n503"], stats["n5xx_other"]) == (0, 0) and stats["max_ms"] < HUNG_MS, stats


def test_l1_many_participants_with_think_time(run):
    row = scenarios.l1(run, duration_s=20, participants=100, think_s=1.0)
    assert_nothing_lost(row)
    stats = row.stats()
    print("L1", stats)
    assert_served(stats)


def test_f1_worker_killed_every_second(run):
    row = scenarios.f1(run, duration_s=15, participants=20)
    assert_nothing_lost(row)
    print("F1", row.stats(), row.faults)
    assert int(row.faults.split()[0]) >= 10  # the killer really ran


def test_f2_exports_do_not_block_participants(run):
    # 10 s: the first export window (1 s to 8 s into the run) falls wholly inside it, after
    # the 50 participants have all arrived (by 2.5 s).
    row = scenarios.f2(run, duration_s=10, participants=50, think_s=1.0, busy_s=7.0, every_s=8.0)
    assert_nothing_lost(row)
    stats = row.stats()
    print("F2", stats, row.faults)
    assert_served(stats)
    exports = re.search(r"\b(\d+) exports over HTTP\b", row.faults)
    assert exports and int(exports.group(1)) > 0, row.faults  # the exports really ran
    assert "FAILED" not in row.faults  # and each was a complete zip
