"""vLLM offline inference (optional extra; needs a GPU): tensor parallel for 72B-class models.

Prompts are rendered with the model's own processor chat template, exactly as in the
transformers backend, and videos are passed as our decoded frames with the same
``VideoMetadata`` fields and ``do_sample_frames=False``, so both backends see identical
inputs.  vLLM is imported only when this backend is constructed.
"""
from __future__ import annotations

import math

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
from analysis.vlm.provenance import library_versions, weights_fingerprint
from analysis.vlm.reasoning import prompt_opens, split_generated


class VLLMBackend(Backend):
    name = "vllm"

    def __init__(self, model: str, *, dtype: str = "auto", tensor_parallel_size: int = 1,
                 max_model_len: int | None = None, gpu_memory_utilization: float = 0.9,
                 top_logprobs: int = 20, max_videos: int = 5, max_images: int = 16):
        from transformers import AutoProcessor
        from vllm import LLM

        self.model_id, self.dtype_name = model, dtype
        self.top_logprobs = top_logprobs
        self.processor = AutoProcessor.from_pretrained(model)
        options = {"model": model, "dtype": dtype, "tensor_parallel_size": tensor_parallel_size,
                   "gpu_memory_utilization": gpu_memory_utilization,
                   "limit_mm_per_prompt": {"video": max_videos, "image": max_images},
                   "max_logprobs": top_logprobs}
        if max_model_len:
            options["max_model_len"] = max_model_len
        self.llm = LLM(**options)
        self.tensor_parallel_size = tensor_parallel_size
        self._description: dict | None = None

    def describe(self) -> dict:
        if self._description is None:
            self._description = {
                "backend": self.name, "model": self.model_id,
                "weights_sha256": weights_fingerprint(self.model_id), "dtype": self.dtype_name,
                "tensor_parallel_size": self.tensor_parallel_size,
                "processor_sha256": processor_fingerprint(self.processor),
                "top_logprobs": self.top_logprobs, "libraries": library_versions()}
        return self._description

    def check(self, params: GenerationParams, kinds: set[str]) -> None:
        if params.thinking is not None or params.thinking_budget is not None:
            raise ValueError("--thinking and --thinking-budget: not with --backend vllm; use "
                             "--backend hf, or 'vllm serve' with --backend openai")

    def render(self, request: Request) -> str:
        return self.processor.apply_chat_template(
            hf_messages(request.messages), add_generation_prompt=True, tokenize=False)

    def _inputs(self, request: Request) -> dict:
        videos, images = [], []
        for visual in visuals_in_order(request):
            if visual.kind == "video":
                videos.append((visual.frames, video_metadata(visual)))
            else:
                images.append(visual.frames[0])
        data = {}
        if videos:
            data["video"] = videos if len(videos) > 1 else videos[0]
        if images:
            data["image"] = images if len(images) > 1 else images[0]
        return {"prompt": self.render(request), "multi_modal_data": data,
                "mm_processor_kwargs": {"do_sample_frames": False}}

    def generate(self, requests: list[Request], params: GenerationParams
                 ) -> list[Generation | Exception]:
        from vllm import SamplingParams

        batch = [self._inputs(r) for r in requests]
        sampling = [SamplingParams(max_tokens=params.max_new_tokens,
                                   temperature=params.temperature, top_p=params.top_p,
                                   repetition_penalty=params.repetition_penalty,
                                   seed=item_seed(params.seed, b["prompt"]))
                    for b in batch]
        outputs = self.llm.generate(batch, sampling, use_tqdm=False)
        tokenizer = self.processor.tokenizer

        def decode(ids: list[int]) -> str:
            return tokenizer.decode(ids, skip_special_tokens=True)
        return [Generation(o.outputs[0].text, len(o.prompt_token_ids),
                           len(o.outputs[0].token_ids), {},
                           split_generated(list(o.outputs[0].token_ids), decode, self.model_id,
                                           prompt_opens(b["prompt"], self.model_id)).as_dict())
                for o, b in zip(outputs, batch)]

    def score(self, requests: list[Request], labels: tuple[str, ...]
              ) -> list[LabelScores | Exception]:
        from vllm import SamplingParams

        tokenizer = self.processor.tokenizer
        forms = {}
        for label in labels:
            ids = {f: tokenizer.encode(f, add_special_tokens=False)
                   for f in SURFACE_FORMS.get(label, (label, " " + label))}
            forms[label] = {f: i[0] for f, i in ids.items() if len(i) == 1}
        sampling = SamplingParams(max_tokens=1, temperature=0, logprobs=self.top_logprobs)
        outputs = self.llm.generate([self._inputs(r) for r in requests], sampling, use_tqdm=False)
        results: list[LabelScores | Exception] = []
        for output in outputs:
            top = output.outputs[0].logprobs[0]  # {token id: Logprob}
            scores = {}
            for label, ids in forms.items():
                values = [top[i].logprob for i in ids.values() if i in top]
                scores[label] = (max(values) + math.log(sum(math.exp(v - max(values))
                                                            for v in values))
                                 if values else -math.inf)
            results.append(LabelScores(scores, {k: list(v) for k, v in forms.items()}))
        return results

    def close(self) -> None:
        self.llm = None
