"""A model run's settings and identity, decided from a researcher's request.

The policy of ``manage.py run-models`` lives here, not in the command: the paper's frame
rate and decoding for a model family, the scoring a served model allows, which options a
backend takes, and AoT-PsyPhyBENCH's protocol (``benchmark``).  The command passes its
options as a dict named like its flags.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from analysis.vlm import prompt_sets, prompts
from analysis.vlm.backends import BACKENDS, BackendEntry, backend_entry
from analysis.vlm.backends.base import GenerationParams
from analysis.vlm.ledger import parse_budget
from analysis.vlm.ordering_options import ORDERING_DEFAULTS, check_ordering_options
from analysis.vlm.provenance import stable_hash
from analysis.vlm.tasks import TASKS, TaskSpec
from experiments.benchmarks import aot_psyphybench as bench
from experiments.benchmarks import check_benchmark, protocol


@dataclass
class RunConfig:
    backend: str
    model: str
    spec: TaskSpec
    params: GenerationParams
    scoring: str = "both"
    batch_size: int = 8
    limit: int | None = None
    backend_options: dict | None = None
    benchmark: str | None = None  # a published protocol: its test items only
    # What the run may spend (``50000tok``, ``2.50USD``) and the price file that turns tokens
    # into money: neither changes an answer, so neither is part of the run's identity.
    budget: str | None = None
    prices: str | None = None

    def __post_init__(self):
        if self.scoring == "logits" and TASKS[self.spec.task].prompt_settings \
                and self.spec.setting in prompts.COT_SETTINGS:
            raise ValueError(
                f"setting {self.spec.setting!r} is scored from its generated reasoning; "
                "logit scoring would read an answer before any reasoning. Use --scoring "
                "generate (or both: chain-of-thought items are then generated only)")
        if self.scoring == "logits" and self.params.thinking:
            raise ValueError(
                "--thinking on: the answer comes after the model's reasoning, and logit "
                "scoring would read the label at the first token, before any reasoning. Use "
                "--scoring generate (or both: items are then generated only)")


def run_key(config: RunConfig, description: dict) -> str:
    """The run's identity: model, revision and every setting that can change an answer.

    Reruns with the same identity complete one stored run instead of adding another; a run
    in another precision, on another device kind or library set is another run. Not part of
    it: ``limit`` and ``batch_size`` (which items run now, and how fast), and volatile server
    fields (a served model's creation time, which the description leaves out).
    """
    identity = {"backend": config.backend, "model": config.model,
                # Everything the cache keys on too: weights, dtype, device kind, library
                # versions, processor, a server's URL and stable model fields.
                "description": description,
                "spec": _spec_identity(config), "params": _params_identity(config),
                "scoring": effective_scoring(config)}
    encoded = json.dumps(identity, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()


def answer_settings(config: RunConfig, description: dict) -> dict:
    """The run's identity as its trial rows carry it (``extra.run``, read by
    :mod:`analysis.observers`): the task's settings, the decoding, the scoring and the
    model's build (a digest of ``description``: weights, dtype, device kind, libraries,
    processor, a server's URL), each by name."""
    return {**_spec_identity(config), **_params_identity(config),
            "scoring": effective_scoring(config), "build": stable_hash(description)[:8]}


def _spec_identity(config: RunConfig) -> dict:
    """The spec as the identity holds it: only what can change an answer.  Fields the task
    never reads (an ordering option on an arrow-of-time run), and the prompt's settings for
    a backend that reads no prompt, take their defaults, so a run that sets them is the run
    that does not.  A run in the papers' English prompts keeps the identity it had before
    prompt sets existed (so it still resumes); any other language is part of it."""
    unread = set(TASKS[config.spec.task].ignores)
    if not BACKENDS[config.backend].reads_prompt:
        unread |= {"setting", "prompt_language"}
    found = asdict(config.spec)
    found.update({name: getattr(_DEFAULT_SPEC, name) for name in unread})
    if found["prompt_language"] == prompt_sets.PAPER_LANGUAGE:
        del found["prompt_language"]
    return found


_DEFAULT_SPEC = TaskSpec()


def _params_identity(config: RunConfig) -> dict:
    """The decoding as the identity holds it: none for a backend that reads no prompt (a
    pixel statistic generates nothing)."""
    reads = BACKENDS[config.backend].reads_prompt
    return (config.params if reads else GenerationParams()).to_dict()


def effective_scoring(config: RunConfig) -> str:
    """``scoring`` as it applies: where items are never logit-scored (frame orders,
    chain-of-thought settings), "both" and "generate" are the same run."""
    task = TASKS[config.spec.task]
    generation_only = not task.logit_scored or bool(config.params.thinking) or (
        task.prompt_settings and config.spec.setting in prompts.COT_SETTINGS)
    return "generate" if generation_only and config.scoring == "both" else config.scoring
# chain-of-thought settings and thinking runs: both read the answer after a reasoning


def run_config(options: Mapping) -> RunConfig:
    """The run ``run-models`` was asked for (options keyed like its flags).

    Raises
    ------
    ValueError
        For options that contradict each other or the protocol, naming the flags.
    """
    backend = backend_entry(options["backend"])
    if options.get("budget"):
        parse_budget(options["budget"])  # refused before anything loads
        if options.get("batch_api"):  # a batch is priced when it is done, not item by item
            raise ValueError("--budget cannot stop a --batch-api run between items (the "
                             "batch is sent whole); use --limit to send fewer items, or "
                             "leave out --batch-api")
    decoding = None
    options = {**options, "task": options.get("task") or "aot",
               "model": _local_model(options["model"], backend)}
    if options["benchmark"]:
        options, decoding = _protocol_options(options)
    check_ordering_options(options)
    fps = options["fps"]
    if fps is None and options["n_frames"] is None and TASKS[options["task"]].sampled_at_rate:
        fps = protocol.default_fps(options["model"])  # AoT-PsyPhyBENCH sec. 4.6, by family
    if fps is not None and options["n_frames"] is not None:
        raise ValueError("give --fps or --n-frames, not both")
    spec = TaskSpec(task=options["task"], setting=options["setting"], fps=fps,
                    n_frames=options["n_frames"], metadata_fps=options["metadata_fps"],
                    label_orders=tuple(o.strip() for o in options["label_orders"].split(",")),
                    task_variant=options["variant"],
                    annotation=options.get("annotation") or ORDERING_DEFAULTS["annotation"],
                    hints=options.get("hints") or ORDERING_DEFAULTS["hints"],
                    prompt_style=options["prompt_style"], pair_presentation=options["pairs"],
                    span=options.get("span") or ORDERING_DEFAULTS["span"], seed=options["seed"],
                    prompt_language=options.get("prompt_language")
                    or prompt_sets.PAPER_LANGUAGE)
    if not backend.reads_prompt and spec.label_orders != _DEFAULT_SPEC.label_orders:
        raise ValueError(f"--backend {options['backend']} reads no prompt, so every label "
                         "order gets the same answer and would be counted again: leave out "
                         f"--label-orders {options['label_orders']}")
    return RunConfig(options["backend"], options["model"], spec, _params(options, decoding),
                     _scoring(options, backend), options["batch_size"], options["limit"],
                     _backend_options(options, backend), options.get("benchmark"),
                     options.get("budget"), options.get("prices"))


def _local_model(model: str, backend: BackendEntry) -> str:
    """A local folder in one spelling (resolved, no trailing slash), so ``a/tiny``,
    ``a/tiny/`` and ``a/../a/tiny`` are one observer; hub ids and served names as given."""
    path = Path(model).expanduser()
    return str(path.resolve()) if not backend.served and path.is_dir() else model


def _protocol_options(options: Mapping) -> tuple[dict, dict]:
    """The options with the published protocol filled in, and the model family's decoding.

    The setting checked; fps from the model's family (sec. 4.6) unless given; the family's
    decoding parameters (none for the API reasoning models, whose defaults the paper kept,
    and none for models outside the paper's families).
    """
    if options.get("n_frames") is not None:
        raise ValueError("the benchmark protocol samples at a frame rate; drop --n-frames")
    if options.get("task", "aot") != "aot":
        raise ValueError("the benchmark protocol is the arrow-of-time task (--task aot)")
    out = {**options, "benchmark": check_benchmark(options["benchmark"])}
    out["setting"] = protocol.setting(options["setting"]).name
    out["fps"] = protocol.protocol_fps(options["model"], options.get("fps"))
    try:
        decoding = protocol.model_family(options["model"]).decoding
    except ValueError:
        decoding = {}
    return out, {k: v for k, v in decoding.items() if k in _RUNNER_DECODING}


# Decoding parameters GenerationParams can express (frequency_penalty 0 is its default
# behaviour already).
_RUNNER_DECODING = ("temperature", "top_p", "repetition_penalty")


def protocol_records(config: RunConfig, records: list) -> tuple[list, list[str]]:
    """The records a run asks about, and (with a benchmark) the protocol's items not stored.

    Raises
    ------
    ValueError
        When none of the setting's items is stored (the videos were never imported).
    """
    if not config.benchmark:
        return records, []
    setting = config.spec.setting
    chosen, missing = protocol.select_for_setting(setting, records)
    if not chosen:
        raise ValueError(f"none of the {len(missing)} {setting} items of {bench.NAME} is "
                         "stored; import the videos with 'manage.py stimuli import-benchmark'")
    return chosen, missing


def _scoring(options: Mapping, backend: BackendEntry) -> str:
    if options["scoring"]:
        return options["scoring"]
    return "both" if backend.logprobs(options["model"]) else "generate"


def _params(options: Mapping, decoding: dict | None) -> GenerationParams:
    """``decoding``: the model family's, with a benchmark (None without one)."""
    thinking = options.get("thinking")
    common = {"max_new_tokens": options["max_new_tokens"], "seed": options["seed"],
              "thinking": None if thinking is None else thinking == "on",
              "thinking_budget": options.get("thinking_budget")}
    if common["thinking_budget"] is not None and thinking != "on":
        raise ValueError("--thinking-budget needs --thinking on")
    # A benchmark run reproduces the paper's decoding unless told otherwise.
    sampling = options["sampling"] or ("paper" if options["benchmark"] else "greedy")
    if sampling == "paper" and decoding == {} and _kept_api_defaults(options["model"]):
        sampling = "api-default"  # AoT-PsyPhyBENCH sec. 4.6 kept these models' API defaults
    if sampling == "api-default":
        return GenerationParams(temperature=1.0, top_p=1.0, **common)
    if sampling == "paper" and decoding:  # the family's
        return GenerationParams(**common, **decoding)
    if sampling == "paper":
        return GenerationParams.paper(**common)
    return GenerationParams(**common)


def _kept_api_defaults(model: str) -> bool:
    try:
        family = protocol.model_family(model)
    except ValueError:
        return False
    return family.api and not family.decoding


def _backend_options(options: Mapping, backend: BackendEntry) -> dict:
    """The given options the backend takes, under its constructor's keywords (a flag not
    given is False: not given).

    An option of other backends only is refused, naming them; a required one is asked for.
    """
    foreign: dict[str, list[str]] = {}  # "--backend a or b" -> the options only they take
    for option in dict.fromkeys(o for entry in BACKENDS.values() for o in entry.options):
        if option not in backend.options and _given(options.get(option)):
            takers = " or ".join(n for n, e in BACKENDS.items() if option in e.options)
            foreign.setdefault(takers, []).append(_flag(option))
    if foreign:
        raise ValueError("; ".join(f"{', '.join(flags)}: only for --backend {takers}"
                                   for takers, flags in foreign.items()))
    missing = [_flag(option) for option in backend.required if not options.get(option)]
    if missing:
        raise ValueError(f"--backend {options['backend']} needs {', '.join(missing)}")
    return {keyword: options[option] for option, keyword in backend.options.items()
            if _given(options.get(option))}


def _given(value) -> bool:
    """An option's value says it was given: not None, nor a flag left off (0 is given)."""
    return value is not None and value is not False


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def check_model_source(config: RunConfig) -> None:
    """Refuse, before any loading, a local model folder that is not there and a GPU that is
    not there."""
    model, backend = config.model, backend_entry(config.backend)
    if backend.served:
        return
    path = Path(model).expanduser()
    if path.is_file():
        raise ValueError(f"--model {model}: is a file; a local model is a folder (config.json, "
                         "weights, processor and tokenizer files)")
    path_like = model.startswith(("/", ".", "~")) or model.count("/") > 1 or "\\" in model
    if path_like and not path.exists():
        raise ValueError(f"--model {model}: no such folder (a hub id looks like owner/name)")
    if not path.is_dir():
        _check_hub_model(model)
    if backend.device_option is None:
        return
    flag = _flag(backend.device_option)
    device = (config.backend_options or {}).get(backend.options[backend.device_option]) or ""
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"{flag} {device}: torch sees no CUDA GPU on this machine; "
                             f"use {flag} cpu (or auto), or run on a GPU machine")


def _check_hub_model(model: str) -> None:
    """Refuse at once a hub model that is not in the local cache when the hub cannot be
    reached: the download would otherwise retry for minutes before failing."""
    try:
        from huggingface_hub import constants, try_to_load_from_cache
    except ImportError:  # no model libraries: loading names the extra to install
        return
    try:
        if isinstance(try_to_load_from_cache(model, "config.json"), str):
            return
    except ValueError:  # not a valid hub id: loading says so
        return
    # The library reads HF_HUB_OFFLINE once, when first imported; the environment is read now.
    if constants.is_offline_mode() or os.environ.get("HF_HUB_OFFLINE", "").upper() in (
            "1", "ON", "YES", "TRUE"):
        why = "HF_HUB_OFFLINE is set"
    else:
        import httpx

        try:
            httpx.head(constants.ENDPOINT, timeout=3.0)
            return
        except httpx.HTTPError as error:
            why = f"{constants.ENDPOINT} cannot be reached ({type(error).__name__})"
    raise ValueError(f"--model {model}: not a local folder, not in the Hugging Face cache "
                     f"({constants.HF_HUB_CACHE}), and {why}; download it first (hf download "
                     f"{model}) or give its local folder")
