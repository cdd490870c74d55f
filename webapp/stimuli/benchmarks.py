"""Importing a published benchmark's videos as a stimulus set (AoT-PsyPhyBENCH).

The metadata's clips become one stimulus set named after the benchmark; each clip keeps its
benchmark id as ``SourceClip.clip_key`` and split, and each direction its published item id
on ``Stimulus.item_id`` ("00001", "00001_rev"), so every result row traces to its item.
Running the import again after adding missing videos imports just the new clips.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import select

from experiments.benchmarks import aot_psyphybench as bench
from experiments.benchmarks import check_benchmark
from webapp.extensions import db
from webapp.models import SourceClip

if TYPE_CHECKING:  # video tooling is imported only when an import runs
    from experiments.benchmarks.videos import ImportPlan

STIMULUS_SET = bench.NAME


@dataclass
class BenchmarkImport:
    imported: list[SourceClip]
    already_stored: list[str]
    plan: ImportPlan

    @property
    def n_items(self) -> int:
        return sum(1 for clip in self.imported for s in clip.stimuli if s.item_id)


def import_benchmark(name: str, videos_dir: Path, root: Path, metadata_csv: Path | None = None,
                     frame_set_sizes=None) -> BenchmarkImport:
    """Import the benchmark videos found in ``videos_dir``; report what is missing.

    Raises
    ------
    ValueError
        For an unknown benchmark, unreadable metadata, a folder without any of the
        benchmark's videos, or supplied ``_rev`` files that are not frame-exact flips
        (:class:`experiments.benchmarks.videos.ReversalMismatch`); nothing is stored then.
    """
    from experiments.benchmarks.videos import plan_import
    from webapp.stimuli import catalog

    check_benchmark(name)
    metadata = bench.read_metadata(metadata_csv or bench.METADATA_CSV)
    plan = plan_import(videos_dir, metadata)
    if not plan.specs:
        raise ValueError(f"{videos_dir}: none of the {len(metadata.clips)} benchmark videos "
                         f"found (expected names like {metadata.clips[0].video_name})")
    stored = set(db.session.scalars(
        select(SourceClip.clip_key).where(SourceClip.stimulus_set == STIMULUS_SET)))
    new = [spec for spec in plan.specs if spec.clip_key not in stored]
    clips = catalog.import_clips(new, STIMULUS_SET, Path(root), frame_set_sizes) if new else []
    already = sorted(spec.clip_key for spec in plan.specs if spec.clip_key in stored)
    return BenchmarkImport(clips, already, plan)
