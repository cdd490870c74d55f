"""The backend registry: what each entry says is what a run gets."""
import inspect
import subprocess
import sys

import pytest

from analysis.vlm.backends import BACKENDS, backend_class
from analysis.vlm.run_config import run_config
from webapp.cli.models import run_models


def _options(backend: str, model: str = "some/model", **given) -> dict:
    """run-models' options as the command passes them: its defaults, then ``given``."""
    defaults = {param.name: param.default for param in run_models.params}
    return {**defaults, "stimulus_set": "tiny", "backend": backend, "model": model, **given}


def test_an_unknown_backend_is_refused_naming_the_known_ones():
    # It used to fall into the OpenAI branch and ask for --base-url.
    with pytest.raises(ValueError, match=r"unknown backend 'llamacpp'; choose from "
                                         r"\['hf', 'motion', 'openai', 'vllm'\]"):
        run_config(_options("llamacpp", base_url="http://127.0.0.1:9/v1"))


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_every_option_an_entry_passes_is_a_keyword_of_its_class(name):
    accepted = inspect.signature(backend_class(name)).parameters
    assert set(BACKENDS[name].options.values()) <= set(accepted)


def test_a_backend_gets_its_options_under_its_keywords():
    hf = run_config(_options("hf", device="cpu", dtype="float32"))
    assert hf.backend_options == {"device": "cpu", "dtype": "float32"}
    assert run_config(_options("hf")).backend_options == {}  # the backend's own defaults
    vllm = run_config(_options("vllm", tensor_parallel=2))
    assert vllm.backend_options == {"tensor_parallel_size": 2}
    served = run_config(_options("openai", base_url="http://x/v1", timeout=5.0))
    assert served.backend_options == {"base_url": "http://x/v1", "timeout_s": 5.0}


@pytest.mark.parametrize("backend, given, message", [
    ("vllm", {"device": "cpu"}, "--device: only for --backend hf"),
    ("openai", {"base_url": "http://x/v1", "dtype": "float16"},
     "--dtype: only for --backend hf or vllm"),
    ("hf", {"tensor_parallel": 2, "timeout": 5.0},
     "--tensor-parallel: only for --backend vllm; --timeout: only for --backend openai"),
    ("openai", {}, "--backend openai needs --base-url"),
])
def test_options_of_other_backends_and_missing_ones_are_refused(backend, given, message):
    with pytest.raises(ValueError, match=message):
        run_config(_options(backend, **given))


def test_served_models_without_logprobs_are_generated_by_default():
    assert run_config(_options("openai", "o3", base_url="http://x/v1")).scoring == "generate"
    assert run_config(_options("openai", "gpt-4o", base_url="http://x/v1")).scoring == "both"
    assert run_config(_options("hf", "o3")).scoring == "both"


def test_the_run_models_command_imports_no_backend_library():
    # httpx and tenacity come with the openai extra: the command loads without them.
    code = ("import sys, webapp.cli.models; print(sorted(m for m in ('torch', 'transformers', "
            "'vllm', 'httpx', 'tenacity') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_a_benchmark_in_any_case_is_stored_under_its_canonical_name():
    config = run_config(_options("hf", "Qwen/Qwen2-VL-7B-Instruct",
                                 benchmark="AoT-PsyPhyBENCH"))
    assert config.benchmark == "aot-psyphybench" and config.spec.fps == 2.0


def test_one_local_folder_in_any_spelling_is_one_observer(tmp_path, monkeypatch):
    from analysis.vlm.run_config import run_key

    (tmp_path / "a" / "tiny").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    configs = [run_config(_options("hf", spelling))
               for spelling in ("a/tiny", "a/tiny/", "a/../a/tiny", str(tmp_path / "a/tiny"))]
    assert {c.model for c in configs} == {str((tmp_path / "a" / "tiny").resolve())}
    assert len({run_key(c, {"model": c.model}) for c in configs}) == 1
    # A served name is the server's, never a folder here.
    assert run_config(_options("openai", "a/tiny/", base_url="http://x/v1")).model == "a/tiny/"


def test_a_hub_snapshot_folder_is_its_family(tmp_path):
    snapshot = tmp_path / "hub" / "models--nvidia--Cosmos-Reason1-7B" / "snapshots" / "3f2a9c"
    snapshot.mkdir(parents=True)
    assert run_config(_options("hf", str(snapshot) + "/")).spec.fps == 4.0  # Cosmos: 4 fps
    config = run_config(_options("hf", str(snapshot), benchmark="aot-psyphybench"))
    assert (config.params.temperature, config.params.repetition_penalty) == (0.6, 1.05)
