"""Where the test suite's time and CPU go, file by file.

As a pytest plugin it adds to each test's junit entry the CPU its worker used meanwhile:
the worker process and every process under it (browsers, drivers, Xvfb, ffmpeg; a child that
ended counts through its parent's counters), read from /proc before setup and after
teardown. As a script it sums a junit file by test file, heaviest first.

    CI=true PYTEST_ADDOPTS="-p bench.suite_cpu --junitxml=/tmp/suite.xml" bash .ci/run
    .venv/bin/python bench/suite_cpu.py /tmp/suite.xml [--by cpu|wall] [--top 40]

What it leaves out, so the sum is below the machine's busy time (vmstat): collection and each
worker's start, the xdist controller, servers not started by the tests (PostgreSQL), and a
process that left the tree (a daemon, re-parented to init; its CPU before it left is then
taken off the test, which can come out negative). Each reading lists every /proc entry, a few
milliseconds a test. Linux only. Time summed over tests counts a test's waits (a page's clock,
a server's answer); CPU does not, so the two orders differ where tests wait.
"""
from __future__ import annotations

import argparse
import collections
import os
import xml.etree.ElementTree as ET

import pytest

_started: dict[str, float] = {}


def tree_cpu_s() -> float:
    """CPU seconds of this process and every process under it, children that ended included."""
    parents, ticks = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
            # after the name: state, ppid, ... utime, stime, cutime, cstime (proc(5) 14-17)
            parents[int(entry)], ticks[int(entry)] = int(fields[1]), sum(map(int, fields[11:15]))
        except (OSError, IndexError, ValueError):  # ended while listed
            continue
    me, total = os.getpid(), 0
    for pid, used in ticks.items():
        ancestor, steps = pid, 0
        while ancestor not in (me, 0, 1) and steps < 64:  # 64: a pid reused mid-listing
            ancestor, steps = parents.get(ancestor, 0), steps + 1
        total += used if ancestor == me else 0
    return total / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _started[item.nodeid] = tree_cpu_s()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # The teardown report is the last one a test makes: its properties reach the junit file.
    if call.when == "teardown" and item.nodeid in _started:
        item.user_properties.append(("cpu_s", round(tree_cpu_s() - _started.pop(item.nodeid), 2)))
    yield


def summary(junit: str) -> dict[str, list[float]]:
    """Test file -> [seconds summed over its tests, CPU seconds, number of tests]."""
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = "/".join(p for p in case.get("classname", "").split(".") if not p[:1].isupper())
        cpu = [float(p.get("value", 0)) for p in case.iter("property") if p.get("name") == "cpu_s"]
        row = files[name + ".py"]
        row[0] += float(case.get("time", 0))
        row[1] += sum(cpu)
        row[2] += 1
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("junit")
    parser.add_argument("--by", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    files = summary(args.junit)
    wall, cpu, tests = (sum(row[i] for row in files.values()) for i in range(3))
    print(f"{tests:.0f} tests: {wall:.0f} s summed over tests, {cpu:.0f} CPU seconds")
    print(f"{'summed s':>9} {'CPU s':>7} {'tests':>6}  file")
    column = 0 if args.by == "wall" else 1
    for name, row in sorted(files.items(), key=lambda kv: -kv[1][column])[:args.top]:
        print(f"{row[0]:9.1f} {row[1]:7.1f} {row[2]:6d}  {name}")


if __name__ == "__main__":
    main()
