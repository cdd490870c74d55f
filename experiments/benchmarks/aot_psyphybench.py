"""AoT-PsyPhyBENCH's published files, read into plain records.

The benchmark (Matta et al., sec. 3) is 212 clips of Hanyu et al. (2023), each shown forward
(item ``"00001"``, answer F) and reversed (item ``"00001_rev"``, answer B): 424 test items.
The release names two categories differently from the paper; :data:`CATEGORY_MAP` maps them
to :data:`experiments.categories.CATEGORIES`.  Copies of the released files ship in
``data/aot_psyphybench/`` (provenance in ``SOURCE.md``) and are the defaults everywhere.
"""
from __future__ import annotations

import ast
import csv
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

NAME = "aot-psyphybench"
DATA_DIR = Path(__file__).resolve().parent / "data" / "aot_psyphybench"
METADATA_CSV = DATA_DIR / "AoT-PsyPhyBENCH_dataset_metadata.csv"
ITEMS_JSON = DATA_DIR / "benchmark_items.json"
FEW_SHOT_JSON = DATA_DIR / "few_shot_no_reasoning.json"
MULTI_STEP_COT_JSON = DATA_DIR / "few_shot_observe_reasoning.json"

# Release name -> Chronoscope category (paper sec. 3: Explode is Diffusion, Cut_Delete Division).
CATEGORY_MAP = {"Proceed": "Proceed", "Fall": "Fall", "Explode": "Diffusion",
                "Cut_Delete": "Division", "Put": "Put"}
NO_VIDEO = "no_video_found"
REVERSED_SUFFIX = "_rev"
SPLIT_TEST, SPLIT_DEMO = "test", "demo"
FORWARD, BACKWARD = "forward", "backward"
METADATA_COLUMNS = ("id", "folder", "filename", "motion_category",
                    "source_filename_Hanyu2023_MiT2019")
_CLIP_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class BenchmarkClip:
    """One metadata row: a source clip and where the release says it came from."""

    clip_id: str  # "00001"
    video_name: str  # "00001.mp4", the name a researcher gives the downloaded file
    folder: str  # Moments-in-Time action folder
    filename: str  # Moments-in-Time file name, or "no_video_found"
    source_filename: str  # file name in Hanyu et al. (2023)
    published_categories: tuple[str, ...]  # as released, e.g. ("Fall", "Explode")
    categories: tuple[str, ...]  # ours, e.g. ("Fall", "Diffusion")

    @property
    def video_found(self) -> bool:
        """False where the release itself could not locate the video."""
        return self.filename != NO_VIDEO

    @property
    def reversed_name(self) -> str:
        return f"{self.clip_id}{REVERSED_SUFFIX}.mp4"


@dataclass(frozen=True)
class Metadata:
    """All clips of a metadata file, in file order."""

    clips: tuple[BenchmarkClip, ...]

    @property
    def missing_ids(self) -> list[str]:
        """Clips whose row says ``no_video_found``."""
        return [clip.clip_id for clip in self.clips if not clip.video_found]

    def by_id(self) -> dict[str, BenchmarkClip]:
        return {clip.clip_id: clip for clip in self.clips}


@dataclass(frozen=True)
class BenchmarkItem:
    """One published test item: a clip in one direction and its answer."""

    item_id: str  # "00001" or "00001_rev"
    clip_id: str
    direction: str  # "forward" | "backward"
    answer: str  # "F" | "B"
    video_name: str  # "00001_rev.mp4"
    prompt: str  # the user text as released (the protocol uses sec. 4.1's prompts)
    split: str = SPLIT_TEST


@dataclass(frozen=True)
class Demonstration:
    """A few-shot demonstration: a benchmark item and the assistant turn shown for it."""

    item_id: str
    clip_id: str
    direction: str
    label: str  # "F" | "B": the final answer
    answer: str  # the whole assistant turn (a reasoning trace, then the label)
    split: str = SPLIT_DEMO


def item_id_for(clip_id: str, direction: str) -> str:
    """``("00001", "backward") -> "00001_rev"``."""
    if direction not in (FORWARD, BACKWARD):
        raise ValueError(f"direction must be {FORWARD!r} or {BACKWARD!r}, got {direction!r}")
    return clip_id + (REVERSED_SUFFIX if direction == BACKWARD else "")


def split_item_id(item_id: str) -> tuple[str, str]:
    """``"00001_rev" -> ("00001", "backward")``; ``"00001" -> ("00001", "forward")``."""
    if item_id.endswith(REVERSED_SUFFIX):
        return item_id[: -len(REVERSED_SUFFIX)], BACKWARD
    return item_id, FORWARD


def map_categories(published: list[str], where: str = "") -> tuple[str, ...]:
    """Release category names to ours; unknown names raise ``ValueError`` naming them."""
    unknown = [name for name in published if name not in CATEGORY_MAP]
    if unknown or not published:
        raise ValueError(f"{where}unknown or missing motion categories {unknown or published}; "
                         f"expected any of {sorted(CATEGORY_MAP)}")
    return tuple(dict.fromkeys(CATEGORY_MAP[name] for name in published))


def _parse_category_list(text: str, where: str) -> list[str]:
    # The release writes Python list literals ("['Fall', 'Explode']"); literal_eval reads
    # them without executing anything.
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as error:
        raise ValueError(f"{where}motion_category {text!r} is not a list of names") from error
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}motion_category {text!r} is not a list of names")
    return value


def _clip(row: dict, line: int) -> BenchmarkClip:
    where = f"metadata line {line}: "
    video_name = (row.get("id") or "").strip()
    clip_id = video_name[:-4] if video_name.lower().endswith(".mp4") else ""
    if not _CLIP_ID.match(clip_id) or clip_id.endswith(REVERSED_SUFFIX):
        raise ValueError(f"{where}id {video_name!r} is not of the form '00001.mp4'")
    published = _parse_category_list(row.get("motion_category") or "", where)
    return BenchmarkClip(
        clip_id=clip_id, video_name=video_name, folder=row.get("folder") or "",
        filename=(row.get("filename") or "").strip(),
        source_filename=row.get("source_filename_Hanyu2023_MiT2019") or "",
        published_categories=tuple(published), categories=map_categories(published, where))


def read_metadata(path: str | Path = METADATA_CSV) -> Metadata:
    """Read the benchmark's metadata CSV (default: the copy shipped with Chronoscope).

    Raises
    ------
    ValueError
        On a missing column, a malformed id or category list, an unknown category or a
        repeated id, naming the line.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such metadata file")
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        absent = [c for c in METADATA_COLUMNS if c not in (reader.fieldnames or [])]
        if absent:
            raise ValueError(f"{path}: missing columns {absent}")
        clips = [_clip(row, line) for line, row in enumerate(reader, start=2)]
    seen: set[str] = set()
    repeats = []
    for clip in clips:
        if clip.clip_id in seen:
            repeats.append(clip.clip_id)
        seen.add(clip.clip_id)
    if repeats:
        raise ValueError(f"{path}: repeated clip ids {repeats[:5]}")
    if not clips:
        raise ValueError(f"{path}: no clips")
    return Metadata(tuple(clips))


def _chat_record(record: dict, where: str) -> tuple[str, str, str]:
    """(item id, user text, assistant text) of one released chat record."""
    try:
        video = Path(record["videos"][0]).name
        user = next(m["content"] for m in record["messages"] if m["role"] == "user")
        answer = next(m["content"] for m in record["messages"] if m["role"] == "assistant")
    except (KeyError, IndexError, StopIteration, TypeError) as error:
        raise ValueError(f"{where}: not a chat record with one video") from error
    if not video.endswith(".mp4"):
        raise ValueError(f"{where}: video {video!r} is not an .mp4 name")
    return video[:-4], user, answer


def _checked_label(item_id: str, label: str, where: str) -> str:
    direction = split_item_id(item_id)[1]
    if label != ("F" if direction == FORWARD else "B"):
        raise ValueError(f"{where}: item {item_id} ({direction}) has answer {label!r}")
    return direction


def _load_json(path: Path) -> list:
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of chat records")
    return data


@lru_cache(maxsize=8)
def read_items(path: str | Path = ITEMS_JSON) -> tuple[BenchmarkItem, ...]:
    """The published test items, in file order; every answer is checked against its name."""
    path = Path(path)
    items = []
    for index, record in enumerate(_load_json(path)):
        where = f"{path.name} record {index}"
        item_id, user, answer = _chat_record(record, where)
        direction = _checked_label(item_id, answer.strip(), where)
        items.append(BenchmarkItem(item_id, split_item_id(item_id)[0], direction,
                                   answer.strip(), f"{item_id}.mp4", user))
    if len({item.item_id for item in items}) != len(items):
        raise ValueError(f"{path}: repeated item ids")
    return tuple(items)


@lru_cache(maxsize=8)
def read_demonstrations(path: str | Path) -> tuple[Demonstration, ...]:
    """Demonstrations of a released few-shot file, in the paper's order.

    The label is the last line of the assistant turn (the traces end with ``"\\nF"``).
    """
    path = Path(path)
    demos = []
    for index, record in enumerate(_load_json(path)):
        where = f"{path.name} record {index}"
        item_id, _, answer = _chat_record(record, where)
        label = answer.strip().splitlines()[-1].strip() if answer.strip() else ""
        direction = _checked_label(item_id, label, where)
        demos.append(Demonstration(item_id, split_item_id(item_id)[0], direction, label, answer))
    return tuple(demos)
