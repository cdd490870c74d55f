"""The reference backend: Hugging Face transformers (Qwen2-VL, Qwen2.5-VL, Qwen3-VL,
LLaVA-OneVision, and any ``AutoModelForImageTextToText`` with a chat template), on cuda or cpu.

Videos are passed as decoded frame arrays with ``video_metadata`` (transformers 5.x would
otherwise decode through torchcodec and sample by itself).  Batches are left-padded so that
the last position of every row is its answer position and batched logits equal single ones.

Clips of different lengths in one call (a mixed batch, or few-shot demonstrations sampled to
another frame count than the test clip) are never padded or resampled: models whose processor
stacks each clip's frames into one tensor (LLaVA-OneVision) get each clip encoded on its own
(see ``hf_encoding.HFEncoding.encode``), and the row's info says so (``video_encoding``).
"""
from __future__ import annotations

from typing import Any

from analysis.vlm.backends.base import (
    SURFACE_FORMS,
    Backend,
    Generation,
    GenerationParams,
    LabelScores,
    Request,
)
from analysis.vlm.backends.hf_encoding import HFEncoding
from analysis.vlm.backends.processor_inputs import item_seed, processor_fingerprint
from analysis.vlm.backends.vision_windows import group_windows
from analysis.vlm.provenance import library_versions, weights_fingerprint
from analysis.vlm.reasoning import prompt_opens, split_generated, tags


class TransformersBackend(HFEncoding, Backend):
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

    def inspect(self, request: Request) -> dict:
        inputs = self.encode([request])
        return {**self._row_info([request], inputs)[0],
                "n_prompt_tokens": int(inputs["input_ids"].shape[1])}

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


def _dtype_name(dtype: str, device: str) -> str:
    if dtype == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    if dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"dtype must be auto, float32, bfloat16 or float16, got {dtype!r}")
    return dtype
