"""Timing-quality scores of whole sessions by condition: what the score reads, quiet or disturbed.

    .venv/bin/python bench/timing_quality.py --rounds 3
    .venv/bin/python bench/timing_quality.py --rounds 5 --conditions quiet,janked+throttled

Each round runs the browser test tests/browser/test_timing_quality.py once (a fresh pytest
process, the tests' live site: simulated arrow-of-time sessions of 8 clip trials of 18 frames at
30 fps, each answered after its clip played out), which runs one session per condition in its
own page of headless Chromium, in the order given (rotated each round, so no condition always
runs first), and appends each session's summary to the file named in CHRONOSCOPE_TIMING_REPORT.
The table gives per condition (those asked, then any the test ran of its own accord) the
score (experiments/timing_quality.py), median [range] over the rounds, and its inputs summed
over the rounds: frames late and dropped as a share of the frames due, trials disturbed and
why, the presenter that drew the clips, the refresh interval the trials measured, and
frame-0 holds. The load is the 1-minute load average around each round.

Conditions (CONDITIONS): jank is a page script holding the main thread ``hold`` ms of every
``every`` ms; throttling is Chromium's ``Emulation.setCPUThrottlingRate``; ``canvas/`` removes
OffscreenCanvas, so the main-thread canvas presents, as in an engine without it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST = "tests/browser/test_timing_quality.py"
REPORT_ENV = "CHRONOSCOPE_TIMING_REPORT"
CONDITIONS_ENV = "CHRONOSCOPE_TIMING_CONDITIONS"
# The page of an engine without OffscreenCanvas: static/js/present.js falls back to the canvas.
NO_OFFSCREEN = "delete HTMLCanvasElement.prototype.transferControlToOffscreen;"


@dataclass(frozen=True)
class Condition:
    jank: tuple[int, int] | None = None  # (hold, every) ms: the main thread held
    throttle: float | None = None  # CPU throttling rate
    canvas: bool = False  # the main-thread canvas presents (no OffscreenCanvas)

    def init_scripts(self) -> list[str]:
        scripts = [NO_OFFSCREEN] if self.canvas else []
        if self.jank:
            hold, every = self.jank
            scripts.append(f"""setInterval(() => {{
  const until = performance.now() + {hold};
  while (performance.now() < until) {{ /* busy: the main thread is held */ }}
}}, {every});""")
        return scripts


# The disturbance is 30 ms every 100 ms and 4x throttling; 120 of every 150 ms holds
# the main thread seven refreshes at a time.
CONDITIONS = {
    "quiet": Condition(),
    "janked": Condition(jank=(30, 100)),
    "throttled": Condition(throttle=4),
    "janked+throttled": Condition(jank=(30, 100), throttle=4),
    "canvas/quiet": Condition(canvas=True),
    "canvas/janked+throttled": Condition(jank=(30, 100), throttle=4, canvas=True),
    "canvas/held+throttled": Condition(jank=(120, 150), throttle=4, canvas=True),
}


def conditions_asked() -> list[str]:
    """The conditions CHRONOSCOPE_TIMING_CONDITIONS names, in its order (none when unset)."""
    names = [n for n in os.environ.get(CONDITIONS_ENV, "").split(",") if n]
    unknown = set(names) - set(CONDITIONS)
    if unknown:
        raise ValueError(f"{CONDITIONS_ENV}: unknown conditions {sorted(unknown)}")
    return names


def session_summary(trials: list[dict]) -> dict:
    """One session's score and what it read, from its stored trials."""
    from experiments.record_numbers import count
    from experiments.timing_quality import accounts, session_score

    trial_accounts = accounts(trials)
    extras = [trial.get("extra") or {} for trial, _, _ in trial_accounts]
    refreshes = [v for e in extras if (v := count(e.get("refresh_ms")))]
    return {"score": session_score(trials), "trials": len(trial_accounts),
            "due": sum(frames[1] for _, frames, _ in trial_accounts if frames),
            "late": sum(count(e.get("frames_late")) or 0 for e in extras),
            "dropped": sum(count(e.get("frames_dropped")) or 0 for e in extras),
            "disturbed": dict(Counter(cause for _, _, cause in trial_accounts if cause)),
            "presenters": dict(Counter(str(e.get("presenter")) for e in extras)),
            "refresh_ms": [min(refreshes), max(refreshes)] if refreshes else None,
            "frame0_hold": dict(Counter(str(e.get("frame0_hold_refreshes")) for e in extras))}


def record_session(condition: str, trials: list[dict]) -> None:
    """Append one session's summary to the file CHRONOSCOPE_TIMING_REPORT names (the bench's;
    without it, nothing)."""
    path = os.environ.get(REPORT_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as report:
            report.write(json.dumps({"condition": condition, **session_summary(trials)}) + "\n")


def _span(values: list[float], fmt: str = "{:.3f}") -> str:
    if not values:
        return "-"
    return (f"{fmt.format(statistics.median(values))} "
            f"[{fmt.format(min(values))}, {fmt.format(max(values))}]")


def _counts(counter: Counter) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counter.items())) or "-"


def table(rows: list[dict], conditions: list[str]) -> str:
    lines = [f"{'condition':26} {'n':>2}  {'score':24} {'late %':>7} {'dropped %':>9}  "
             "disturbed trials | presenters | refresh ms | frame-0 hold"]
    for name in conditions:
        mine = [r for r in rows if r["condition"] == name]
        if not mine:
            continue
        due = sum(r["due"] for r in mine) or 1
        total = lambda key: sum((Counter(r[key]) for r in mine), Counter())  # noqa: E731
        refresh = [v for r in mine if r["refresh_ms"] for v in r["refresh_ms"]]
        lines.append(
            f"{name:26} {len(mine):>2}  {_span([r['score'] for r in mine if r['score'] is not None]):24} "
            f"{100 * sum(r['late'] for r in mine) / due:7.1f} "
            f"{100 * sum(r['dropped'] for r in mine) / due:9.1f}  "
            f"{_counts(total('disturbed'))} of {sum(r['trials'] for r in mine)} | "
            f"{_counts(total('presenters'))} | "
            f"{f'{min(refresh):.2f}-{max(refresh):.2f}' if refresh else '-'} | "
            f"{_counts(total('frame0_hold'))}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conditions", default=",".join(CONDITIONS),
                        type=lambda v: v.split(","), help="comma-separated, of: "
                        + ", ".join(CONDITIONS))
    args = parser.parse_args(argv)
    if args.rounds < 1 or not set(args.conditions) <= set(CONDITIONS):
        parser.error(f"need --rounds >= 1 and conditions of {', '.join(CONDITIONS)}")
    rows, loads, code = [], [], 0
    with tempfile.TemporaryDirectory(prefix="timing_quality_") as folder:
        for r in range(args.rounds):
            shift = r % len(args.conditions)
            order = args.conditions[shift:] + args.conditions[:shift]
            report = Path(folder) / f"round-{r + 1}.jsonl"
            env = {**os.environ, REPORT_ENV: str(report), CONDITIONS_ENV: ",".join(order)}
            loads.append(os.getloadavg()[0])
            code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-n", "0",
                                    "-p", "no:cacheprovider", TEST], cwd=ROOT, env=env) or code
            loads.append(os.getloadavg()[0])
            if report.exists():
                rows += [json.loads(line) for line in report.read_text().splitlines()]
            print(f"round {r + 1}/{args.rounds} done, load {loads[-1]:.1f}", flush=True)
    print(table(rows, [*args.conditions, *(c for c in CONDITIONS if c not in args.conditions)]))
    print(f"{args.rounds} rounds; load average (1 min) {min(loads):.1f}-{max(loads):.1f} on "
          f"{os.cpu_count()} cores; now {os.getloadavg()}")
    return code


if __name__ == "__main__":
    sys.exit(main())
