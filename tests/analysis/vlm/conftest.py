"""Tiny random VLMs (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, LLaVA-OneVision) and tiny clips, built
once per session.

Models are built from configs with a tokenizer trained offline (analysis.vlm.tiny),
saved to a temporary folder and reloaded with HF_HUB_OFFLINE=1, exactly as a downloaded
checkpoint would be.
"""
import os

import pytest

from experiments.catalog_records import StimulusRecord
from tests.factories import moving_square


@pytest.fixture(scope="session", autouse=True)
def hub_offline():
    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """``tiny_model(arch)`` -> folder of a saved random model (built on first use)."""
    from analysis.vlm.tiny import build_vlm

    built = {}

    def get(arch: str = "qwen2_5_vl") -> str:
        if arch not in built:
            folder = tmp_path_factory.mktemp(arch)
            build_vlm(arch, folder)
            built[arch] = str(folder)
        return built[arch]

    return get


@pytest.fixture(scope="session")
def hf_backend_for(tiny_model):
    """``hf_backend_for(arch)`` -> the transformers backend on ``tiny_model(arch)`` (cached)."""
    from analysis.vlm.backends import load_backend

    loaded = {}

    def get(arch: str = "qwen2_5_vl"):
        if arch not in loaded:
            loaded[arch] = load_backend("hf", tiny_model(arch), device="cpu", dtype="float32")
        return loaded[arch]

    return get


@pytest.fixture(scope="session")
def hf_backend(hf_backend_for):
    return hf_backend_for("qwen2_5_vl")


@pytest.fixture(scope="session")
def clips(tmp_path_factory):
    """Two source clips, each stored forward and reversed as the stimulus pipeline does."""
    from experiments.media import encode_browser_mp4, sha256_file
    from experiments.reversal import reverse_clip_checked

    folder = tmp_path_factory.mktemp("clips")
    records = []
    for clip_id in (1, 2):
        fwd, bwd = folder / f"{clip_id}_f.mp4", folder / f"{clip_id}_b.mp4"
        encode_browser_mp4(moving_square(seed=clip_id), fwd, fps=12)
        reverse_clip_checked(fwd, bwd)
        for offset, (path, direction) in enumerate(((fwd, "forward"), (bwd, "backward"))):
            records.append(StimulusRecord(
                id=clip_id * 10 + offset, public_id=f"s{clip_id}{offset}", kind="clip",
                source_clip_id=clip_id,
                direction=direction, path=str(path), sha256=sha256_file(path),
                clip_fps=12.0, clip_frame_count=24, categories=("Proceed",),
                annotations={"brief": "A white square slides to the right."}))
    return records


@pytest.fixture
def stimulus_set(app, tmp_path):
    """Two tiny source clips imported into the database as set "tiny"."""
    from pathlib import Path

    from experiments.media import encode_browser_mp4
    from experiments.stimuli import ClipSpec
    from webapp.stimuli import catalog

    sources = []
    for i in (1, 2):
        path = tmp_path / f"src{i}.mp4"
        encode_browser_mp4(moving_square(seed=i), path, fps=12)
        sources.append(ClipSpec(f"clip{i}", path, ["Fall"], annotation_brief="A square slides."))
    with app.app_context():
        catalog.import_clips(sources, "tiny", Path(app.config["STIMULUS_ROOT"]))
    return "tiny"
