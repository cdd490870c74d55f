"""Response-time accuracy of the browser runner against the compositor, and of jsPsych 8.3.

Runs trials in headless Chromium, interleaved: our onset module (static/js/onset.js), the
real jsPsych 8.3 video-keyboard-response plugin (package.json's devDependencies, or installed
from npm into a temporary folder at run time, its video preloaded as a blob with jsPsych's own preloadVideo), and the naive
onset (first requestVideoFrameCallback's expectedDisplayTime). Playwright presses a key at a
scripted random delay after the onset the page reports (after jsPsych's on_load for jsPsych).

Error = stored RT - true delay, where the true delay is the keydown event's own timeStamp
minus the presentation time of the first compositor frame that contains the video, read
from a Chromium trace (bench/rt_trace.py says how that frame is found and why). All times
are on the page clock (performance.now()): performance.mark events appear in the trace at
the instant of their startTime, which gives the trace-to-page offset; the driver's
time.monotonic() is the trace's clock (both CLOCK_MONOTONIC), which the run checks by
bracketing marks. The key press's own jitter is keydown.timeStamp minus the page time the
driver aimed at; it does not enter the error, since the true delay uses the same timeStamp.

A second, smaller block runs our module on a page that is not cross-origin isolated, where
Chromium rounds Element Timing up to 4 ms.

    .venv/bin/python bench/rt_accuracy.py --trials 100 --json trials.json --trace-dir traces
"""
from __future__ import annotations

import argparse
import asyncio
import http.server
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.rt_report import first_frame_shares, print_table, summary_rows  # noqa: E402
from bench.rt_trace import TRACE_CATEGORIES, FrameIndex, clock_offset_ms, load_events, mark_times  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update"]
NPM_PACKAGES = ["jspsych@8.3.x", "@jspsych/plugin-video-keyboard-response@2"]
ARM_FUNCTIONS = {"chronoscope": "runTrial", "chronoscope-noniso": "runTrial",
                 "naive-rvfc": "runNaiveTrial", "jspsych": "runJsPsychTrial"}
TRIALS_PER_TRACE = 20  # keeps each trace small enough to parse quickly


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the repository, /clips/ and /npm/; optionally cross-origin isolated."""

    routes: dict[str, Path] = {}
    isolated = True

    def translate_path(self, path):
        path = path.split("?", 1)[0]
        for prefix, folder in self.routes.items():
            if path.startswith(prefix):
                return str(folder / path[len(prefix):])
        return str(ROOT / path.lstrip("/"))

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        if self.isolated:  # gives 5-us performance.now() and unrounded Element Timing
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()

    def log_message(self, *args):
        pass


def serve(routes: dict[str, Path], isolated: bool) -> str:
    handler = type("BenchHandler", (Handler,), {"routes": routes, "isolated": isolated})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def make_clip(folder: Path) -> Path:
    from experiments.media import encode_browser_mp4

    frames = np.zeros((60, 240, 320, 3), np.uint8)
    frames[..., 0] = 200
    frames[..., 1] = (np.arange(60) * 16 % 256)[:, None, None]
    encode_browser_mp4(frames, folder / "clip.mp4", fps=30)
    return folder / "clip.mp4"


def jspsych_modules(folder: Path) -> tuple[Path, dict[str, str]]:
    """The node_modules folder holding jsPsych and its video plugin, and their versions: the
    repository's (package.json's devDependencies, ``npm ci``), else installed into ``folder``."""
    modules = ROOT / "node_modules"
    if not (modules / "@jspsych" / "plugin-video-keyboard-response").exists():
        subprocess.run(["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund",
                        "--silent", *NPM_PACKAGES], check=True)
        modules = folder / "node_modules"
    return modules, {name: json.loads((modules / name / "package.json").read_text())["version"]
                     for name in ("jspsych", "@jspsych/plugin-video-keyboard-response")}


class Driver:
    """Presses "f" at page time onset + delay; the page tells its onset through a binding."""

    def __init__(self, page, rng: random.Random, delays_ms: tuple[float, float]):
        self.page, self.rng, self.delays_ms = page, rng, delays_ms
        self.offset_ms = 0.0  # driver_ms = page_ms + offset_ms
        self.target_ms = None
        self.delay_ms = None

    async def calibrate(self):
        samples = []
        for _ in range(20):
            before = time.monotonic() * 1000
            page_now = await self.page.evaluate("performance.now()")
            after = time.monotonic() * 1000
            samples.append((after - before, (before + after) / 2 - page_now))
        self.offset_ms = min(samples)[1]  # the shortest round trip brackets best

    async def onset_known(self, onset_ms: float):
        self.delay_ms = self.rng.uniform(*self.delays_ms)
        self.target_ms = onset_ms + self.delay_ms
        wait_s = (self.target_ms + self.offset_ms - time.monotonic() * 1000) / 1000
        asyncio.get_running_loop().call_later(max(0.0, wait_s),
                                              lambda: asyncio.ensure_future(self.press()))

    async def press(self):
        await self.page.keyboard.down("f")
        await self.page.keyboard.up("f")


async def run_block(browser, page, driver, jobs, clip_url, trace_path=None):
    """Run (arm, label) jobs under one trace; returns raw trial dicts and the trace events."""
    await browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
    trials = []
    for arm, label in jobs:
        function = ARM_FUNCTIONS[arm]
        result = await page.evaluate(f"([u, l]) => {function}(u, l)", [clip_url, label])
        trials.append({"arm": arm, "label": label, "scheduled_ms": driver.target_ms,
                       "delay_ms": driver.delay_ms, **result})
    before = time.monotonic() * 1000
    marks = await page.evaluate("clockMarks(5)")
    after = time.monotonic() * 1000
    time_origin = await page.evaluate("performance.timeOrigin")
    driver_gap = (time.monotonic() - time.time()) * 1000
    raw = await browser.stop_tracing()
    if trace_path:
        Path(trace_path).write_bytes(raw)
    events = load_events(raw)
    offset, spread = clock_offset_ms(events, marks)
    in_trace = mark_times(events)
    bracket = [before <= in_trace[m["name"]] <= after for m in marks if m["name"] in in_trace]
    return trials, events, {"offset_ms": offset, "spread_ms": spread,
                            "driver_brackets_marks": all(bracket),
                            "calibration_error_ms": driver.offset_ms - offset,
                            "time_origin_gap_ms": offset - time_origin,
                            "driver_gap_ms": driver_gap}


def score(trials, events, clock) -> list[dict]:
    frames = FrameIndex.from_events(events)
    in_trace = mark_times(events)
    offset = clock["offset_ms"]
    for trial in trials:
        start = in_trace.get(f"trial-start-{trial['label']}")
        reveal = in_trace.get(f"reveal-{trial['label']}")
        ref = frames.reference(start, reveal) if start and reveal else None
        trial["reference"] = None if ref is None else {
            k: (v if k == "media_time_us" or v is None else v - offset) for k, v in ref.items()}
        trial["jitter_ms"] = trial["key_time_ms"] - trial["scheduled_ms"]
        if ref is not None:
            onset = trial["reference"]["displayed"]
            trial["true_delay_ms"] = trial["key_time_ms"] - onset
            trial["error_ms"] = trial["rt_ms"] - trial["true_delay_ms"]
    return trials


def trace_path(args, arm, k):
    if not args.trace_dir:
        return None
    Path(args.trace_dir).mkdir(parents=True, exist_ok=True)
    return Path(args.trace_dir) / f"trace-{arm}-{k // TRIALS_PER_TRACE}.json"


async def run_arms(page, browser, driver, base, arms, n, clip_url, args):
    await page.goto(f"{base}/bench/rt_page/index.html")
    await page.wait_for_function("window.pageReady === true")
    await page.evaluate("(b) => loadJsPsych(b)", f"{base}/npm")
    await page.mouse.click(5, 5)  # user activation, as in a real session: autoplay allowed
    await driver.calibrate()
    jobs = [(arm, f"{arm}-{i}") for i in range(n) for arm in arms]
    results, notes = [], []
    for k in range(0, len(jobs), TRIALS_PER_TRACE):
        trials, events, clock = await run_block(browser, page, driver,
                                                jobs[k:k + TRIALS_PER_TRACE], clip_url,
                                                trace_path(args, arms[0], k))
        results += score(trials, events, clock)
        notes.append(f"block {arms[0]}-{k // TRIALS_PER_TRACE}: trace-page offset spread "
                     f"{clock['spread_ms'] * 1000:.1f} us; driver monotonic brackets the marks: "
                     f"{clock['driver_brackets_marks']}; driver round-trip calibration off by "
                     f"{clock['calibration_error_ms']:+.3f} ms; trace - (timeOrigin + now) = "
                     f"{clock['time_origin_gap_ms']:.1f} ms vs monotonic - epoch "
                     f"{clock['driver_gap_ms']:.1f} ms")
    return results, notes


async def main(args):
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory(prefix="rt_accuracy_") as folder:
        tmp = Path(folder)
        clip = make_clip(tmp)
        modules, versions = jspsych_modules(tmp / "npm")
        routes = {"/clips/": tmp, "/npm/": modules}
        plan = [(serve(routes, True), ["chronoscope", "jspsych", "naive-rvfc"], args.trials),
                (serve(routes, False), ["chronoscope-noniso"], args.plain_trials)]
        all_trials, notes = [], []
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM,
                                                       args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": 800, "height": 600})
            driver = Driver(page, random.Random(args.seed), (args.min_delay, args.max_delay))
            await page.expose_function("onsetKnown", driver.onset_known)
            for base, arms, n in plan:
                if n:
                    trials, block_notes = await run_arms(page, browser, driver, base, arms, n,
                                                         f"{base}/clips/{clip.name}", args)
                    all_trials += trials
                    notes += block_notes
            await browser.close()
    unverified = sum(t.get("reference") is None for t in all_trials)
    print_table(summary_rows(all_trials), notes, versions, unverified)
    print(first_frame_shares(all_trials))
    if args.json:
        Path(args.json).write_text(json.dumps(all_trials, indent=1))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100,
                        help="trials per arm (ours, jsPsych, naive rVFC), interleaved")
    parser.add_argument("--plain-trials", type=int, default=40,
                        help="extra trials of ours on a page without cross-origin isolation")
    parser.add_argument("--min-delay", type=float, default=300.0)
    parser.add_argument("--max-delay", type=float, default=700.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write every trial here")
    parser.add_argument("--trace-dir", help="keep the raw Chromium traces here")
    args = parser.parse_args(argv)
    if args.trials < 1 or args.plain_trials < 0:
        parser.error("need --trials >= 1 and --plain-trials >= 0")
    if args.min_delay <= 0 or args.max_delay < args.min_delay:
        parser.error("need 0 < --min-delay <= --max-delay")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
