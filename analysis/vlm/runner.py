"""Run items through a backend with the cache: batched, resumable, with a progress bar.

Each batch is looked up in the cache; only misses reach the model, and each result is
stored as soon as its batch returns, so a run killed at any point loses at most the batch
in flight and a rerun computes exactly the items not yet stored.  A backend that sends
requests one by one reports each request's outcome: its successes are stored and only its
failures are failures.  A backend that raises for a whole batch has that batch retried item
by item.  An item that still fails is reported with a one-line cause and whether a rerun can
help, and is never cached or written as a trial.  A score with no label among the top
logprobs a server returned is not a failure: the row keeps its generated answer and says why
it has no ``p_forward``.  With a budget (:class:`~analysis.vlm.ledger.BudgetGuard`: the run's
total, its cached items counted at what they cost) a batch runs only as far as the budget
allows, and the run stops cleanly between items, saying why (``RunStats.stopped``); a failed
item is not charged to it (its cost is not known).
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field

from analysis import columns as C
from analysis.vlm.backends.base import (
    Backend,
    BackendError,
    Generation,
    GenerationParams,
    LabelScores,
)
from analysis.vlm.cache import ResultCache, cache_key
from analysis.vlm.ledger import BudgetGuard, item_ledger
from analysis.vlm.parsers import PARSE_CUT_OFF, PARSE_OK
from analysis.vlm.reasoning import prompt_opens
from analysis.vlm.rows import trial_row

SCORING_MODES = ("generate", "logits", "both")


@dataclass
class RunStats:
    total: int = 0
    cached: int = 0
    computed: int = 0
    errors: list[dict] = field(default_factory=list)  # one per failed call (item, kind)
    unparseable: int = 0
    cut_off: int = 0  # items whose reasoning never ended (no answer)
    stopped: str | None = None  # why the run stopped before its last item (--budget)
    model_seconds: float = 0.0
    wall_seconds: float = 0.0
    computed_calls: list[str] = field(default_factory=list)  # "item key/kind" run by the model
    batch: dict | None = None  # what a batch API answered (analysis.vlm.batch_run)

    def as_dict(self) -> dict:
        rate = self.total / self.wall_seconds if self.wall_seconds else None
        model_rate = self.computed / self.model_seconds if self.model_seconds else None
        return {"total": self.total, "cached": self.cached, "computed": self.computed,
                "errors": self.errors, "failed_items": len({e["item"] for e in self.errors}),
                "unparseable": self.unparseable, "cut_off": self.cut_off,
                "stopped": self.stopped, "model_seconds": round(self.model_seconds, 3),
                "wall_seconds": round(self.wall_seconds, 3), "items_per_s": rate,
                "computed_items_per_s": model_rate, "batch": self.batch}


def model_revision(description: dict) -> str | None:
    """Which weights answered: the researcher's ``--model-revision``, else the start of the
    weights fingerprint (local folders, hub snapshots), else None (a served model)."""
    if description.get("revision"):
        return str(description["revision"])
    weights = description.get("weights_sha256")
    return str(weights)[:12] if weights else None


class Runner:
    """Runs items through ``backend`` with ``cache`` and turns outcomes into trial rows."""

    def __init__(self, backend: Backend, cache: ResultCache, params: GenerationParams,
                 scoring: str = "both", batch_size: int = 8, progress: bool = True,
                 budget: BudgetGuard | None = None):
        if scoring not in SCORING_MODES:
            raise ValueError(f"scoring must be one of {SCORING_MODES}, got {scoring!r}")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.backend, self.cache, self.params = backend, cache, params
        self.scoring, self.batch_size, self.progress = scoring, batch_size, progress
        self.budget = budget
        self.description = backend.describe()
        self.stats = RunStats()
        self._batched: set[str] = set()  # items a batch API answered

    # -- keys -------------------------------------------------------------------------------
    def key(self, item, kind: str) -> str:
        request = item.request
        return cache_key(kind=kind, backend=self.description, prompt=self.backend.render(request),
                         visuals=[v.key() for v in request.visuals],
                         params=self.params.to_dict() if kind == "generate" else None,
                         labels=item.labels if kind == "score" else ())

    def _kinds(self, item) -> list[str]:
        thinks = self._thinks(item)
        if thinks and self.scoring == "logits" and item.scorable:
            raise ValueError("--scoring logits: this model's chat template opens its reasoning "
                             "in the prompt, so the first token is no label; use --scoring "
                             "generate, or --thinking off where the template has the switch")
        kinds = []
        if self.scoring in ("generate", "both") or not item.scorable or thinks:
            kinds.append("generate")
        # A thinking model answers after its reasoning: the first token is no label.
        if self.scoring in ("logits", "both") and item.scorable and not thinks:
            kinds.append("score")
        return kinds

    def _thinks(self, item) -> bool:
        """Thinking on, or left at a default under which the chat template opens the
        reasoning in the prompt (R1-style templates do)."""
        if self.params.thinking is not None:
            return bool(self.params.thinking)
        model = getattr(self.backend, "model_id", None)
        return isinstance(model, str) and prompt_opens(self.backend.render(item.request), model)

    # -- running ----------------------------------------------------------------------------
    def run(self, items: list) -> list[dict]:
        """Run all items; return their trial rows (items that errored have none)."""
        from tqdm.auto import tqdm

        start = time.perf_counter()
        self.stats = RunStats(total=len(items))
        self.backend.check(self.params, {kind for item in items for kind in self._kinds(item)})
        if getattr(self.backend, "batch_api", False):  # duck-typed backends have none
            from analysis.vlm.batch_run import prefetch

            report = prefetch(self, items)
            self._batched = report.pop("answered_items")
            self.stats.batch = report
        outcomes: dict[str, dict] = {}
        with tqdm(total=len(items), unit="item", disable=not self.progress,
                  desc=f"{self.backend.name}:{self.description.get('model', '')}") as bar:
            position = 0  # a budget may let through only part of a batch
            while position < len(items) and not self.stats.stopped:
                done = self._run_batch(items[position:position + self.batch_size], outcomes)
                bar.update(done)
                position += done
        self.stats.wall_seconds = time.perf_counter() - start
        rows = [trial_row(item, index, outcomes[item.key])
                for index, item in enumerate(items) if item.key in outcomes]
        revision = model_revision(self.description)
        thinking = self.params.thinking
        for row in rows:  # so analysis never pools two revisions of one model
            row["extra"][C.EXTRA_REVISION] = revision
            if thinking is not None:  # nor a model thinking and not thinking
                row["extra"][C.EXTRA_THINKING] = "on" if thinking else "off"
        statuses = [r["extra"].get(C.EXTRA_PARSE_STATUS) for r in rows]
        self.stats.cut_off = statuses.count(PARSE_CUT_OFF)
        self.stats.unparseable = sum(s not in (None, PARSE_OK, PARSE_CUT_OFF) for s in statuses)
        return rows

    def _run_batch(self, batch: list, outcomes: dict) -> int:
        """Run a batch (or its start, as the budget allows); return how many items ran."""
        found: dict[str, dict[str, dict]] = {item.key: {} for item in batch}
        todo: dict[str, list] = {"generate": [], "score": []}
        for item in batch:
            for kind in self._kinds(item):
                key = self.key(item, kind)
                hit = self.cache.get(key)
                if hit is None:
                    todo[kind].append((item, key))
                else:
                    found[item.key][kind] = hit
        computed = {item.key for pairs in todo.values() for item, _ in pairs}
        if self.budget is not None:
            batch, todo, computed = self._within_budget(batch, todo, computed, found)
        for kind, pairs in todo.items():
            if pairs:
                self._compute(kind, pairs, found)
        failed = {e["item"] for e in self.stats.errors}
        for item in batch:
            if item.key in failed:
                continue
            outcomes[item.key] = found[item.key]
            if item.key in computed or item.key in self._batched:
                self.stats.computed += 1
                if self.budget is not None:
                    self.budget.add(item_ledger(found[item.key]), computed=True)
            else:
                self.stats.cached += 1
        return len(batch)

    def _within_budget(self, batch: list, todo: dict, computed: set, found: dict
                       ) -> tuple[list, dict, set]:
        """The batch up to the first item to compute that the budget no longer allows; its
        cached items before that are counted at what they cost."""
        assert self.budget is not None
        pending, cut = 0, len(batch)
        for position, item in enumerate(batch):
            if item.key not in computed:
                self.budget.add(item_ledger(found[item.key]), computed=False)
            elif self.budget.allows(pending):
                pending += 1
            else:
                cut = position
                break
        if cut == len(batch):
            return batch, todo, computed
        self.stats.stopped = self.budget.stopped if not pending else None  # else: next batch
        kept = {item.key for item in batch[:cut]}
        return (batch[:cut], {kind: [p for p in pairs if p[0].key in kept]
                              for kind, pairs in todo.items()}, computed & kept)

    def _compute(self, kind: str, pairs: list, found: dict) -> None:
        try:
            outcomes = self._call(kind, [item for item, _ in pairs])
        except Exception as error:  # noqa: BLE001 - the batch failed as a whole
            if len(pairs) == 1:
                self._fail(pairs[0][0], kind, error)
                return
            for pair in pairs:  # isolate the failing item
                self._compute(kind, [pair], found)
            return
        for (item, key), outcome in zip(pairs, outcomes):
            if isinstance(outcome, BaseException):  # the backend isolated it already
                self._fail(item, kind, outcome)
                continue
            self.cache.put(key, kind, outcome)
            found[item.key][kind] = outcome
            self.stats.computed_calls.append(f"{item.key}/{kind}")

    def _fail(self, item, kind: str, error: BaseException) -> None:
        cause, transient = error_cause(error)
        trace = "".join(traceback.format_exception(error, limit=3))
        self.stats.errors.append({"item": item.key, "kind": kind, "error": trace[-1500:],
                                  "cause": cause, "transient": transient})

    def _call(self, kind: str, items: list) -> list:
        """One outcome per item: its cache value, or the exception its request raised."""
        requests = [item.request for item in items]
        start = time.perf_counter()
        if kind == "generate":
            generated = self.backend.generate(requests, self.params)
            share = self._called(start, len(generated), len(items))
            values = [o if isinstance(o, BaseException) else _generation_value(o)
                      for o in generated]
        else:
            scored = self.backend.score(requests, items[0].labels)
            share = self._called(start, len(scored), len(items))
            values = [o if isinstance(o, BaseException) else _score_value(o) for o in scored]
        for value in values:  # a batched call's items share its seconds
            if isinstance(value, dict):
                value.setdefault("wall_s", round(share, 6))
        return values

    def _called(self, start: float, n_outcomes: int, n_requests: int) -> float:
        """Count the model's time and return each request's share of it; refuse a batch
        whose outcomes do not match its requests."""
        seconds = time.perf_counter() - start
        self.stats.model_seconds += seconds
        if n_outcomes != n_requests:
            raise RuntimeError(f"{self.backend.name} returned {n_outcomes} outcomes for "
                               f"{n_requests} requests")
        return seconds / n_requests


def error_cause(error: BaseException) -> tuple[str, bool]:
    """A failure as (one line, whether a rerun can help).

    Transient: network, timeouts, rate limits and server errors (the HTTP backend says which
    of its failures are).  Out of memory is not: the item already failed alone.  Anything else
    (a refused request, an input that cannot be decoded) fails the same way again.
    """
    if isinstance(error, BackendError):
        return str(error), error.transient
    text = " ".join(str(error).split())
    if "out of memory" in text.lower() or type(error).__name__ == "OutOfMemoryError":
        return ("out of memory, even for the item alone: fewer frames (--fps, --n-frames), "
                "a smaller --max-new-tokens or a larger GPU"), False
    line = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return line[:300], isinstance(error, (TimeoutError, ConnectionError))


def outcome_value(outcome: Generation | LabelScores) -> dict:
    """What the cache stores of a call's outcome."""
    return _generation_value(outcome) if isinstance(outcome, Generation) else _score_value(outcome)


def _generation_value(generation: Generation) -> dict:
    return {"text": generation.text, "n_prompt_tokens": generation.n_prompt_tokens,
            "n_new_tokens": generation.n_new_tokens, **generation.info,
            "reasoning": generation.reasoning}


def _score_value(scores: LabelScores) -> dict:
    value = {"logprobs": scores.logprobs, "label_mass": scores.label_mass,
             "forms": scores.forms, **scores.info}
    if scores.received:
        value["normalised"] = scores.normalised()
    else:  # a server returns only its top k: the call worked, the score is missing
        value["normalised"] = None
        value.setdefault("score_missing", "no label among the top logprobs returned")
    return value
