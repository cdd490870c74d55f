"""Frame pacing of the clip presenters: every frame on screen for its intended number of refreshes?

    .venv/bin/python bench/frame_pacing.py                        # Chromium, 5 rounds
    .venv/bin/python bench/frame_pacing.py --engines chromium,firefox,webkit --rounds 3
    .venv/bin/python bench/frame_pacing.py --seek                 # + the seek-decoded canvas

Four designs show the same generated clips (30 fps x 90 frames, 60 fps x 120, 320 x 240) after
a 500-ms fixation, as a trial does (bench/rt_page/pacing.js): ``video``, the <video> element as
the runner used it before (static/js/onset.js: frame 0 revealed, then play()); ``canvas``, the
clip decoded into bitmaps during the fixation, frame k drawn on a canvas by the main thread on
its due refresh; ``worker``, the runner's presenter now (static/js/present.js: the same frames
drawn by a worker on an OffscreenCanvas, frame 0 revealed in an animation frame that starts on
time); ``worker-anyframe``, the worker revealing frame 0 in the first animation frame, late or
not (before 2026-11-29). ``--seek`` adds ``canvas-seek``: the canvas with its frames taken by
seeking a hidden <video> (engines without WebCodecs).

Reference (bench/pacing_reference.py): in headless Chromium at 60 Hz, the screen itself, read
back from the screenshot the trace holds of every presented frame (the clips spell their frame
index). Firefox ESR and WebKitGTK (driven as tests/engines drives them, in windows on Xvfb)
have no such trace: there, and as a second row in Chromium, the figures are the page's own
account (the animation frame of each canvas draw; each requestVideoFrameCallback of the video),
which says what was handed to the compositor, not what the screen showed, and has no onset
reference.

Figures per trial: the share of frames shown for exactly their intended number of refreshes
(2 at 30 fps, 1 at 60 fps; the last frame: starts on its due refresh), frame-0 hold (refreshes
frame 0 stayed beyond its intended duration) and onset error (stored onset minus frame 0's
presentation, trace clock). Rounds are interleaved: each round runs every design on every clip
in a shuffled order, and each ratio is against the video element in the same round, engine
and reference. The table gives the median over rounds with the range, and the 1-minute load.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.pacing_reference import CLIPS, Shown, make_clips, score  # noqa: E402
from bench.rt_accuracy import CHROMIUM, CHROMIUM_ARGS, serve  # noqa: E402
from bench.rt_trace import clock_offset_ms, load_events, mark_times  # noqa: E402

DESIGNS = {"video": "presentVideo(u, l)", "canvas": "presentCanvas(u, l)",
           "worker": "presentCanvas(u, l, true, 'worker')",
           "worker-anyframe": "presentCanvas(u, l, true, 'worker', false)",
           "canvas-seek": "presentCanvas(u, l, false)"}
# The disturbed page: a script holding the main thread 30 ms of every 100, and the
# CPU throttled 4x (Chromium's DevTools emulation; Chromium only).
JANK = """(on) => { clearInterval(window.jankTimer); if (on) window.jankTimer = setInterval(() => {
    const end = performance.now() + 30; while (performance.now() < end); }, 100); }"""
THROTTLE = 4
CATEGORIES = ["blink.user_timing", "disabled-by-default-display.framedisplayed",
              "disabled-by-default-devtools.screenshot"]
PAGE = "/bench/rt_page/pacing.html"


def page_figures(trial: dict) -> dict | None:
    fps, _ = CLIPS[trial["clip"]]
    return score(trial, Shown.from_page(trial, fps), -np.inf, np.inf, None)


class Chromium:
    """Headless Chromium through Playwright; each trial under its own trace (a whole round
    overflows Chromium's trace buffer with screenshots)."""

    name = "chromium"

    async def __aenter__(self):
        from playwright.async_api import async_playwright

        self.playwright = await async_playwright().start()
        self.browser = await self.playwright.chromium.launch(executable_path=CHROMIUM,
                                                             args=CHROMIUM_ARGS)
        self.page = await self.browser.new_page(viewport={"width": 800, "height": 600})
        self.cdp = await self.page.context.new_cdp_session(self.page)
        return self

    async def __aexit__(self, *exc):
        await self.browser.close()
        await self.playwright.stop()

    async def open(self, url: str) -> None:
        await self.page.goto(url)
        await self.page.wait_for_function("() => window.pageReady === true")
        self.stage = await self.page.evaluate("""() => { const r = document
            .getElementById('stage').getBoundingClientRect(); return {left: r.left,
            top: r.top, width: r.width, height: r.height, viewport: innerWidth}; }""")

    async def disturb(self, on: bool) -> None:
        await self.page.evaluate(JANK, on)
        await self.cdp.send("Emulation.setCPUThrottlingRate", {"rate": THROTTLE if on else 1})

    async def trial(self, url: str, design: str, clip: str, label: str) -> dict:
        await self.browser.start_tracing(page=self.page, categories=CATEGORIES)
        result = await self.page.evaluate(f"([u, l]) => {DESIGNS[design]}", [url, label])
        marks = await self.page.evaluate("clockMarks(5)")
        events = load_events(await self.browser.stop_tracing())
        offset, _ = clock_offset_ms(events, marks)
        screen = Shown.from_trace(events, self.stage)
        in_trace = mark_times(events)
        trial = {"engine": self.name, "design": design, "clip": clip, "label": label,
                 "screen_refresh_ms": screen.refresh_ms, **result}
        trial["screen"] = score(trial, screen, in_trace[f"trial-start-{label}"],
                                in_trace[f"trial-end-{label}"], offset)
        trial["page"] = page_figures(trial)
        return trial


class EngineTab:
    """Firefox ESR or WebKitGTK in a window on its own Xvfb, through bench/harness/tabs.py."""

    def __init__(self, name: str):
        self.name = name

    async def __aenter__(self):
        from contextlib import ExitStack

        from bench.harness.tabs import FirefoxBridge, FirefoxTab, WebKitTab
        from bench.harness.xserver import xvfb

        self.stack = ExitStack()
        display = self.stack.enter_context(xvfb())
        if self.name == "firefox":
            bridge = FirefoxBridge(display)
            self.stack.callback(bridge.close)
            self.tab = FirefoxTab(bridge)
        else:
            self.tab = WebKitTab(display, faults=None)
        self.stack.callback(self.tab.close)
        return self

    async def __aexit__(self, *exc):
        self.stack.close()

    async def open(self, url: str) -> None:
        self.tab.goto(url)
        self.tab.wait_for("return window.pageReady === true")

    async def disturb(self, on: bool) -> None:
        self.tab.evaluate(f"({JANK})({json.dumps(on)});")  # no CPU throttling outside Chromium

    async def trial(self, url: str, design: str, clip: str, label: str) -> dict:
        call = DESIGNS[design].replace("(u, l", f"({json.dumps(url)}, {json.dumps(label)}")
        trial = {"engine": self.name, "design": design, "clip": clip, "label": label,
                 "screen": None, "page": None}
        try:
            result = self.tab.evaluate(f"return {call};")
        # The page gave up on it (a stalled video, bench/rt_page/pacing.js says how), or the
        # driver did (WebKitWebDriver once answered "Could not parse script result" for a
        # trial, in the 10th of 14 rounds): the trial is reported, and the run goes on.
        except Exception as error:  # noqa: BLE001
            return {**trial, "failed": str(error).strip()}
        trial.update(result)
        trial["page"] = page_figures(trial)
        return trial


def summary(trials: list[dict], reference: str) -> dict | None:
    scored = [t[reference] for t in trials if t[reference]]
    if not scored:
        return None
    errors = [s["onset_error_ms"] for s in scored if s["onset_error_ms"] is not None]
    holds = [s["frame0_hold"] for s in scored if s["frame0_hold"] is not None]
    return {"on_time": sum(s["on_time"] for s in scored) / sum(s["frames"] for s in scored),
            "hold": float(np.median(holds)) if holds else None,
            "err_mean": float(np.mean(errors)) if errors else None,
            "err_sd": float(np.std(errors, ddof=1)) if len(errors) > 1 else None}


def span(values, fmt="{:.2f}") -> str:
    values = [v for v in values if v is not None and np.isfinite(v)]
    if not values:
        return "-"
    low, mid, high = (fmt.format(v) for v in (min(values), np.median(values), max(values)))
    return f"{mid} [{low}, {high}]"


def table_rows(rounds: list[list[dict]], engine: str, reference: str, designs: list[str],
               condition: str):
    per = {d: [summary([t for t in r if t["engine"] == engine and t["design"] == d
                        and t["condition"] == condition], reference)
               for r in rounds] for d in designs}
    for d in designs:
        pairs = [(s, b) for s, b in zip(per[d], per["video"]) if s and b]
        if not pairs:
            continue
        ratio = [s["on_time"] / b["on_time"] for s, b in pairs if b["on_time"]]
        yield (f"{engine}/{reference}", condition, d, span([100 * s["on_time"] for s, _ in pairs], "{:.1f}"),
               span(ratio), span([s["hold"] for s, _ in pairs], "{:.1f}"),
               span([s["err_mean"] for s, _ in pairs]), span([s["err_sd"] for s, _ in pairs]))


def print_table(rounds: list[list[dict]], engines: list[str], designs: list[str],
                conditions: list[str], loads: list[float]) -> None:
    trials = [t for r in rounds for t in r]
    print(f"{len(rounds)} rounds x {len(CLIPS)} clips x {len(designs)} designs; load average "
          f"(1 min) {span(loads, '{:.1f}')} on {os.cpu_count()} cores")
    header = ("engine/reference", "condition", "design", "frames on time %", "x video",
              "frame-0 hold", "onset error mean ms", "onset error SD ms")
    widths = (18, 11, 12, 20, 18, 18, 22, 20)
    print("".join(f"{h:>{w}s}" if i > 2 else f"{h:<{w}s}" for i, (h, w) in
                  enumerate(zip(header, widths))))
    for engine in engines:
        for reference in (["screen"] if engine == "chromium" else []) + ["page"]:
            for row in (row for condition in conditions for row in
                        table_rows(rounds, engine, reference, designs, condition)):
                print("".join(f"{c:>{w}s}" if i > 2 else f"{c:<{w}s}" for i, (c, w) in
                              enumerate(zip(row, widths))))
    for engine in engines:
        for d in designs:
            mine = [t for t in trials if t["engine"] == engine and t["design"] == d]
            for failed in [t for t in mine if "failed" in t]:
                print(f"{engine} {d}: trial {failed['label']} failed: {failed['failed']}")
            mine = [t for t in mine if "failed" not in t]
            prepare = [t["prepare_ms"] for t in mine if "prepare_ms" in t]
            print(f"{engine} {d}: {len(mine)} trials; onset methods "
                  f"{sorted({t['onset_method'] for t in mine})}; presenters "
                  f"{sorted({t.get('presenter', 'video') for t in mine})}; page refresh "
                  f"{span([t['page_refresh_ms'] for t in mine])} ms"
                  + (f"; decoded in {span(prepare, '{:.0f}')} ms, by "
                     f"{sorted({t['source'] for t in mine})}" if prepare else ""))
    if "chromium" in engines:
        print(self_report([t for t in trials if t["engine"] == "chromium" and t["screen"]
                           and t.get("frames_late") is not None]))


def self_report(trials: list[dict]) -> str:
    """Whether a canvas trial that records no late or dropped frame really showed every frame
    for its intended duration on screen, and the reverse."""
    pairs = [(t["frames_late"] + t["frames_dropped"] == 0,
              t["screen"]["on_time"] == t["screen"]["frames"]) for t in trials]
    said = [shown for own, shown in pairs if own]
    flagged = [shown for own, shown in pairs if not own]
    return (f"chromium canvas and worker trials recording no late/dropped frame: {len(said)}, every frame "
            f"on time on screen in {sum(said)}; recording some: {len(flagged)}, every frame on "
            f"time on screen in {sum(flagged)}")


async def run_engine(driver, base: str, designs: list[str], args, rounds: list, loads: list):
    rng = random.Random(args.seed)
    async with driver:
        await driver.open(f"{base}{PAGE}")
        for r in range(args.rounds):
            jobs = [(d, c, k, f"{d}-{c}-{k}-{r}-{i}") for d in designs for c in CLIPS
                    for k in args.conditions for i in range(args.trials)]
            rng.shuffle(jobs)
            results = []
            for d, c, k, label in jobs:
                await driver.disturb(k == "disturbed")
                results.append({**await driver.trial(f"{base}/clips/{c}.mp4", d, c, label),
                                "condition": k})
            await driver.disturb(False)
            if len(rounds) <= r:
                rounds.append([])
            rounds[r] += results
            loads.append(os.getloadavg()[0])
            print(f"{driver.name} round {r + 1}/{args.rounds} done, load {loads[-1]:.1f}",
                  flush=True)


async def main(args) -> None:
    designs = ["video", "canvas", "worker", "worker-anyframe"] + (["canvas-seek"] if args.seek else [])
    engines = args.engines.split(",")
    rounds: list[list[dict]] = []
    loads: list[float] = []
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
               for _ in range(args.burn)]
    try:
        await run_all(args, designs, engines, rounds, loads)
    finally:
        for burner in burners:
            burner.kill()
    print_table(rounds, engines, designs, args.conditions, loads)
    if args.json:
        Path(args.json).write_text(json.dumps(rounds, indent=1))


async def run_all(args, designs, engines, rounds, loads) -> None:
    with tempfile.TemporaryDirectory(prefix="frame_pacing_") as folder:
        make_clips(Path(folder))
        base = serve({"/clips/": Path(folder)}, isolated=True)
        for engine in engines:
            driver = Chromium() if engine == "chromium" else EngineTab(engine)
            await run_engine(driver, base, designs, args, rounds, loads)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trials", type=int, default=2, help="trials per design and clip a round")
    parser.add_argument("--engines", default="chromium",
                        help="comma-separated: chromium, firefox, webkit")
    parser.add_argument("--seek", action="store_true", help="also run the seek-decoded canvas")
    parser.add_argument("--conditions", default="quiet,disturbed", type=lambda v: v.split(","),
                        help="comma-separated: quiet, disturbed (main thread janked 30 ms every "
                             "100 ms; in Chromium also the CPU throttled 4x)")
    parser.add_argument("--burn", type=int, default=0,
                        help="processes spinning on the CPU during the run (machine load)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write every trial here")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.trials < 1:
        parser.error("need --rounds >= 1 and --trials >= 1")
    if not set(args.conditions) <= {"quiet", "disturbed"}:
        parser.error("--conditions takes quiet and disturbed")
    if not set(args.engines.split(",")) <= {"chromium", "firefox", "webkit"}:
        parser.error("--engines takes chromium, firefox and webkit")
    return args


if __name__ == "__main__":
    started = time.monotonic()
    asyncio.run(main(parse_args()))
    print(f"ran {time.monotonic() - started:.0f} s")
