"""The reference backend: Hugging Face transformers (Qwen2-VL, Qwen2.5-VL, Qwen3-VL,
LLaVA-OneVision, and any ``AutoModelForImageTextToText`` with a chat template), on cuda or cpu.

Videos are passed as decoded frame arrays with ``video_metadata`` (transformers 5.x would
otherwise decode through torchcodec and sample by itself).  Batches are left-padded so that
the last position of every row is its answer position and batched logits equal single ones.

Clips of different lengths in one call (a mixed batch, or few-shot demonstrations sampled to
another frame count than the test clip) are never padded or resampled: models whose processor
stacks each clip's frames into one tensor (LLaVA-OneVision) get each clip encoded on its own
(see ``TransformersBackend.encode``), and the row's info says so (``video_encoding``).
"""
from __future__ import annotations

import inspect as _inspect
from typing import Any

from analysis.vlm.backends.base import (
    SURFACE_FORMS,
    Backend,
    Generation,
    GenerationParams,
    LabelScores,
    Request,
)
from analysis.vlm.backends.processor_inputs import (
    hf_messages,
    item_seed,
    processor_fingerprint,
    video_metadata,
    visuals_in_order,
)
from analysis.vlm.backends.vision_windows import group_windows
from analysis.vlm.provenance import library_versions, weights_fingerprint
from analysis.vlm.reasoning import prompt_opens, split_generated, tags

VIDEO_TOKEN_TYPE = 2  # mm_token_type_ids: text 0, image 1, video 2
STACKED, PER_CLIP = "stacked", "per_clip"  # how a call's clips reached the vision encoder


class TransformersBackend(Backend):
    name = "hf"
    # AutoModelForImageTextToText picks the architecture at load time; transformers' static
    # type for it lacks the per-architecture methods used here (get_video_features, ...).
    model: Any
    _description: dict | None
    _weights: str | None = None  # given by from_loaded; else hashed from the hub files

    def __init__(self, model: str, *, device: str = "auto", dtype: str = "auto",
                 attn_implementation: str | None = None):
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.torch = torch
        self.model_id = model
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        self.dtype_name = _dtype_name(dtype, self.device)
        self.processor = AutoProcessor.from_pretrained(model)
        options = {"dtype": getattr(torch, self.dtype_name)}
        if attn_implementation:
            options["attn_implementation"] = attn_implementation
        self.model = AutoModelForImageTextToText.from_pretrained(model, **options)
        self.model.to(self.device).eval()
        group_windows(self.model)  # batches pay per clip in Python otherwise
        if self.processor.chat_template is None:
            raise ValueError(f"{model}: the processor has no chat template")
        self._description = None
        self.thinking: bool | None = None  # the run's switch, set by ``check``

    @classmethod
    def from_loaded(cls, model, processor, model_id: str, device: str, weights_sha256: str):
        """Wrap an already built model (benchmarks of random real-size architectures)."""
        import torch

        backend = cls.__new__(cls)
        backend.torch, backend.model_id, backend.device = torch, model_id, device
        backend.dtype_name = str(model.dtype).removeprefix("torch.")
        backend.processor, backend.model = processor, model.to(device).eval()
        group_windows(backend.model)
        backend._description = None
        backend._weights = weights_sha256
        backend.thinking = None
        return backend

    # -- provenance --------------------------------------------------------------------------
    def describe(self) -> dict:
        if self._description is None:
            self._description = {
                "backend": self.name, "model": self.model_id,
                "weights_sha256": self._weights or weights_fingerprint(self.model_id),
                "architecture": type(self.model).__name__, "dtype": self.dtype_name,
                "device_kind": self.device.split(":")[0],
                "processor_sha256": processor_fingerprint(self.processor),
                "libraries": library_versions(),
            }
        return self._description

    def check(self, params: GenerationParams, kinds: set[str]) -> None:
        """Refuse a thinking switch the chat template does not have; the switch then
        applies to every prompt this backend renders."""
        if params.thinking is not None and "enable_thinking" not in self.processor.chat_template:
            raise ValueError(f"--thinking: the chat template of {self.model_id} has no "
                             "enable_thinking switch; leave --thinking out")
        self.thinking = params.thinking

    # -- encoding -----------------------------------------------------------------------------
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

    def inspect(self, request: Request) -> dict:
        inputs = self.encode([request])
        return {**self._row_info([request], inputs)[0],
                "n_prompt_tokens": int(inputs["input_ids"].shape[1])}

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

    # -- generation and scoring ----------------------------------------------------------------
    def generate(self, requests: list[Request], params: GenerationParams
                 ) -> list[Generation | Exception]:
        if not params.greedy:
            # Sampling is made independent of batch composition: one seeded call per item.
            return [self._generate_batch([r], params, item_seed(params.seed, self.render(r)))[0]
                    for r in requests]
        return self._generate_batch(requests, params, params.seed)

    def _generate_batch(self, requests, params, seed) -> list[Generation | Exception]:
        torch = self.torch
        inputs = self.encode(requests)
        info = self._row_info(requests, inputs)
        tokenizer = self.processor.tokenizer
        options = {"max_new_tokens": params.max_new_tokens, "do_sample": not params.greedy,
                   "repetition_penalty": params.repetition_penalty,
                   "pad_token_id": tokenizer.pad_token_id}
        if not params.greedy:
            options.update(temperature=params.temperature, top_p=params.top_p)
        else:
            options.update(temperature=None, top_p=None, top_k=None)
        prompt_len = inputs["input_ids"].shape[1]
        opened = [prompt_opens(self.render(r), self.model_id) for r in requests]
        if params.thinking_budget is not None:
            from transformers import StoppingCriteriaList

            options["stopping_criteria"] = StoppingCriteriaList([_ReasoningBudget(
                prompt_len, params.thinking_budget, opened, tags(self.model_id),
                self.processor.batch_decode)])
        torch.manual_seed(seed)
        with torch.no_grad():
            output = self.model.generate(**self.model_inputs(inputs), **options)
        n_prompt = inputs["attention_mask"].sum(dim=1).tolist()
        stop = {tokenizer.pad_token_id, tokenizer.eos_token_id}
        generated = [[t for t in row if t not in stop] for row in output[:, prompt_len:].tolist()]

        def decode(ids: list[int]) -> str:
            return tokenizer.decode(ids, skip_special_tokens=True)
        out: list[Generation | Exception] = []
        for i, ids in enumerate(generated):
            split = split_generated(ids, decode, self.model_id, opened[i])
            out.append(Generation(decode(ids), int(n_prompt[i]), len(ids), info[i],
                                  split.as_dict()))
        return out

    def label_token_ids(self, labels: tuple[str, ...]) -> dict[str, dict[str, int]]:
        """``{label: {surface form: token id}}`` for forms that are a single token."""
        tokenizer = self.processor.tokenizer
        out = {}
        for label in labels:
            forms: dict[str, int] = {}
            for form in SURFACE_FORMS.get(label, (label, " " + label)):
                ids = tokenizer.encode(form, add_special_tokens=False)
                if len(ids) == 1 and ids[0] not in forms.values():
                    forms[form] = ids[0]
            if not forms:
                raise ValueError(f"label {label!r} has no single-token surface form")
            out[label] = forms
        return out

    def score(self, requests: list[Request], labels: tuple[str, ...]
              ) -> list[LabelScores | Exception]:
        torch = self.torch
        inputs = self.encode(requests)
        info = self._row_info(requests, inputs)
        forms = self.label_token_ids(labels)
        with torch.no_grad():
            logits = self.model(**self.model_inputs(inputs)).logits[:, -1, :].float()
        logp = torch.log_softmax(logits, dim=-1)
        out: list[LabelScores | Exception] = []
        n_prompt = inputs["attention_mask"].sum(dim=1).tolist()
        for row in range(logp.shape[0]):
            info[row]["n_prompt_tokens"] = int(n_prompt[row])
            scores = {label: float(torch.logsumexp(logp[row, list(ids.values())], dim=0))
                      for label, ids in forms.items()}
            out.append(LabelScores(scores, {k: list(v) for k, v in forms.items()}, info[row]))
        return out

    def close(self) -> None:
        self.model = None
        if self.device.startswith("cuda"):
            self.torch.cuda.empty_cache()


class _ReasoningBudget:
    """Stops each row that has generated ``budget`` tokens inside a reasoning not yet closed
    (counted from its first generated token); the row is then stored as cut off."""

    def __init__(self, prompt_len: int, budget: int, opened: list[bool],
                 reasoning_tags: tuple[str, str], decode):
        self.start, self.budget, self.opened = prompt_len, budget, opened
        self.opening, self.closing = reasoning_tags
        self.decode = decode

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        if input_ids.shape[1] - self.start < self.budget:
            return done
        for row, text in enumerate(self.decode(input_ids[:, self.start:],
                                               skip_special_tokens=True)):
            thinking = self.opened[row] or self.opening in text
            done[row] = thinking and self.closing not in text
        return done


def _temporal_info(per_video: list[int]) -> dict:
    """The test clip's count (the last video) and every video's, demonstrations included."""
    return {"temporal_position_ids": per_video[-1] if per_video else None,
            "temporal_position_ids_per_video": per_video}


def _dtype_name(dtype: str, device: str) -> str:
    if dtype == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    if dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"dtype must be auto, float32, bfloat16 or float16, got {dtype!r}")
    return dtype
