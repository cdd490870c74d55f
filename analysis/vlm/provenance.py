"""Provenance of a model run: library versions, weights fingerprints, stable hashes."""
from __future__ import annotations

import hashlib
import json
import platform
from functools import lru_cache
from importlib import metadata
from pathlib import Path

LIBRARIES = ("torch", "transformers", "tokenizers", "torchvision", "numpy", "av", "vllm",
             "openai", "httpx")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
DOCUMENTATION = ("README", "LICENSE", "NOTICE", "USE_POLICY")


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries that can change an answer (absent ones omitted)."""
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def stable_hash(value) -> str:
    """sha256 of a JSON-serialisable value with sorted keys (the cache key function)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def weights_fingerprint(model: str) -> str:
    """sha256 over every file of a local model folder that can change an answer, or the hub
    snapshot's commit.

    Not only the weights: config, generation config, processor, tokenizer and chat-template
    files change answers too (an edited ``rms_norm_eps`` must never be served from the
    cache).  Only documentation and hidden files are left out.  Files are hashed by content
    (memoised per file size and mtime within a process).
    """
    path = Path(model)
    if not path.is_dir():
        return _hub_revision(model)
    files = sorted(p for p in path.rglob("*") if p.is_file() and _can_change_answers(p, path))
    if not any(file.suffix in WEIGHT_SUFFIXES for file in files):
        raise ValueError(f"{model}: no weight files ({', '.join(WEIGHT_SUFFIXES)}) found")
    digest = hashlib.sha256()
    for file in files:
        stat = file.stat()
        digest.update(file.relative_to(path).as_posix().encode())
        digest.update(_file_sha256(str(file.resolve()), stat.st_size, stat.st_mtime_ns).encode())
    return digest.hexdigest()


def _can_change_answers(file: Path, root: Path) -> bool:
    parts = file.relative_to(root).parts
    if any(part.startswith(".") for part in parts):  # .cache/, .gitattributes
        return False
    return file.stem.upper() not in DOCUMENTATION


@lru_cache(maxsize=256)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


def _hub_revision(model: str) -> str:
    """The commit of a cached hub snapshot (offline lookup; the model was just loaded)."""
    try:
        from huggingface_hub import snapshot_download
        folder = Path(snapshot_download(model, local_files_only=True))
    except Exception as error:  # noqa: BLE001 - any failure means "cannot pin the weights"
        raise ValueError(f"cannot fingerprint the weights of {model!r}: {error}") from error
    return f"hub:{model}@{folder.name}"
