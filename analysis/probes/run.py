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
from analysis.probes.tra import CONTEXT_LENGTHS, STRIDE, WINDOW, clip_tra_rows, load_probe, tra
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


def run_tra_probe(kind: str, model: str, clips: list[SweepClip], cache_path, runs_dir, *,
                  device: str = "cpu", context_lengths=CONTEXT_LENGTHS,
                  progress: bool = True) -> ProbeResult:
    """TRA of every clip at every context length; cached results are never recomputed."""
    from tqdm.auto import tqdm

    settings = {"probe": kind, "model": model, "device": device, "window": WINDOW,
                "stride": STRIDE, "context_lengths": list(context_lengths),
                "clips": [clip.clip_key for clip in clips]}
    with run_folder(runs_dir, settings, cache_path) as (folder, manifest):
        start = time.perf_counter()
        probe = load_probe(kind, model, device=device)
        identity = {"probe": kind, "model": model, "fingerprint": weights_fingerprint(model),
                    "libraries": library_versions(), "window": WINDOW, "stride": STRIDE}
        manifest["timing"] = {"load_probe_s": time.perf_counter() - start}
        counts = manifest["counts"] = {"cached": 0, "computed": 0}
        rows = []
        with ResultCache(cache_path) as cache, tqdm(
                total=len(clips) * len(context_lengths), unit="loss", disable=not progress,
                desc=f"tra:{kind}") as bar:
            for clip in clips:
                frames = None  # decoded only if some context length is not cached
                for context in context_lengths:
                    key = stable_hash({**identity, "clip_sha256": clip.sha256,
                                       "context": context})
                    # Only the losses are cached: two clips may share a file (and a key)
                    # but never their labels.
                    losses = cache.get(key)
                    if losses is None:
                        if frames is None:
                            frames = _decoded(clip.path)
                        [computed] = clip_tra_rows(probe, frames, model=model,
                                                   clip_id=clip.clip_key,
                                                   context_lengths=(context,))
                        losses = {k: computed[k] for k in ("loss_forward", "loss_reversed")}
                        cache.put(key, "tra", losses)
                        counts["computed"] += 1
                    else:
                        counts["cached"] += 1
                    row = {"model": model, "clip_id": clip.clip_key, "scenario": clip.scenario,
                           "process": clip.process, "parameter": clip.parameter,
                           "parameter_value": clip.parameter_value, "context_frames": context,
                           **losses, "tra": tra(losses["loss_forward"], losses["loss_reversed"])}
                    rows.append(row)
                    bar.update()
        csv_path = folder / "tra.csv"
        escape_cells(pd.DataFrame(rows, columns=list(C.TRA_COLUMNS))).to_csv(csv_path,
                                                                            index=False)
        manifest.update(n_rows=len(rows), csv=str(csv_path))
    return ProbeResult(rows, csv_path, manifest)
