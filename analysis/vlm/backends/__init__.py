"""Backend registry: plain dict of lazy import paths; a backend is imported only when picked.

Importing this package never imports torch, vllm or httpx.
"""
from __future__ import annotations

from importlib import import_module

BACKENDS = {
    "hf": "analysis.vlm.backends.hf:TransformersBackend",
    "vllm": "analysis.vlm.backends.vllm:VLLMBackend",
    "openai": "analysis.vlm.backends.openai_http:OpenAIBackend",
}


def backend_class(name: str):
    """The backend class registered under ``name`` (imports its module now)."""
    try:
        path = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose from {sorted(BACKENDS)}") from None
    module, _, attr = path.partition(":")
    return getattr(import_module(module), attr)


def load_backend(name: str, model: str, **options):
    """Instantiate backend ``name`` for ``model`` (local path, hub id or served model name)."""
    return backend_class(name)(model, **options)
