"""``manage.py run-models``: the same stimuli through a vision-language model."""
from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext

from analysis.models.backends import BACKENDS
from analysis.models.backends.base import GenerationParams
from analysis.models.manifest import RunConfig, execute_run
from analysis.models.prompts import AOT_SETTINGS
from analysis.models.runner import SCORING_MODES
from analysis.models.sampling import METADATA_FPS_MODES
from analysis.models.tasks import HINT_CONFIGS, TASKS, TaskSpec
from experiments.benchmarks import protocol
from webapp import benchmarks, model_runs


@click.command("run-models")
@click.option("--model", required=True, help="Local folder, hub id, or served model name.")
@click.option("--backend", type=click.Choice(sorted(BACKENDS)), default="hf", show_default=True)
@click.option("--task", type=click.Choice(TASKS), default="aot", show_default=True)
@click.option("--setting", type=click.Choice(AOT_SETTINGS), default="zero-shot",
              show_default=True, help="Arrow-of-time prompt setting (AoT-PsyPhyBENCH sec. 4).")
@click.option("--benchmark", default=None,
              help="Follow a published protocol (aot-psyphybench): its items, demos and fps.")
@click.option("--study", default=None, help="Study slug: its stimuli, and trials stored in it.")
@click.option("--set", "stimulus_set", default=None, help="Stimulus set (when no --study).")
@click.option("--fps", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Sampling rate (default 2 for --task aot unless --n-frames).")
@click.option("--n-frames", type=click.IntRange(min=1), default=None)
@click.option("--metadata-fps", type=click.Choice(METADATA_FPS_MODES), default="sampled",
              show_default=True, help="Frame rate declared to the model.")
@click.option("--label-orders", default="FB", show_default=True,
              help="Comma-separated label orders in the prompt: FB, BF or FB,BF.")
@click.option("--variant", type=click.Choice(("full", "shuffled", "single_frame")),
              default="full", show_default=True, help="TOMATO frame condition.")
@click.option("--annotation", type=click.Choice(("none", "brief", "comprehensive")),
              default="brief", show_default=True)
@click.option("--span", type=click.Choice(("short", "medium", "long")), default="medium",
              show_default=True, help="Frame sets over this part of the clip (ordering tasks).")
@click.option("--hints", type=click.Choice(tuple(HINT_CONFIGS)), default="none", show_default=True)
@click.option("--prompt-style", type=click.Choice(("open", "proprietary")), default="open",
              show_default=True)
@click.option("--pairs", type=click.Choice(("both", "random")), default="both", show_default=True)
@click.option("--scoring", type=click.Choice(SCORING_MODES), default="both", show_default=True)
@click.option("--sampling", type=click.Choice(("greedy", "paper")), default="greedy",
              show_default=True, help="paper: temperature 0.6, top-p 0.95.")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=512, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Run the first N items.")
@click.option("--device", default="auto", show_default=True)
@click.option("--dtype", type=click.Choice(("auto", "float32", "bfloat16", "float16")),
              default="auto", show_default=True)
@click.option("--base-url", default=None, help="OpenAI-compatible server (--backend openai).")
@click.option("--tensor-parallel", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--no-progress", is_flag=True)
@with_appcontext
def run_models(**opts):
    """Run a study's (or a set's) stimuli through a model; results cached and resumable."""
    try:
        if opts["benchmark"]:
            opts = benchmarks.protocol_options(opts)
        config = _config(opts)
        stimulus_set = model_runs.resolve_set(opts["stimulus_set"], opts["study"])
        records, demos = model_runs.stimulus_records(stimulus_set)
        if opts["benchmark"]:
            records, missing = benchmarks.protocol_records(opts["setting"], records)
            if missing:
                click.echo(f"{len(missing)} items of the {opts['setting']} protocol are not "
                           "imported; running the others.")
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    instance = Path(current_app.instance_path)
    try:
        result = execute_run(config, records, demos, instance / "model_cache.sqlite3",
                             instance / "model_runs", progress=not opts["no_progress"])
    except ValueError as error:
        raise click.ClickException(str(error)) from error
    counts = result.manifest["counts"]
    click.echo(f"{len(result.rows)} trials ({counts['cached']} cached, {counts['computed']} "
               f"computed, {len(counts['errors'])} errors, {counts['unparseable']} unparseable); "
               f"run folder {result.folder}")
    if opts["study"]:
        session, added = model_runs.store_run(opts["study"], opts["model"], result.rows,
                                              opts["seed"], result.manifest, result.item_keys,
                                              result.run_key)
        click.echo(f"Stored {added} new trials in session {session.id} of model subject "
                   f"{opts['model']!r} ({session.status}: {len(session.schedule)} items).")
    if counts["errors"]:
        raise click.ClickException(f"{len(counts['errors'])} items failed; rerun to retry them")


def _config(opts) -> RunConfig:
    fps = opts["fps"]
    if fps is None and opts["n_frames"] is None and opts["task"] == "aot":
        fps = protocol.protocol_fps(opts["model"])  # AoT-PsyPhyBENCH sec. 4.6, by family
    if fps is not None and opts["n_frames"] is not None:
        raise ValueError("give --fps or --n-frames, not both")
    spec = TaskSpec(task=opts["task"], setting=opts["setting"], fps=fps,
                    n_frames=opts["n_frames"], metadata_fps=opts["metadata_fps"],
                    label_orders=tuple(o.strip() for o in opts["label_orders"].split(",")),
                    task_variant=opts["variant"], annotation=opts["annotation"],
                    hints=opts["hints"], prompt_style=opts["prompt_style"],
                    pair_presentation=opts["pairs"], span=opts["span"], seed=opts["seed"])
    if opts["sampling"] == "paper" and opts.get("decoding"):  # the family's, from --benchmark
        params = GenerationParams(max_new_tokens=opts["max_new_tokens"], seed=opts["seed"],
                                  **opts["decoding"])
    elif opts["sampling"] == "paper":
        params = GenerationParams.paper(seed=opts["seed"], max_new_tokens=opts["max_new_tokens"])
    else:
        params = GenerationParams(max_new_tokens=opts["max_new_tokens"], seed=opts["seed"])
    return RunConfig(opts["backend"], opts["model"], spec, params, opts["scoring"],
                     opts["batch_size"], opts["limit"], _backend_options(opts))


def _backend_options(opts) -> dict:
    if opts["backend"] == "hf":
        return {"device": opts["device"], "dtype": opts["dtype"]}
    if opts["backend"] == "vllm":
        return {"dtype": opts["dtype"], "tensor_parallel_size": opts["tensor_parallel"]}
    if not opts["base_url"]:
        raise ValueError("--backend openai needs --base-url")
    return {"base_url": opts["base_url"]}
