#!/usr/bin/env python
"""Reading a study file against its size: CPU time, peak memory and stored size.

    python bench/study_file_limits.py [--rounds 5]

For each family of files (the largest real studies, and each way found to stall, bloat or
crash a worker) at 16 to 256 KiB (the upload limit), ``experiments.study_file.check`` runs
``--rounds`` times, families and sizes interleaved within each round.  Printed per row:
CPU ms of the reading thread (``time.process_time``: other work on the machine does not
count, though it slows this work through shared caches), median with its range; peak traced
memory (one run under ``tracemalloc``); for a file that reads as a study, its stored form
(``StudyConfig.settings()`` as JSON) over the file's size, and the ms to decode the stored
form (what a participant call that reads the study row pays).  The goal (issue 25): at most
50 ms and 50 MB, time linear in size, stored form at most 2x the file.  Last, participants'
heartbeats (wall ms through the app, SQLite, Flask's test client) on a study made from the
largest file, interleaved with heartbeats on a study of a minimal file (the issue measured
2.8 ms and 141 ms).  The load average is printed before and after: give it beside every
figure.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments import study_file, study_scan  # noqa: E402
from experiments.texts import defaults, text_keys  # noqa: E402

MINIMAL = '[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n'
SIZES_KIB = (16, 64, 128, 256)
LIMIT = study_file.MAX_FILE_BYTES


def _texts(size: int) -> str:
    """A real study's shape: its own texts in up to 20 languages, each text as long as fits."""
    languages = [a + b for a in "abcd" for b in "abcde"]
    per_text = max(10, (size - 400) // (len(languages) * 3) - 40)
    lines = [MINIMAL, f"languages = {json.dumps(languages)}\n"]
    english = defaults("en")
    for language in languages:
        lines.append(f"[texts.{language}]\n")
        for key in text_keys()[:3]:
            # The text once (a placeholder may appear at most once), then filler to the length.
            text = english[key] + " " + "Lorem ipsum. " * (per_text // 13 + 1)
            lines.append(f"{key} = '''\n{text[:max(per_text, len(english[key]))]}'''\n")
    return "".join(lines)


def _fill(piece: str, head: str = MINIMAL, most: int | None = None):
    """``head`` and ``piece`` repeated to the size, or ``most`` times (just inside a limit)."""
    return lambda size: head + piece * min((size - len(head)) // len(piece), most or size)


ITEMS = study_scan.MAX_ITEMS - 20  # just inside the limit: MINIMAL and the brackets count too
FAMILIES = {
    "texts in 20 languages": _texts,
    "long texts in English": lambda size: MINIMAL + "[texts.en]\n" + "".join(
        f"{key} = '''\n{'Lorem ipsum. ' * (study_file.MAX_TEXT_CHARS // 14)}'''\n"
        for key in text_keys()[:size // study_file.MAX_TEXT_CHARS]),
    "quotes in a long string": lambda size: MINIMAL + 'title = """' + '"a' * ((size - 80) // 2)
    + '"""\n',
    "keys (at most 2000)": lambda size: MINIMAL + "".join(
        f"k{i:06d} = 1\n" for i in range(min((size - 60) // 11, study_scan.MAX_KEYS - 2))),
    "array items (at most 12000 items)": _fill("1,", MINIMAL + "places = [", ITEMS // 2),
    "blank lines": _fill("\n", most=ITEMS),
    "escapes": _fill("\\n", MINIMAL + 'title = "', ITEMS),
    "header line, spaces (backtracked)": lambda size: MINIMAL + "[" + " " * (size - 60),
    "dotted key (memory squared)": _fill("a.", MINIMAL),
    "nested [ (recursed)": _fill("[", MINIMAL + "languages = "),
}


def _read(source: str) -> tuple[float, object]:
    started = time.process_time()
    config, _, _ = study_file.check(source)
    return time.process_time() - started, config


def _peak(source: str) -> float:
    tracemalloc.start()
    try:
        study_file.check(source)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def _stored(source: str, config) -> tuple[str, str]:
    if config is None:
        return "refused", ""
    stored = json.dumps(config.settings())
    started = time.process_time()
    json.loads(stored)
    decode_ms = (time.process_time() - started) * 1000
    return f"{len(stored) / len(source.encode()):.2f}x", f"{decode_ms:.2f}"


def _heartbeats(sources: dict[str, str], rounds: int) -> dict[str, list[float]]:
    """Wall ms of each heartbeat on a study made from each of ``sources``, interleaved."""
    from bench.harness.stored_study import add_stimulus_set
    from webapp import create_app
    from webapp.extensions import db
    from webapp.researcher import lifecycle, studies

    with tempfile.TemporaryDirectory() as folder:
        app = create_app({"TESTING": True, "SECRET_KEY": "bench", "INSTANCE_PATH": folder,
                          "DATABASE_URL": f"sqlite:///{folder}/bench.db",
                          "STIMULUS_ROOT": f"{folder}/stimuli",
                          "NEW_SESSIONS_PER_ADDRESS": "1000000 per second",
                          "NEW_SESSIONS_PER_STUDY": "1000000 per second"})
        with app.app_context():
            db.create_all()
            add_stimulus_set("s")
            for slug, source in sources.items():
                studies.create_study_from_config(slug, study_file.loads(source))
                lifecycle.transition(slug, "open")
        client, apis = app.test_client(), {}
        for slug in sources:
            entry = client.get(f"/p/{slug}", query_string={"participant": "bench-1"})
            apis[slug] = "/api/session/" + entry.headers["Location"].rsplit("/", 1)[-1]
            client.post(f"{apis[slug]}/consent", json={"consent": True})
        wall: dict[str, list[float]] = {slug: [] for slug in sources}
        for _ in range(rounds):
            for slug, api in apis.items():
                started = time.perf_counter()
                assert client.post(f"{api}/heartbeat", json={}).status_code == 204
                wall[slug].append((time.perf_counter() - started) * 1000)
        with app.app_context():
            db.engine.dispose()
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    print(f"load average before: {os.getloadavg()}")
    files = {(family, kib): build(min(kib * 1024, LIMIT)) for family, build in FAMILIES.items()
             for kib in SIZES_KIB}
    times: dict[tuple, list[float]] = {key: [] for key in files}
    configs = {}
    for _ in range(rounds):
        for key, source in files.items():
            seconds, configs[key] = _read(source)
            times[key].append(seconds * 1000)
    print(f"{'family':<36} {'KiB':>5} {'CPU ms median [range]':>24} {'peak MiB':>9} "
          f"{'stored/file':>11} {'decode ms':>9}")
    for (family, kib), source in files.items():
        ms = times[(family, kib)]
        ratio, decode = _stored(source, configs[(family, kib)])
        print(f"{family:<36} {len(source.encode()) / 1024:>5.0f} "
              f"{statistics.median(ms):>9.1f} [{min(ms):.1f}-{max(ms):.1f}]".ljust(68)
              + f" {_peak(source):>9.1f} {ratio:>11} {decode:>9}")
    largest = files[("texts in 20 languages", SIZES_KIB[-1])]
    for slug, ms in _heartbeats({"minimal": MINIMAL, "largest": largest}, 40 * rounds).items():
        print(f"heartbeat, study of the {slug} file: median {statistics.median(ms):.2f} ms "
              f"[{min(ms):.2f}-{max(ms):.2f}] over {len(ms)}")
    print(f"load average after: {os.getloadavg()} ({os.cpu_count()} CPUs); rounds: {rounds}")


if __name__ == "__main__":
    main()
