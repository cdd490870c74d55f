"""What a local model's processor is given, shared by the transformers and vLLM backends so
that both render the same prompts and see the same frames with the same metadata: chat parts,
visuals in prompt order, ``VideoMetadata`` fields, the per-item sampling seed and the
processor's fingerprint.  No torch here.
"""
from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterator

from analysis.vlm.backends.base import Request
from analysis.vlm.sampling import Visual


def processor_fingerprint(processor) -> str:
    """sha256 of the processor class, chat template, image/video settings and tokenizer."""
    digest = hashlib.sha256(type(processor).__name__.encode())
    digest.update((processor.chat_template or "").encode())
    for part in ("image_processor", "video_processor"):
        proc = getattr(processor, part, None)
        if proc is not None:
            digest.update(proc.to_json_string().encode())
    backend = getattr(processor.tokenizer, "backend_tokenizer", None)
    if backend is None:
        digest.update(repr(processor.tokenizer).encode())
    else:
        # padding and truncation are set by the last call that asked for them (a padded
        # batch), not by the model: left in, a cache key changed once a batch was encoded
        settings = {k: v for k, v in json.loads(backend.to_str()).items()
                    if k not in ("padding", "truncation")}
        digest.update(json.dumps(settings, sort_keys=True).encode())
    return digest.hexdigest()


def hf_messages(messages: list[dict]) -> list[dict]:
    """Backend-neutral parts -> transformers chat parts (placeholders, no payloads)."""
    out = []
    for message in messages:
        parts = [{"type": p["type"]} if p["type"] in ("video", "image")
                 else {"type": "text", "text": p["text"]} for p in message["content"]]
        out.append({"role": message["role"], "content": parts})
    return out


def visuals_in_order(request: Request) -> Iterator[Visual]:
    """The request's videos and images in the order its prompt shows them."""
    for message in request.messages:
        for part in message["content"]:
            if part["type"] in ("video", "image"):
                yield request.visuals[part["visual"]]


def video_metadata(visual: Visual) -> dict:
    """VideoMetadata fields whose ``sampled_fps`` is the visual's declared rate."""
    indices = visual.metadata_indices
    natural = len(indices) / visual.total_frames * visual.native_fps
    height, width = visual.frames.shape[1:3]
    if abs(natural - visual.metadata_fps) < 1e-6:
        return {"total_num_frames": visual.total_frames, "fps": visual.native_fps,
                "frames_indices": indices, "width": width, "height": height}
    # Declared rate differs from the real spacing (e.g. native fps on sparse frames).
    return {"total_num_frames": len(indices), "fps": visual.metadata_fps,
            "frames_indices": list(range(len(indices))), "width": width, "height": height}


def item_seed(seed: int, rendered: str) -> int:
    """A sampled item's own seed, so that its answer does not depend on its batch."""
    return (seed * 1_000_003 + zlib.crc32(rendered.encode())) % (2**31)
