"""``manage.py run-models``: the same stimuli through a vision-language model.

Every failure a researcher can meet ends in one line (what failed, why, what to do) and a
non-zero exit, never a traceback: a model that cannot be found or loaded, a GPU that is not
there, a server that cannot be reached or refuses the key, a parameter the model refuses.
Items that fail are counted once each, each cause is said once, with whether a rerun can help.
"""
import os
import re
from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy.exc import OperationalError

from analysis.vlm.backends import BACKENDS
from analysis.vlm.backends.base import BackendError, GenerationParams
from analysis.vlm.backends.openai_http import model_family
from analysis.vlm.run import RunConfig, execute_run
from analysis.vlm.prompts import AOT_SETTINGS
from analysis.vlm.runner import SCORING_MODES
from analysis.vlm.sampling import METADATA_FPS_MODES
from analysis.vlm.tasks import HINT_CONFIGS, TASKS, TaskSpec
from experiments.benchmarks import protocol
from webapp import model_runs
from webapp.stimuli import benchmarks


@click.command("run-models")
@click.option("--model", required=True, help="Local folder, hub id, or served model name.")
@click.option("--backend", type=click.Choice(sorted(BACKENDS)), default="hf", show_default=True,
              help="hf: transformers on this machine; vllm: vLLM in this process (CUDA); "
                   "openai: any OpenAI-compatible server (--base-url).")
@click.option("--task", type=click.Choice(TASKS), default="aot", show_default=True,
              help="aot: forward or backward; frame_order: order shuffled frames; "
                   "pair_order: which of two frames came first.")
@click.option("--setting", type=click.Choice(AOT_SETTINGS), default="zero-shot",
              show_default=True, help="Arrow-of-time prompt setting (AoT-PsyPhyBENCH sec. 4).")
@click.option("--benchmark", default=None,
              help="Follow a published protocol (aot-psyphybench): its items, demos and fps.")
@click.option("--study", default=None, help="Study slug: its stimuli, and trials stored in it.")
@click.option("--set", "stimulus_set", default=None, help="Stimulus set (when no --study).")
@click.option("--fps", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Frames per second sampled from each clip (--task aot). Default: the "
                   "paper's rate for its model families (2 for Qwen2-VL, Qwen2.5-VL and QVQ; "
                   "4 for Cosmos-Reason1 and the API models), 2 for any other model.")
@click.option("--n-frames", type=click.IntRange(min=1), default=None,
              help="Sample this many evenly spaced frames instead of a rate (frame ordering "
                   "needs it when it orders frames of clips rather than stored frame sets).")
@click.option("--metadata-fps", type=click.Choice(METADATA_FPS_MODES), default="sampled",
              show_default=True, help="Frame rate declared to the model.")
@click.option("--label-orders", default="FB", show_default=True,
              help="Comma-separated label orders in the prompt: FB, BF or FB,BF.")
@click.option("--variant", type=click.Choice(("full", "shuffled", "single_frame")),
              default="full", show_default=True, help="TOMATO frame condition.")
@click.option("--annotation", type=click.Choice(("none", "brief", "comprehensive")),
              default="brief", show_default=True,
              help="Ordering tasks: the clip description shown with the frames.")
@click.option("--span", type=click.Choice(("short", "medium", "long")), default="medium",
              show_default=True, help="Frame sets over this part of the clip (ordering tasks).")
@click.option("--hints", type=click.Choice(tuple(HINT_CONFIGS)), default="none", show_default=True,
              help="Frame ordering: which true positions the prompt gives away (EGO-FLIGHT).")
@click.option("--prompt-style", type=click.Choice(("open", "proprietary")), default="open",
              show_default=True, help="Frame ordering: EGO-FLIGHT's prompt for open or API models.")
@click.option("--pairs", type=click.Choice(("both", "random")), default="both", show_default=True,
              help="Pair ordering: show each pair in both orders, or in one seeded order.")
@click.option("--scoring", type=click.Choice(SCORING_MODES), default=None,
              help="generate: parse the generated answer; logits: the labels' probability at "
                   "the first answer token; both. Chain-of-thought settings are generated only. "
                   "Default: both, or generate for served models that return no logprobs "
                   "(OpenAI's reasoning models).")
@click.option("--sampling", type=click.Choice(("greedy", "paper", "api-default")),
              default=None,
              help="Default: paper with --benchmark, else greedy. "
                   "paper: temperature 0.6, top-p 0.95 (with --benchmark: the model family's). "
                   "api-default: temperature 1, top-p 1, the OpenAI API's defaults and the only "
                   "values its reasoning models (o1, o3, o4, GPT-5) accept.")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=512, show_default=True,
              help="Longest generated answer, in tokens (reasoning settings need room).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of sampling and of every random presentation (frame shuffles, pairs).")
@click.option("--batch-size", type=click.IntRange(min=1), default=8, show_default=True,
              help="Items per model call (hf, vllm); answers do not depend on it.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Run the first N items.")
@click.option("--device", default="auto", show_default=True, callback=lambda c, p, v: device(v),
              help="hf: cpu, cuda, cuda:N, or auto (cuda when there is a GPU).")
@click.option("--dtype", type=click.Choice(("auto", "float32", "bfloat16", "float16")),
              default="auto", show_default=True, help="Weights' precision (hf, vllm).")
@click.option("--base-url", default=None, help="OpenAI-compatible server (--backend openai).")
@click.option("--model-revision", default=None,
              help="--backend openai: which weights the served model is (a checkpoint, commit or "
                   "date, in your words). A served name alone does not pin them: the revision is "
                   "recorded and keys the cache and the stored run, so new weights never reuse "
                   "old answers.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="--backend openai: seconds to wait for one answer before retrying "
                   "the request [default: 120].")
@click.option("--concurrency", type=click.IntRange(min=1), default=None,
              help="--backend openai: requests in flight at once; lower it when the server "
                   "rate-limits (HTTP 429) [default: 8].")
@click.option("--max-retries", type=click.IntRange(min=0), default=None,
              help="--backend openai: retries of a request after a timeout, a dropped "
                   "connection, HTTP 408, 429 or 5xx, waiting what Retry-After asks or a "
                   "jittered exponential backoff; other errors are never retried [default: 5].")
@click.option("--tensor-parallel", type=click.IntRange(min=1), default=1, show_default=True,
              help="vllm: GPUs to split the model over.")
@click.option("--no-progress", is_flag=True, help="No progress bar (logs, CI).")
@with_appcontext
def run_models(**opts):
    """Run a study's (or a set's) stimuli through a model; results cached and resumable."""
    try:
        if opts["benchmark"]:
            opts = benchmarks.protocol_options(opts)
        config = _config(opts)
        _check_model_source(opts)
        stimulus_set = model_runs.resolve_set(opts["stimulus_set"], opts["study"])
        records, demos = model_runs.stimulus_records(stimulus_set)
        if opts["benchmark"]:
            records, missing = benchmarks.protocol_records(opts["setting"], records)
            if missing:
                click.echo(f"{len(missing)} items of the {opts['setting']} protocol are not "
                           "imported; running the others.")
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    result = _execute(config, records, demos, opts)
    counts = result.manifest["counts"]
    failed = len({e["item"] for e in counts["errors"]})
    click.echo(f"{len(result.rows)} trials ({counts['cached']} cached, {counts['computed']} "
               f"computed, {failed} errors, {counts['unparseable']} unparseable); "
               f"run folder {result.folder}")
    if opts["study"]:
        try:
            session, added = model_runs.store_run(opts["study"], opts["model"], result.rows,
                                                  opts["seed"], result.manifest,
                                                  result.item_keys, result.run_key)
        except OperationalError as error:  # e.g. another run is writing the same database
            raise click.ClickException(
                f"the answers are cached but could not be stored ({error.orig}); rerun the "
                "same command: it reads them from the cache and stores them") from None
        click.echo(f"Stored {added} new trials in session {session.id} of model subject "
                   f"{opts['model']!r} ({session.status}: {len(session.schedule)} items).")
    if counts["errors"]:
        raise click.ClickException(failure_summary(counts["errors"], counts["total"]))


def _execute(config: RunConfig, records, demos, opts):
    """``execute_run``, its failures said in one line each."""
    instance = Path(current_app.instance_path)
    try:
        return execute_run(config, records, demos, instance / "model_cache.sqlite3",
                           instance / "model_runs", progress=not opts["no_progress"])
    except (ValueError, BackendError) as error:
        raise click.ClickException(str(error)) from error
    except OSError as error:  # a model that cannot be found or loaded, a stimulus file
        raise click.ClickException(_os_failure(opts["model"], error)) from error
    except ImportError as error:
        extra = "vllm" if opts["backend"] == "vllm" else "models"
        raise click.ClickException(f"--backend {opts['backend']} needs {error.name or error}, "
                                   f"which is not installed: pip install -e '.[{extra}]'"
                                   ) from error


def failure_summary(errors: list[dict], total: int) -> str:
    """Failed items counted once each, then each distinct cause once with its items and
    whether a rerun can help."""
    causes: dict[tuple[str, bool], set[str]] = {}
    for error in errors:
        cause = error.get("cause") or error["error"].strip().splitlines()[-1]
        causes.setdefault((cause, bool(error.get("transient"))), set()).add(error["item"])
    failed = len({error["item"] for error in errors})
    lines = [f"{failed} of {total} items failed:"]
    for (cause, transient), items in sorted(causes.items(), key=lambda c: -len(c[1])):
        advice = ("transient: rerun the same command to retry only the failed items"
                  if transient else "a rerun fails the same way until the cause is fixed")
        lines.append(f"  {len(items)} item{'' if len(items) == 1 else 's'}: {cause} [{advice}]")
    return "\n".join(lines)


def _check_model_source(opts) -> None:
    """Refuse, before any loading, a local model folder that is not there and a GPU that is
    not there."""
    model = opts["model"]
    if opts["backend"] == "openai":
        return
    path = Path(model).expanduser()
    if path.is_file():
        raise ValueError(f"--model {model}: is a file; a local model is a folder (config.json, "
                         "weights, processor and tokenizer files)")
    path_like = model.startswith(("/", ".", "~")) or model.count("/") > 1 or "\\" in model
    if path_like and not path.exists():
        raise ValueError(f"--model {model}: no such folder (a hub id looks like owner/name)")
    if opts["backend"] == "hf" and opts["device"].startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"--device {opts['device']}: torch sees no CUDA GPU on this "
                             "machine; use --device cpu (or auto), or run on a GPU machine")


def _os_failure(model: str, error: OSError) -> str:
    text = " ".join(str(error).split())
    if "couldn't connect" in text or "offline" in text.lower():
        offline = " and the hub is offline (HF_HUB_OFFLINE)" if os.environ.get(
            "HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on") else ""
        return (f"cannot load model {model!r}: it is not a local folder, not in the local hub "
                f"cache{offline}; check the id, download it first (huggingface-cli download "
                f"{model}) or give its folder")
    if "not a valid model identifier" in text or "Repository Not Found" in text:
        return (f"cannot load model {model!r}: no such local folder and no such model on the "
                "hub; check the id (and HF_TOKEN for a gated or private model)")
    return f"{type(error).__name__}: {text[:300]}"


def device(value: str) -> str:
    """A device name torch accepts (``auto``, ``cpu``, ``cuda``, ``cuda:N``), else a usage
    error naming them."""
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", value):
        raise click.BadParameter(f"{value!r} is not a device; use auto, cpu, cuda or cuda:N "
                                 "(lower case)", param_hint="--device")
    return value


def _config(opts) -> RunConfig:
    fps = opts["fps"]
    if fps is None and opts["n_frames"] is None and opts["task"] == "aot":
        fps = protocol.default_fps(opts["model"])  # AoT-PsyPhyBENCH sec. 4.6, by family
    if fps is not None and opts["n_frames"] is not None:
        raise ValueError("give --fps or --n-frames, not both")
    spec = TaskSpec(task=opts["task"], setting=opts["setting"], fps=fps,
                    n_frames=opts["n_frames"], metadata_fps=opts["metadata_fps"],
                    label_orders=tuple(o.strip() for o in opts["label_orders"].split(",")),
                    task_variant=opts["variant"], annotation=opts["annotation"],
                    hints=opts["hints"], prompt_style=opts["prompt_style"],
                    pair_presentation=opts["pairs"], span=opts["span"], seed=opts["seed"])
    return RunConfig(opts["backend"], opts["model"], spec, _params(opts), _scoring(opts),
                     opts["batch_size"], opts["limit"], _backend_options(opts))


def _scoring(opts) -> str:
    if opts["scoring"]:
        return opts["scoring"]
    served = opts["backend"] == "openai" and "logprobs" in model_family(opts["model"]).refused
    return "generate" if served else "both"


def _params(opts) -> GenerationParams:
    common = {"max_new_tokens": opts["max_new_tokens"], "seed": opts["seed"]}
    decoding = opts.get("decoding")  # the model family's, from --benchmark
    # A benchmark run reproduces the paper's decoding unless told otherwise.
    sampling = opts["sampling"] or ("paper" if opts["benchmark"] else "greedy")
    if sampling == "paper" and decoding == {} and _kept_api_defaults(opts["model"]):
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


HTTP_OPTIONS = {"timeout": "timeout_s", "concurrency": "concurrency",
                "max_retries": "max_retries", "model_revision": "revision"}


def _backend_options(opts) -> dict:
    given = {name: opts.get(name) for name in HTTP_OPTIONS if opts.get(name) is not None}
    if opts["backend"] != "openai" and given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise ValueError(f"{flags}: only for --backend openai (a local model is pinned by "
                         "the hash of its files)")
    if opts["backend"] == "hf":
        return {"device": opts["device"], "dtype": opts["dtype"]}
    if opts["backend"] == "vllm":
        return {"dtype": opts["dtype"], "tensor_parallel_size": opts["tensor_parallel"]}
    if not opts["base_url"]:
        raise ValueError("--backend openai needs --base-url")
    return {"base_url": opts["base_url"], **{HTTP_OPTIONS[k]: v for k, v in given.items()}}
