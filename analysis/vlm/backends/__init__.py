"""The model backends: one literal registry, each entry saying what its backend needs.

A backend is one module (a :class:`~analysis.vlm.backends.base.Backend` subclass) and one
entry in ``BACKENDS``; nothing else names a backend.  ``run-models`` offers every entry, passes
each backend the options it takes, refuses the options of others and asks for the ones it
requires; a run that cannot import its libraries names the entry's pip extra.  The class is
imported only when a run picks it, so importing this package never imports torch, vllm or
httpx.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING

from analysis.vlm.backends.families import returns_logprobs

if TYPE_CHECKING:
    from analysis.vlm.backends.base import Backend


def _always(model: str) -> bool:
    return True


@dataclass(frozen=True)
class BackendEntry:
    path: str  # "module:Class", imported when a run picks the backend
    summary: str  # what it is, in --backend's help
    extra: str  # the pip extra that installs its libraries
    # run-models options it takes (named like the flags) -> its constructor's keywords
    options: Mapping[str, str] = field(default_factory=dict)
    required: tuple[str, ...] = ()  # options it cannot run without
    # The option naming a torch device: a CUDA device is checked before any loading.
    device_option: str | None = None
    # The model is a name on a server (else a local folder or hub id, checked before loading).
    served: bool = False
    # Whether the model answers with log-probabilities: without them, scoring is generated.
    logprobs: Callable[[str], bool] = _always
    # Whether its answer depends on the prompt and decoding (a pixel statistic's does not:
    # those options are then no part of a run's identity).
    reads_prompt: bool = True


BACKENDS = {
    "hf": BackendEntry(
        "analysis.vlm.backends.hf:TransformersBackend", "transformers on this machine",
        extra="models", options={"device": "device", "dtype": "dtype"},
        device_option="device"),
    "vllm": BackendEntry(
        "analysis.vlm.backends.vllm:VLLMBackend", "vLLM in this process (CUDA)",
        extra="vllm", options={"dtype": "dtype", "tensor_parallel": "tensor_parallel_size"}),
    "openai": BackendEntry(
        "analysis.vlm.backends.openai_http:OpenAIBackend",
        "any OpenAI-compatible server (--base-url)", extra="openai",
        options={"base_url": "base_url", "timeout": "timeout_s", "concurrency": "concurrency",
                 "max_retries": "max_retries", "model_revision": "revision",
                 "batch_api": "batch_api", "batch_poll": "batch_poll_s"},
        required=("base_url",), served=True, logprobs=returns_logprobs),
    "motion": BackendEntry(
        "analysis.vlm.backends.motion:MotionBackend",
        "a training-free pixel statistic on the CPU, not a model (--model entropy: forward "
        "when the frames' entropy rises; motion-energy: when motion dies down); no download",
        extra="models", served=True, reads_prompt=False),
}


def backend_entry(name: str) -> BackendEntry:
    """The registry entry of backend ``name``; ValueError naming the known ones."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose from {sorted(BACKENDS)}") from None


def backend_class(name: str) -> type[Backend]:
    """The backend class registered under ``name`` (imports its module now)."""
    module, _, attr = backend_entry(name).path.partition(":")
    return getattr(import_module(module), attr)


def load_backend(name: str, model: str, **options) -> Backend:
    """Instantiate backend ``name`` for ``model`` (local path, hub id or served model name)."""
    return backend_class(name)(model, **options)
