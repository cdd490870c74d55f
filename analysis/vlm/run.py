"""One model run end to end (items -> backend -> cache -> rows) and its manifest.

The manifest (``manifest.json`` in the run folder) records provenance and timing: the
backend's description (model id, weights hash, dtype, library and processor hashes), the
task settings, decoding parameters and seed, counts (cached, computed, errors,
unparseable) and seconds spent loading, building items and in the model.  It is written
when the run starts (status "running") and again when it ends.
"""
from __future__ import annotations

import hashlib
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

from analysis.vlm import prompts
from analysis.vlm.backends import load_backend
from analysis.vlm.backends.base import GenerationParams
from analysis.vlm.cache import ResultCache
from analysis.vlm.runner import Runner
from analysis.vlm.tasks import TaskSpec, build_items


@dataclass
class RunConfig:
    backend: str
    model: str
    spec: TaskSpec
    params: GenerationParams
    scoring: str = "both"
    batch_size: int = 8
    limit: int | None = None
    backend_options: dict | None = None

    def __post_init__(self):
        if self.scoring == "logits" and self.spec.task == "aot" \
                and self.spec.setting in prompts.COT_SETTINGS:
            raise ValueError(
                f"setting {self.spec.setting!r} is scored from its generated reasoning; "
                "logit scoring would read an answer before any reasoning. Use --scoring "
                "generate (or both: chain-of-thought items are then generated only)")


@dataclass
class RunResult:
    rows: list[dict]
    item_keys: list[str]
    manifest: dict
    folder: Path
    run_key: str


def run_key(config: RunConfig, description: dict) -> str:
    """The run's identity: model, revision and every setting that can change an answer.

    Reruns with the same identity complete one stored run instead of adding another; a run
    in another precision, on another device kind or library set is another run. Not part of
    it: ``limit`` and ``batch_size`` (which items run now, and how fast), and volatile server
    fields (a served model's creation time, which the description leaves out).
    """
    identity = {"backend": config.backend, "model": config.model,
                # Everything the cache keys on too: weights, dtype, device kind, library
                # versions, processor, a server's URL and stable model fields.
                "description": description,
                "spec": asdict(config.spec), "params": config.params.to_dict(),
                "scoring": effective_scoring(config)}
    encoded = json.dumps(identity, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()


def effective_scoring(config: RunConfig) -> str:
    """``scoring`` as it applies: where items are never logit-scored (frame orders,
    chain-of-thought settings), "both" and "generate" are the same run."""
    generation_only = config.spec.task == "frame_order" or (
        config.spec.task == "aot" and config.spec.setting in prompts.COT_SETTINGS)
    return "generate" if generation_only and config.scoring == "both" else config.scoring


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
                progress: bool = True) -> RunResult:
    """Build items, run them through the backend with the cache, write the run folder."""
    settings = {**asdict(config), "spec": asdict(config.spec), "params": config.params.to_dict()}
    with run_folder(runs_dir, settings, cache_path) as (folder, manifest):
        timing = manifest["timing"] = {}
        start = time.perf_counter()
        items = build_items(records, config.spec, demos, config.limit)
        timing["build_items_s"] = time.perf_counter() - start
        start = time.perf_counter()
        backend = load_backend(config.backend, config.model, **(config.backend_options or {}))
        timing["load_backend_s"] = time.perf_counter() - start
        try:
            with ResultCache(cache_path) as cache:
                runner = Runner(backend, cache, config.params, config.scoring,
                                config.batch_size, progress)
                rows = runner.run(items)
        finally:
            backend.close()
        manifest.update(backend=runner.description, counts=runner.stats.as_dict(),
                        n_rows=len(rows))
        with open(folder / "trials.jsonl", "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, default=str) + "\n")
    keys = [item.key for item in items]
    return RunResult(rows, keys, manifest, folder, run_key(config, runner.description))
