"""Run items through a backend with the cache: batched, resumable, with a progress bar.

Each batch is looked up in the cache; only misses reach the model, and each result is
stored as soon as its batch returns, so a run killed at any point loses at most the batch
in flight and a rerun computes exactly the items not yet stored.  A backend that sends
requests one by one reports each request's outcome: its successes are stored and only its
failures are failures.  A backend that raises for a whole batch has that batch retried item
by item.  An item that still fails is reported with a one-line cause and whether a rerun can
help, and is never cached or written as a trial.  A score with no label among the top
logprobs a server returned is not a failure: the row keeps its generated answer and says why
it has no ``p_forward``.
"""
from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass, field

from analysis import columns as C
from analysis.vlm.backends.base import Backend, BackendError, Generation, GenerationParams, LabelScores
from analysis.vlm.cache import ResultCache, cache_key
from analysis.vlm.parsers import PARSE_OK

SCORING_MODES = ("generate", "logits", "both")


@dataclass
class RunStats:
    total: int = 0
    cached: int = 0
    computed: int = 0
    errors: list[dict] = field(default_factory=list)  # one per failed call (item, kind)
    unparseable: int = 0
    model_seconds: float = 0.0
    wall_seconds: float = 0.0
    computed_calls: list[str] = field(default_factory=list)  # "item key/kind" run by the model
    batch: dict | None = None  # what a batch API answered (analysis.vlm.batch_run)

    def as_dict(self) -> dict:
        rate = self.total / self.wall_seconds if self.wall_seconds else None
        model_rate = self.computed / self.model_seconds if self.model_seconds else None
        return {"total": self.total, "cached": self.cached, "computed": self.computed,
                "errors": self.errors, "failed_items": len({e["item"] for e in self.errors}),
                "unparseable": self.unparseable,
                "model_seconds": round(self.model_seconds, 3),
                "wall_seconds": round(self.wall_seconds, 3), "items_per_s": rate,
                "computed_items_per_s": model_rate, "batch": self.batch}


# Backend info about the video inputs that a trial row keeps (transformers backend).
VIDEO_INPUT_INFO = ("temporal_position_ids_per_video", "frames_per_video", "video_encoding")


def model_revision(description: dict) -> str | None:
    """Which weights answered: the researcher's ``--model-revision``, else the start of the
    weights fingerprint (local folders, hub snapshots), else None (a served model)."""
    if description.get("revision"):
        return str(description["revision"])
    weights = description.get("weights_sha256")
    return str(weights)[:12] if weights else None


def _batches(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start:start + size]


class Runner:
    """Runs items through ``backend`` with ``cache`` and turns outcomes into trial rows."""

    def __init__(self, backend: Backend, cache: ResultCache, params: GenerationParams,
                 scoring: str = "both", batch_size: int = 8, progress: bool = True):
        if scoring not in SCORING_MODES:
            raise ValueError(f"scoring must be one of {SCORING_MODES}, got {scoring!r}")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.backend, self.cache, self.params = backend, cache, params
        self.scoring, self.batch_size, self.progress = scoring, batch_size, progress
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
        kinds = []
        if self.scoring in ("generate", "both") or not item.scorable:
            kinds.append("generate")
        if self.scoring in ("logits", "both") and item.scorable:
            kinds.append("score")
        return kinds

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
            for batch in _batches(items, self.batch_size):
                self._run_batch(batch, outcomes)
                bar.update(len(batch))
        self.stats.wall_seconds = time.perf_counter() - start
        rows = [trial_row(item, index, outcomes[item.key])
                for index, item in enumerate(items) if item.key in outcomes]
        revision = model_revision(self.description)
        for row in rows:  # so analysis never pools two revisions of one model
            row["extra"][C.EXTRA_REVISION] = revision
        self.stats.unparseable = sum(r["extra"].get(C.EXTRA_PARSE_STATUS) not in (None, PARSE_OK)
                                     for r in rows)
        return rows

    def _run_batch(self, batch: list, outcomes: dict) -> None:
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
            else:
                self.stats.cached += 1

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
            self._called(start, len(generated), len(items))
            return [o if isinstance(o, BaseException) else _generation_value(o) for o in generated]
        scored = self.backend.score(requests, items[0].labels)
        self._called(start, len(scored), len(items))
        return [o if isinstance(o, BaseException) else _score_value(o) for o in scored]

    def _called(self, start: float, n_outcomes: int, n_requests: int) -> None:
        """Count the model's time; refuse a batch whose outcomes do not match its requests."""
        self.stats.model_seconds += time.perf_counter() - start
        if n_outcomes != n_requests:
            raise RuntimeError(f"{self.backend.name} returned {n_outcomes} outcomes for "
                               f"{n_requests} requests")


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
            "n_new_tokens": generation.n_new_tokens, **generation.info}


def _score_value(scores: LabelScores) -> dict:
    value = {"logprobs": scores.logprobs, "label_mass": scores.label_mass,
             "forms": scores.forms, **scores.info}
    if scores.received:
        value["normalised"] = scores.normalised()
    else:  # a server returns only its top k: the call worked, the score is missing
        value["normalised"] = None
        value.setdefault("score_missing", "no label among the top logprobs returned")
    return value


def _add_scores(extra: dict, scores: dict) -> str | None:
    """Put a score's fields in ``extra``; return the more probable label (None if missing)."""
    extra["surface_forms"] = scores["forms"]
    normalised = scores["normalised"]
    if normalised is None:  # no p_forward: no label among the top logprobs returned
        extra.update({"score_missing": scores["score_missing"], "label_mass": 0.0})
        return None
    # A label outside a server's top k has log-probability -inf here: stored as None (JSON
    # has no infinity, and PostgreSQL refuses it) and named, since its p_label of 0 is only
    # an upper-bound guess.
    logprobs = {label: value if math.isfinite(value) else None
                for label, value in scores["logprobs"].items()}
    extra.update({"label_logprobs": logprobs, "p_label": normalised,
                  "label_mass": scores["label_mass"]})
    below = sorted(label for label, value in logprobs.items() if value is None)
    if below:
        extra["labels_below_top_logprobs"] = below
    if "F" in normalised:
        extra[C.EXTRA_P_FORWARD] = normalised["F"]
    return max(normalised, key=normalised.get)


def trial_row(item, index: int, outcome: dict) -> dict:
    """One canonical trial row (subject and session ids are filled in by the writer)."""
    extra = dict(item.extra)
    response = None
    generation, scores = outcome.get("generate"), outcome.get("score")
    if generation is not None:
        parsed = item.parse(generation["text"])
        response = parsed.response
        extra.update({C.EXTRA_RAW_TEXT: generation["text"], C.EXTRA_PARSE_STATUS: parsed.status,
                      "parse_detail": parsed.detail, "n_new_tokens": generation["n_new_tokens"],
                      "n_prompt_tokens": generation["n_prompt_tokens"]})
    if scores is not None:
        more_probable = _add_scores(extra, scores)
        if generation is None:  # logits only: the answer is the more probable label
            response = more_probable
            extra["response_source"] = "logits"
    info = generation or scores or {}
    extra["temporal_position_ids"] = info.get("temporal_position_ids")
    for key in VIDEO_INPUT_INFO:  # how the clips reached the model, where the backend says
        if key in info:
            extra[key] = info[key]
    videos = [v for v in item.request.visuals if v.kind == "video"]
    if videos:  # the test clip is the last video (demonstrations come first)
        extra["metadata_fps"] = round(videos[-1].metadata_fps, 6)
        extra["frame_indices"] = videos[-1].frame_indices
    stimulus = item.stimulus
    if stimulus.item_id:  # a published benchmark item: the row traces back to it
        extra["item_id"] = stimulus.item_id
    return {"trial_index": index, "trial_type": item.trial_type, "block": None,
            "stimulus_id": stimulus.id, "source_clip_id": stimulus.source_clip_id,
            "categories": list(stimulus.categories),
            # As for people: a frame order has no direction, whatever its frames came from.
            "direction": None if item.trial_type == C.FRAME_ORDER else stimulus.direction,
            "correct_response": item.correct_response, "response": response,
            # As for people's timeouts: no answer is not a correct one (the non-response
            # policy, analysis.nonresponse, finds it by its empty response).
            "correct": response is not None and response == item.correct_response,
            "rt_ms": None, "onset_method": None, "dropped_frames": None, "excluded": False,
            "exclusion_reasons": [], "extra": extra}
