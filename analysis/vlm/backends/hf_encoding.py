"""What the transformers backend gives its model: the rendered prompt, the processor's inputs
for a left-padded batch (clips of different lengths encoded one by one), and what each row
shows of its videos (temporal rope positions, frames per clip, how the clips were encoded).
"""
from __future__ import annotations

import inspect as _inspect
from typing import Any

from analysis.vlm.backends.base import Request
from analysis.vlm.backends.processor_inputs import hf_messages, video_metadata, visuals_in_order

VIDEO_TOKEN_TYPE = 2  # mm_token_type_ids: text 0, image 1, video 2
STACKED, PER_CLIP = "stacked", "per_clip"  # how a call's clips reached the vision encoder


class HFEncoding:
    """The encoding half of :class:`~analysis.vlm.backends.hf.TransformersBackend`."""

    torch: Any
    processor: Any
    model: Any
    device: str
    thinking: bool | None  # the run's switch

    def render(self, request: Request) -> str:
        switch = {} if self.thinking is None else {"enable_thinking": self.thinking}
        return self.processor.apply_chat_template(
            hf_messages(request.messages), add_generation_prompt=True, tokenize=False, **switch)

    def encode(self, requests: list[Request]):
        """Processor outputs for a left-padded batch (public for tests and benchmarks).

        Where the processor cannot stack the clips (``pixel_values_videos`` of shape
        (clips, frames, C, H, W) needs equal frame counts), ``pixel_values_videos`` is a list
        of per-clip tensors instead, which ``model_inputs`` encodes clip by clip.
        """
        from transformers.video_utils import VideoMetadata

        videos, metadata, images = [], [], []
        for request in requests:
            shown = list(visuals_in_order(request))
            for visual in shown:
                if visual.kind == "video":
                    videos.append(visual.frames)
                    metadata.append(VideoMetadata(**video_metadata(visual)))
            # Grouped per prompt: LLaVA-OneVision encodes several images of one prompt as a
            # multi-image input (no anyres tiling); Qwen processors flatten the groups.
            images.append([v.frames[0] for v in shown if v.kind == "image"])
        kwargs = {"text": [self.render(r) for r in requests], "padding": True,
                  "padding_side": "left", "return_tensors": "pt"}
        if videos:
            kwargs.update(videos=videos, video_metadata=metadata, do_sample_frames=False)
            if hasattr(self.processor.video_processor, "cap_pixels_per_frame"):
                kwargs["cap_pixels_per_frame"] = False  # keep transformers' documented sizing
        if any(images):
            kwargs["images"] = images
        try:
            return self.processor(**kwargs).to(self.device)
        except ValueError as error:
            if len({len(frames) for frames in videos}) < 2:
                raise  # not a matter of clip lengths
            return self._encode_unstacked(kwargs, error)

    def _encode_unstacked(self, kwargs: dict, error: ValueError):
        """Processor outputs whose clips stay separate (their frame counts differ).

        Padding clips to a common length would show the model frames that are not in the
        stimulus (a frozen or black tail is itself a cue to direction), and resampling would
        make what a clip shows depend on its batch partners.  The vision encoder sees each
        frame on its own and closes each clip with one newline token, so encoding the clips
        one at a time gives exactly the features of a one-clip call: batched and few-shot
        rows equal their one-at-a-time results.
        """
        from transformers import BatchFeature

        if "mm_encoder_outputs" not in _inspect.signature(self.model.forward).parameters:
            raise ValueError(f"{type(self.model).__name__} needs clips of equal frame counts "
                             "in one call and takes no pre-encoded video features") from error
        out = dict(self.processor(**{**kwargs, "return_tensors": None}))
        clips = [self.torch.as_tensor(clip) for clip in out.pop("pixel_values_videos")]
        inputs = BatchFeature(out, tensor_type="pt").to(self.device)
        inputs["pixel_values_videos"] = clips
        return inputs

    def model_inputs(self, inputs) -> dict:
        """Keyword arguments for the model's forward and generate: clips left separate by
        ``encode`` become pre-encoded video features (call under ``torch.no_grad``)."""
        clips = inputs.get("pixel_values_videos")
        if not isinstance(clips, list):
            return dict(inputs)
        from transformers.modeling_outputs import BaseModelOutputWithPooling

        features = [self.model.get_video_features(
            pixel_values_videos=clip[None].to(self.device, self.model.dtype),
            return_dict=True).pooler_output for clip in clips]
        # (1, tokens, dim) per clip, in prompt order across the batch: the order in which the
        # model scatters video features over the video placeholder tokens.
        encoded = BaseModelOutputWithPooling(pooler_output=self.torch.cat(features, dim=1))
        rest = {key: value for key, value in inputs.items() if key != "pixel_values_videos"}
        return {**rest, "mm_encoder_outputs": {"video": encoded}}

    def temporal_ids(self, inputs) -> list[list[int]]:
        """Per row, the distinct temporal rope positions of each video's tokens, in prompt
        order (demonstrations first, the test clip last); empty lists where the model has
        no multimodal rope."""
        get_rope_index = getattr(getattr(self.model, "model", None), "get_rope_index", None)
        if get_rope_index is None or "mm_token_type_ids" not in inputs:
            return [[] for _ in inputs["input_ids"]]
        accepted = _inspect.signature(get_rope_index).parameters
        names = ("mm_token_type_ids", "image_grid_thw", "video_grid_thw", "second_per_grid_ts",
                 "attention_mask")
        kwargs = {k: inputs[k] for k in names if k in inputs and k in accepted}
        with self.torch.no_grad():
            positions, _ = get_rope_index(inputs["input_ids"], **kwargs)
        out = []
        for row in range(positions.shape[1]):
            mask = (inputs["mm_token_type_ids"][row] == VIDEO_TOKEN_TYPE).tolist()
            # Each video is one contiguous run of video tokens (between its vision markers).
            edges = [i for i in range(len(mask) + 1)
                     if (mask[i - 1] if i else False) != (mask[i] if i < len(mask) else False)]
            out.append([int(positions[0, row, a:b].unique().numel())
                        for a, b in zip(edges[::2], edges[1::2])])
        return out

    def _row_info(self, requests: list[Request], inputs) -> list[dict]:
        """Per row: temporal position ids, each clip's frame count and how clips were encoded."""
        encoding = PER_CLIP if isinstance(inputs.get("pixel_values_videos"), list) else STACKED
        out = []
        for request, temporal in zip(requests, self.temporal_ids(inputs)):
            info = _temporal_info(temporal)
            frames = [len(v.frames) for v in visuals_in_order(request) if v.kind == "video"]
            if frames:
                info.update(frames_per_video=frames, video_encoding=encoding)
            out.append(info)
        return out


def _temporal_info(per_video: list[int]) -> dict:
    """The test clip's count (the last video) and every video's, demonstrations included."""
    return {"temporal_position_ids": per_video[-1] if per_video else None,
            "temporal_position_ids_per_video": per_video}

