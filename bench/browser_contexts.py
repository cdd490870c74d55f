"""What a new browser context costs the tests' Chromium, with and without HIDDEN_UI.

    .venv/bin/python bench/browser_contexts.py [--rounds 5] [--contexts 10]

Each round launches Chromium both ways, in alternating order: as tests/conftest.py does
(``launch_chromium``: the address bar's WebUI popups off) and with CHROMIUM_ARGS alone (as
before). In each it opens and closes ``--contexts`` contexts with one page a context, as the
``page`` fixture does, and counts the CPU of this process's tree over them (the Playwright
driver, the browser and all its processes; bench/suite_cpu.py) and the renderers Chromium
started for top-chrome WebUI. Prints CPU per context, median [range] over the rounds, the
ratio of the medians, and the machine's load.
"""
import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness.tabs import CHROMIUM, CHROMIUM_ARGS, launch_chromium  # noqa: E402
from bench.suite_cpu import tree_cpu_s  # noqa: E402

PAGE = "data:text/html,<p>a page</p>"


def _webui_renderers() -> int:
    count = 0
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                count += b"--top-chrome-webui" in cmdline.read()
        except OSError:  # ended while listed
            continue
    return count


def one_way(playwright, hidden: bool, contexts: int) -> tuple[float, int]:
    """(CPU seconds a context, most WebUI renderers seen at once) with one launch."""
    browser = (launch_chromium(playwright) if hidden else
               playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS))
    try:
        before, webui = tree_cpu_s(), 0
        for _ in range(contexts):
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            page = context.new_page()
            page.goto(PAGE)
            page.wait_for_function("document.readyState === 'complete'")
            webui = max(webui, _webui_renderers())
            context.close()
        return (tree_cpu_s() - before) / contexts, webui
    finally:
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--contexts", type=int, default=10)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    cpu: dict[bool, list[float]] = {True: [], False: []}
    webui: dict[bool, int] = {True: 0, False: 0}
    load = [os.getloadavg()[0]]
    with sync_playwright() as playwright:
        for round_ in range(args.rounds):
            for hidden in ((True, False) if round_ % 2 else (False, True)):
                seconds, renderers = one_way(playwright, hidden, args.contexts)
                cpu[hidden].append(seconds)
                webui[hidden] = max(webui[hidden], renderers)
            load.append(os.getloadavg()[0])
    print(f"{args.rounds} rounds x {args.contexts} contexts; load (1 min) "
          f"{min(load):.1f}-{max(load):.1f}, {os.cpu_count()} CPUs")
    for hidden, name in ((False, "CHROMIUM_ARGS alone"), (True, "launch_chromium (HIDDEN_UI)")):
        values = cpu[hidden]
        print(f"  {name:28s} CPU s a context {statistics.median(values):.3f} "
              f"[{min(values):.3f}-{max(values):.3f}], WebUI renderers at once: {webui[hidden]}")
    print(f"  ratio of medians (HIDDEN_UI / alone): "
          f"{statistics.median(cpu[True]) / statistics.median(cpu[False]):.2f}")


if __name__ == "__main__":
    main()
