"""One TRA probe run over sweep clips: cached per clip and context, resumable, with a
manifest and a CSV of :data:`analysis.columns.TRA_COLUMNS` rows for ``report --tra``.

The probe sees the forward clip participants are served (and its exact reverse), decoded
losslessly from the stored file.  Cache keys hold everything that can change a loss: probe
kind, model id and fingerprint (weights, config and processor files), library versions, the
clip's file hash, the context length and the window geometry.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.csv_cells import escape_cells
from analysis.probes.tra import BATCH_SIZE, CONTEXT_LENGTHS, STRIDE, WINDOW, load_probe, tra
from analysis.vlm.cache import ResultCache
from analysis.vlm.provenance import library_versions, stable_hash, weights_fingerprint
from analysis.vlm.run import run_folder


@dataclass(frozen=True)
class SweepClip:
    """A sweep clip as the probe needs it (built by the database layer)."""

    clip_key: str
    path: str  # the forward clip participants are served
    sha256: str
    scenario: str
    parameter: str | None
    parameter_value: float | None
    process: str


@dataclass
class ProbeResult:
    rows: list[dict]
    csv_path: Path
    manifest: dict


def _decoded(path: str) -> np.ndarray:
    """Every frame of ``path`` as RGB."""
    from experiments import media

    _, frames = media.scan(path, "rgb24")
    if frames is None:  # unreachable: with a format, scan returns the frames
        raise media.MediaError(f"{path}: scan returned no decoded frames")
    return frames


def _clip_losses(probe, cache: ResultCache, identity: dict, clip: SweepClip,
                 context_lengths) -> tuple[dict[int, dict], int]:
    """The clip's losses at each context length, and how many were computed: the cached ones
    are read, the others computed in one pass over the clip (V-JEPA 2's targets are shared
    by all context lengths) and cached."""
    keys = {context: stable_hash({**identity, "clip_sha256": clip.sha256, "context": context})
            for context in context_lengths}
    # Only the losses are cached: two clips may share a file (and a key) but never their labels.
    cached = {context: cache.get(key) for context, key in keys.items()}
    losses = {context: pair for context, pair in cached.items() if pair is not None}
    missing = [context for context in keys if context not in losses]
    if missing:
        computed = probe.clip_losses(_decoded(clip.path), missing)
        for context, (forward, backward) in zip(missing, computed):
            losses[context] = {"loss_forward": forward, "loss_reversed": backward}
            cache.put(keys[context], "tra", losses[context])
    return losses, len(missing)


def run_tra_probe(kind: str, model: str, clips: list[SweepClip], cache_path, runs_dir, *,
                  device: str = "cpu", context_lengths=CONTEXT_LENGTHS,
                  batch_size: int = BATCH_SIZE, progress: bool = True) -> ProbeResult:
    """TRA of every clip at every context length; cached results are never recomputed."""
    from tqdm.auto import tqdm

    # The batch size changes no loss beyond float rounding, so it is recorded here but is no
    # part of the cache key.
    settings = {"probe": kind, "model": model, "device": device, "window": WINDOW,
                "stride": STRIDE, "context_lengths": list(context_lengths),
                "batch_size": batch_size, "clips": [clip.clip_key for clip in clips]}
    with run_folder(runs_dir, settings, cache_path) as (folder, manifest):
        start = time.perf_counter()
        probe = load_probe(kind, model, device=device, batch_size=batch_size)
        identity = {"probe": kind, "model": model, "fingerprint": weights_fingerprint(model),
                    "libraries": library_versions(), "window": WINDOW, "stride": STRIDE}
        manifest["timing"] = {"load_probe_s": time.perf_counter() - start}
        counts = manifest["counts"] = {"cached": 0, "computed": 0}
        rows = []
        with ResultCache(cache_path) as cache, tqdm(
                total=len(clips) * len(context_lengths), unit="loss", disable=not progress,
                desc=f"tra:{kind}") as bar:
            for clip in clips:
                losses, n_computed = _clip_losses(probe, cache, identity, clip, context_lengths)
                counts["computed"] += n_computed
                counts["cached"] += len(context_lengths) - n_computed
                for context in context_lengths:
                    pair = losses[context]
                    rows.append({"model": model, "clip_id": clip.clip_key,
                                 "scenario": clip.scenario, "process": clip.process,
                                 "parameter": clip.parameter,
                                 "parameter_value": clip.parameter_value,
                                 "context_frames": context, **pair,
                                 "tra": tra(pair["loss_forward"], pair["loss_reversed"])})
                bar.update(len(context_lengths))
        csv_path = folder / "tra.csv"
        escape_cells(pd.DataFrame(rows, columns=list(C.TRA_COLUMNS))).to_csv(csv_path,
                                                                            index=False)
        manifest.update(n_rows=len(rows), csv=str(csv_path))
    return ProbeResult(rows, csv_path, manifest)
