"""One model run end to end (items -> backend -> cache -> rows) and its manifest.

The manifest (``manifest.json`` in the run folder) records provenance and timing: the
backend's description (model id, weights hash, dtype, library and processor hashes), the
task settings, decoding parameters and seed, counts (cached, computed, errors,
unparseable, cut off while thinking, why a budget stopped it) and seconds spent loading,
building items and in the model, and the ledger of its items (``analysis.vlm.ledger``:
tokens, seconds and, with a price file, cost).  It is written when the run starts (status
"running") and again when it ends.  A run given its run file's fields (``manage.py
run-models``) keeps them with the library versions in the manifest and writes them as
``run.toml`` beside its trials: ``run-models --config run.toml`` is the same run.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from analysis import columns as C
from analysis.vlm.aot_items import check_frames
from analysis.vlm.backends import load_backend
from analysis.vlm.backends.base import Backend
from analysis.vlm.cache import ResultCache
from analysis.vlm.ledger import BudgetGuard, load_prices, parse_budget, summarise
from analysis.vlm.provenance import library_versions
from analysis.vlm.run_config import RunConfig, answer_settings, run_key
from analysis.vlm.runner import Runner
from analysis.vlm.tasks import build_items, trial_items


@dataclass
class RunResult:
    rows: list[dict]
    item_keys: list[str]
    manifest: dict
    folder: Path
    run_key: str


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def write_json(path: Path, value: dict) -> None:
    """Write atomically, so a killed run never leaves a truncated manifest."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(value, indent=2, sort_keys=True, default=str), encoding="utf-8")
    os.replace(partial, path)


@contextmanager
def run_folder(runs_dir, config: dict, cache_path):
    """A run's folder and its manifest: ``running`` while the block runs, then ``finished``,
    or ``failed`` with the error if it raised (a dead run never claims to be running).

    The block adds its results to the yielded manifest dict.
    """
    run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    folder = Path(runs_dir) / run_id
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {"run_id": run_id, "status": "running", "started_at": now(), "config": config,
                "cache": str(cache_path), "git_commit": git_commit(),
                "host": {"platform": platform.platform(), "cpus": os.cpu_count()}}
    write_json(folder / "manifest.json", manifest)
    try:
        yield folder, manifest
    except BaseException as error:
        manifest.update(status="failed", finished_at=now(),
                        error=f"{type(error).__name__}: {error}")
        write_json(folder / "manifest.json", manifest)
        raise
    manifest.update(status="finished", finished_at=now())
    write_json(folder / "manifest.json", manifest)


def execute_run(config: RunConfig, records, demos, cache_path, runs_dir,
                progress: bool = True, trials: list[dict] | None = None,
                run_file: dict | None = None) -> RunResult:
    """Build items, run them through the backend with the cache, write the run folder.

    With ``trials`` (a study's, from ``experiments.schedule.design_trials``) the items are
    those trials; without, the task's items of ``records``.  No items is an error.
    ``run_file``: the run's fields as a run file names them (kept, and written as run.toml).
    """
    settings = {**asdict(config), "spec": asdict(config.spec), "params": config.params.to_dict()}
    prices = load_prices(config.prices) if config.prices else None
    price = prices.price(config.model) if prices else None
    guard = BudgetGuard(parse_budget(config.budget), price, config.model, prices) \
        if config.budget else None
    with run_folder(runs_dir, settings, cache_path) as (folder, manifest):
        if run_file is not None:
            manifest["run_file"] = {"fields": run_file, "libraries": library_versions()}
        timing = manifest["timing"] = {}
        start = time.perf_counter()
        if trials is None:
            items = build_items(records, config.spec, demos, config.limit)
        else:
            items = trial_items(trials, records, config.spec, demos, config.limit)
        if not items:
            raise ValueError(f"no {config.spec.task} items in these stimuli: nothing to run")
        timing["build_items_s"] = time.perf_counter() - start
        start = time.perf_counter()
        backend = load_backend(config.backend, config.model, **(config.backend_options or {}))
        timing["load_backend_s"] = time.perf_counter() - start
        check_test_clips(items, config, backend)  # an item it cannot answer fails forever
        try:
            with ResultCache(cache_path) as cache:
                runner = Runner(backend, cache, config.params, config.scoring,
                                config.batch_size, progress, guard)
                rows = runner.run(items)
        finally:
            backend.close()
        key = run_key(config, runner.description)
        settings = answer_settings(config, runner.description)
        for row in rows:  # so that analysis tells apart runs that answer differently
            row["extra"][C.EXTRA_RUN] = settings
        ledger = summarise([{k: r["extra"][k] for k in C.LEDGER_FIELDS} for r in rows],
                           sum(bool(r["correct"]) for r in rows), price)
        if prices is not None and price is not None:
            # A cost is the stored tokens at the prices given now, not a stored bill.
            ledger.update(currency=prices.currency, priced_by=prices.source)
        elif prices is not None:  # said, rather than a cost of nothing
            ledger["unpriced"] = f"no price for {config.model!r} in {prices.source}"
        manifest.update(backend=runner.description, counts=runner.stats.as_dict(),
                        n_rows=len(rows), run_key=key, ledger=ledger)
        with open(folder / "trials.jsonl", "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, default=str) + "\n")
        if run_file is not None:
            (folder / "run.toml").write_text(run_file_text(manifest), encoding="utf-8")
    return RunResult(rows, [item.key for item in items], manifest, folder, key)


def check_test_clips(items, config: RunConfig, backend: Backend) -> None:
    """Refuse up front the items whose test clip (the request's last video) has fewer frames
    than the backend answers from, so a run can complete instead of failing them on every
    rerun."""
    tests = {item.stimulus.id: item for item in items
             if any(v.kind == "video" for v in item.request.visuals)}
    videos = {sid: [v for v in item.request.visuals if v.kind == "video"][-1]
              for sid, item in tests.items()}
    check_frames([tests[sid].stimulus for sid in tests], videos, config.spec,
                 backend.min_frames, who=f"--backend {backend.name} --model {config.model}")


# What a run may spend and its price file: they change no answer, and a path or a budget
# of this machine and account would make the file fail elsewhere; the manifest keeps them.
SPENDING = ("budget", "prices")


def run_file_text(manifest: dict) -> str:
    """The run file of a run's manifest: the fields that reproduce its answers (not what it
    may spend), then the libraries it ran with."""
    stored = manifest["run_file"]
    lines = [f"# The run file of model run {manifest.get('run_id')} (run key "
             f"{manifest.get('run_key')}).", "# manage.py run-models --config <this file> "
             "runs it again: on the same weights and libraries, every answer is cached.", ""]
    lines += [f"{key} = {_toml_value(value)}" for key, value in sorted(stored["fields"].items())
              if key not in SPENDING]
    lines += ["", "[libraries]"]
    lines += [f"{name} = {_toml_value(version)}"
              for name, version in sorted(stored["libraries"].items())]
    return "\n".join(lines) + "\n"


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)  # 4, 0.6, 1e-05, inf: each TOML as written
    # A JSON string without ASCII escapes is a TOML basic string, but for DEL, which TOML
    # wants escaped too.
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")


def failure_summary(errors: list[dict], total: int) -> str:
    """Failed items counted once each, then each distinct cause once with its items and
    whether a rerun can help."""
    causes: dict[tuple[str, bool], set[str]] = {}
    for error in errors:
        cause = error.get("cause") or error["error"].strip().splitlines()[-1]
        causes.setdefault((cause, bool(error.get("transient"))), set()).add(error["item"])
    failed = len({error["item"] for error in errors})
    lines = [f"{failed} of {total} items failed:"]
    for (cause, transient), items in sorted(causes.items(), key=lambda c: -len(c[1])):
        advice = ("transient: rerun the same command to retry only the failed items"
                  if transient else "a rerun fails the same way until the cause is fixed")
        lines.append(f"  {len(items)} item{'' if len(items) == 1 else 's'}: {cause} [{advice}]")
    return "\n".join(lines)
