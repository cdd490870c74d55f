"""Files of one answer group padded to one size, so that a file's size cannot tell an answer.

Participants download stimuli, so they see each file's size.  The forward and backward copies
of a clip are different encodes, and the frames of a frame set compress differently as a clip
goes on (ink spreading, things breaking: entropy grows with time), so unpadded sizes could
order frames or tell a direction.  Every file of a group gets one padding unit that decoders
skip (an MP4 ``free`` box at the end; a PNG private ancillary chunk before ``IEND``), sized so
the whole group ends up as large as its largest file plus one unit.
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

MP4_BOX_HEADER = 8  # 32-bit size + type
PNG_CHUNK_OVERHEAD = 12  # length + type + CRC
PNG_PAD_TYPE = b"paDd"  # ancillary (p), private (a), reserved bit clear (D), safe to copy (d)
PNG_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"


def equalize(paths: Sequence[Path]) -> int:
    """Pad every file in ``paths`` (all MP4 or all PNG) to one size; returns that size."""
    paths = [Path(p) for p in paths]
    kinds = {p.suffix.lower() for p in paths}
    if kinds == {".mp4"}:
        pad, unit = _pad_mp4, MP4_BOX_HEADER
    elif kinds == {".png"}:
        pad, unit = _pad_png, PNG_CHUNK_OVERHEAD
    else:
        raise ValueError(f"equalize pads MP4 or PNG files of one kind, got {sorted(kinds)}")
    target = max(p.stat().st_size for p in paths) + unit
    for path in paths:
        pad(path, target - path.stat().st_size)
    return target


def _pad_mp4(path: Path, extra: int) -> None:
    with open(path, "ab") as handle:
        handle.write(struct.pack(">I", extra) + b"free" + bytes(extra - MP4_BOX_HEADER))


def _pad_png(path: Path, extra: int) -> None:
    data = path.read_bytes()
    if not data.endswith(PNG_IEND):
        raise ValueError(f"{path}: not a PNG ending in IEND")
    body = bytes(extra - PNG_CHUNK_OVERHEAD)
    chunk = struct.pack(">I", len(body)) + PNG_PAD_TYPE + body + \
        struct.pack(">I", zlib.crc32(PNG_PAD_TYPE + body))
    path.write_bytes(data[:-len(PNG_IEND)] + chunk + PNG_IEND)
