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
                                         r"\['hf', 'openai', 'vllm'\]"):
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
