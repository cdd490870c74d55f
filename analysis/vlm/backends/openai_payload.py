"""A request's chat-completions payload for an OpenAI-compatible server.

Videos go out either as a sequence of images (``video_mode="frames"``, how AoT-PsyPhyBENCH
sent sampled frames to proprietary APIs) or as one ``video_url`` of base64 frames with the
declared fps in ``mm_processor_kwargs`` (``video_mode="video_url"``, vLLM's format).  Frames
are PNG (lossless) by default.
"""
from __future__ import annotations

import base64
import io

from analysis.vlm.backends.base import Request

VIDEO_MODES = ("frames", "video_url")


def body(request: Request, model: str, video_mode: str, frame_format: str) -> dict:
    """The chat-completions request body, without decoding parameters."""
    messages = [{"role": m["role"],
                 "content": [out for p in m["content"]
                             for out in _parts(p, request, video_mode, frame_format)]}
                for m in request.messages]
    out: dict[str, object] = {"model": model, "messages": messages}
    videos = [v for v in request.visuals if v.kind == "video"]
    if video_mode == "video_url" and videos:
        out["mm_processor_kwargs"] = {"fps": videos[-1].metadata_fps}
    return out


def _parts(part: dict, request: Request, video_mode: str, frame_format: str) -> list[dict]:
    """One backend-neutral part as OpenAI content parts (a video may become several)."""
    if part["type"] == "text":
        return [{"type": "text", "text": part["text"]}]
    visual = request.visuals[part["visual"]]
    if part["type"] == "image" or video_mode == "frames":
        return [{"type": "image_url", "image_url": {"url": _data_url(f, frame_format)}}
                for f in visual.frames]
    encoded = ",".join(_b64(f, frame_format) for f in visual.frames)
    return [{"type": "video_url",
             "video_url": {"url": f"data:video/{frame_format};base64,{encoded}"}}]


def _b64(frame, fmt: str) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    options = {"quality": 95} if fmt == "jpeg" else {}
    Image.fromarray(frame).save(buffer, format=fmt.upper(), **options)
    return base64.b64encode(buffer.getvalue()).decode()


def _data_url(frame, fmt: str) -> str:
    return f"data:image/{fmt};base64,{_b64(frame, fmt)}"
