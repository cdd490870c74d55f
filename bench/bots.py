"""Bots against the plausibility rules: the table strategy x outcome (issue 25).

Runs the bot tests (tests/webapp/test_bots.py: the API strategies of
bench/harness/bots.py; tests/browser/test_bots_browser.py: a headless Chromium script that
clicks through, and ``--simulated`` sessions of the built-in simulated participant in the
real runner, ``--at-once`` at a time, on the tests' tiny arrow-of-time study: 2 practice
trials, 2 blocks of 4 clips and a catch trial each, fixation 300 ms), collects the outcome
each one recorded, and prints one row per strategy: sessions, Prolific decisions, statuses
and the reason codes seen, and for the simulated people how many sessions any plausibility
rule flagged.

    python bench/bots.py [--simulated 20] [--at-once 4]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ("tests/webapp/test_bots.py", "tests/browser/test_bots_browser.py")


def table(rows: list[dict]) -> str:
    by_strategy = defaultdict(list)
    for row in rows:
        by_strategy[row["strategy"]].append(row)
    lines = [f"{'strategy':52} {'n':>3}  {'decision':22} {'status':28} reasons"]
    for strategy, runs in by_strategy.items():
        decisions = Counter(r["decision"][0] if r["decision"] else "not listed" for r in runs)
        statuses = Counter(r["status"] for r in runs)
        reasons = sorted({code for r in runs for code in r["reasons"]})
        lines.append(f"{strategy:52} {len(runs):>3}  {_counts(decisions):22} "
                     f"{_counts(statuses):28} {', '.join(reasons) or '-'}")
    return "\n".join(lines)


def _counts(counter: Counter) -> str:
    return ", ".join(f"{name} {n}" for name, n in counter.most_common())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulated", type=int, default=20)
    parser.add_argument("--at-once", type=int, default=4)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "bots.jsonl"
        env = {**os.environ, "CHRONOSCOPE_BOT_REPORT": str(report),
               "CHRONOSCOPE_SIMULATED_SESSIONS": str(args.simulated),
               "CHRONOSCOPE_SIMULATED_AT_ONCE": str(args.at_once)}
        code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-n", "0",
                                "-p", "no:cacheprovider", "-rxX", *TESTS], cwd=ROOT, env=env)
        rows = [json.loads(line) for line in report.read_text().splitlines()] \
            if report.exists() else []
    print(table(rows))
    people = [r for r in rows if r["strategy"].startswith("simulated attentive")]
    print(f"simulated attentive participants flagged: "
          f"{sum(bool(r['reasons']) for r in people)} of {len(people)}")
    print(f"load (uptime): {os.getloadavg()}")
    return code


if __name__ == "__main__":
    sys.exit(main())
