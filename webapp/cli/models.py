"""``manage.py run-models``: the same stimuli through a vision-language model.

The command parses its options and hands them to :func:`webapp.model_runs.run_models`,
where the run's policy lives.  Every failure a researcher can meet ends in one line (what
failed, why, what to do) and a non-zero exit, never a traceback: a model that cannot be
found or loaded, a GPU that is not there, a server that cannot be reached or refuses the
key, a parameter the model refuses.  Items that fail are counted once each, each cause is
said once, with whether a rerun can help.
"""
import re
from pathlib import Path

import click
from flask.cli import with_appcontext

from analysis.vlm.backends import BACKENDS
from analysis.vlm.items import HINT_CONFIGS
from analysis.vlm.prompt_sets import PROMPT_LANGUAGES
from analysis.vlm.prompts import AOT_SETTINGS
from analysis.vlm.run import failure_summary
from analysis.vlm.runner import SCORING_MODES
from analysis.vlm.sampling import METADATA_FPS_MODES
from analysis.vlm.tasks import TASKS
from webapp import model_runs
from webapp.cli import run_file


@click.command("run-models")
@click.option("--config", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A run file (TOML): every other option is a field of it, named like its "
                   "flag (max_new_tokens = 64); options given here override it. Each run "
                   "writes its resolved file, run.toml, beside its trials.")
@click.option("--model", default=None,
              help="Local folder, hub id, or served model name (required, here or in --config).")
@click.option("--backend", type=click.Choice(sorted(BACKENDS)), default="hf", show_default=True,
              help="; ".join(f"{name}: {entry.summary}" for name, entry in BACKENDS.items()) + ".")
@click.option("--task", type=click.Choice(list(TASKS)), default=None,
              help="aot: forward or backward; frame_order: order shuffled frames; "
                   "pair_order: which of two frames came first. Default: with --study, the "
                   "task of its design's trials; else aot.")
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
              default=None, help="Ordering tasks: the clip description shown with the frames "
              "[default: brief; a study's frame-ordering trials set their own].")
@click.option("--span", type=click.Choice(("short", "medium", "long")), default=None,
              help="Frame sets over this part of the clip (ordering tasks) [default: medium; "
                   "a study's frame-ordering trials set their own].")
@click.option("--hints", type=click.Choice(tuple(HINT_CONFIGS)), default=None,
              help="Frame ordering: which true positions the prompt gives away (EGO-FLIGHT) "
                   "[default: none; a study's frame-ordering trials set their own].")
@click.option("--prompt-style", type=click.Choice(("open", "proprietary")), default="open",
              show_default=True, help="Frame ordering: EGO-FLIGHT's prompt for open or API models.")
@click.option("--prompt-language", type=click.Choice(PROMPT_LANGUAGES), default="en",
              show_default=True, help="The arrow-of-time prompt's language: the papers' English, "
              "or a translated prompt set (zero-shot and few-shot settings; recorded in the "
              "run's identity).")
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
@click.option("--thinking", type=click.Choice(("on", "off")), default=None,
              help="A thinking model's switch (the chat template's enable_thinking; served: "
                   "chat_template_kwargs). Part of the run's identity: on and off are two "
                   "observers. On: items are generated only (the answer follows the "
                   "reasoning) [default: the model's own].")
@click.option("--thinking-budget", type=click.IntRange(min=1), default=None,
              help="hf: most reasoning tokens before the answer (with --thinking on); an item "
                   "still thinking then is stored as cut off, never parsed.")
@click.option("--budget", default=None,
              help="The run's total: stop between items before the next would take the "
                   "run past this, in tokens (50000tok) or money (2.50USD, with --prices). "
                   "Items stored already count at what they cost; each next item is "
                   "estimated at the mean so far. A rerun with a larger budget completes "
                   "the session.")
@click.option("--prices", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Price file (TOML: per model, price per million input, output and "
                   "reasoning tokens) that turns the run's tokens into cost; without one no "
                   "cost is shown.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of sampling and of every random presentation (frame shuffles, pairs).")
@click.option("--batch-size", type=click.IntRange(min=1), default=8, show_default=True,
              help="Items per model call (hf, vllm); answers do not depend on it.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Run the first N items.")
@click.option("--device", default=None, callback=lambda c, p, v: device(v),
              help="hf: cpu, cuda, cuda:N, or auto (cuda when there is a GPU) [default: auto].")
@click.option("--dtype", type=click.Choice(("auto", "float32", "bfloat16", "float16")),
              default=None, help="Weights' precision (hf, vllm) [default: auto].")
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
@click.option("--batch-api", is_flag=True, default=False,
              help="--backend openai: send the run's calls as one OpenAI batch (/v1/files, "
                   "/v1/batches; about half the price, answered within 24 h). A rerun resumes "
                   "a batch still running; calls it did not answer are made one by one.")
@click.option("--batch-poll", type=click.FloatRange(min=0, min_open=True), default=None,
              help="--batch-api: seconds between polls of the batch [default: 30].")
@click.option("--tensor-parallel", type=click.IntRange(min=1), default=None,
              help="vllm: GPUs to split the model over [default: 1].")
@click.option("--no-progress", is_flag=True, help="No progress bar (logs, CI).")
@with_appcontext
def run_models(**options):
    """Run a study's (or a set's) stimuli through a model; results cached and resumable."""
    context = click.get_current_context()
    options = run_file.resolve(context, options)
    fields = run_file.resolved_fields(context.command, options)
    try:
        outcome = model_runs.run_models(options, progress=not options["no_progress"],
                                        run_file=fields)
    except model_runs.ModelRunError as error:
        raise click.UsageError(str(error)) from error
    except model_runs.RunFailed as error:
        raise click.ClickException(str(error)) from error
    if outcome.missing:
        click.echo(f"{len(outcome.missing)} items of the {options['setting']} protocol are "
                   "not imported; running the others.")
    counts = outcome.result.manifest["counts"]
    click.echo(f"{len(outcome.result.rows)} trials ({counts['cached']} cached, "
               f"{counts['computed']} computed, {counts['failed_items']} errors, "
               f"{counts['unparseable']} unparseable, {counts['cut_off']} cut off while "
               f"thinking); run folder {outcome.result.folder}")
    batch = counts.get("batch")
    for gone in (batch or {}).get("gone", []):
        click.echo(gone)
    if batch and batch["calls"]:
        sent = len(batch["batches"]) + len(batch["resumed"])
        click.echo(f"{sent} batch{'' if sent == 1 else 'es'}: {batch['answered']} of "
                   f"{batch['calls']} calls answered" + (
                       f"; {batch['unanswered']} made one by one ({batch['causes'][0]})"
                       if batch["unanswered"] else "") + (
                       f"; {batch['stored_for_later']} answers of another command's calls "
                       "stored for its rerun" if batch["stored_for_later"] else ""))
    click.echo(ledger_line(outcome.result.manifest["ledger"]))
    if counts["stopped"]:
        click.echo(counts["stopped"])
    if outcome.session is not None:
        click.echo(f"Stored {outcome.added} new trials in session {outcome.session.id} of "
                   f"model subject {options['model']!r} ({outcome.session.status}: "
                   f"{len(outcome.model_run.item_keys)} items).")
    if counts["errors"]:
        raise click.ClickException(failure_summary(counts["errors"], counts["total"]))


def ledger_line(ledger: dict) -> str:
    """The run's tokens (and cost, with a price file) in one line; no tokens per correct
    answer for an observer that reads no tokens (the motion statistic)."""
    line = (f"Ledger: {ledger['tokens_in']} tokens in, {ledger['tokens_out']} out "
            f"({ledger['tokens_reasoning']} reasoning) over {ledger['items']} items")
    if ledger["tokens_per_correct"] is not None and ledger["tokens_in"] + ledger["tokens_out"]:
        line += f"; {ledger['tokens_per_correct']:.0f} tokens per correct answer"
    if "cost" in ledger:
        line += (f"; cost {ledger['cost']:.4f} {ledger['currency']} at the prices of "
                 f"{ledger['priced_by']} (its tokens at the prices given now)")
    if "unpriced" in ledger:
        line += f"; {ledger['unpriced']}: no cost shown"
    return line + "."


def device(value: str | None) -> str | None:
    """A device name torch accepts (``auto``, ``cpu``, ``cuda``, ``cuda:N``) or None (not
    given), else a usage error naming them."""
    if value is not None and not re.fullmatch(r"auto|cpu|cuda(:\d+)?", value):
        raise click.BadParameter(f"{value!r} is not a device; use auto, cpu, cuda or cuda:N "
                                 "(lower case)", param_hint="--device")
    return value
