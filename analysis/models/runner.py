"""Run items through a backend with the cache: batched, resumable, with a progress bar.

Each batch is looked up in the cache; only misses reach the model, and each result is
stored as soon as its batch returns, so a run killed at any point loses at most the batch
in flight and a rerun computes exactly the items not yet stored.  A failing batch is retried
item by item; an item that still fails is reported and never cached or written as a trial.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from analysis import columns as C
from analysis.models.backends.base import Backend, Generation, GenerationParams, LabelScores
from analysis.models.cache import ResultCache, cache_key
from analysis.models.parsers import PARSE_OK

SCORING_MODES = ("generate", "logits", "both")


@dataclass
class RunStats:
    total: int = 0
    cached: int = 0
    computed: int = 0
    errors: list[dict] = field(default_factory=list)
    unparseable: int = 0
    model_seconds: float = 0.0
    wall_seconds: float = 0.0
    computed_calls: list[str] = field(default_factory=list)  # "item key/kind" run by the model

    def as_dict(self) -> dict:
        rate = self.total / self.wall_seconds if self.wall_seconds else None
        model_rate = self.computed / self.model_seconds if self.model_seconds else None
        return {"total": self.total, "cached": self.cached, "computed": self.computed,
                "errors": self.errors, "unparseable": self.unparseable,
                "model_seconds": round(self.model_seconds, 3),
                "wall_seconds": round(self.wall_seconds, 3), "items_per_s": rate,
                "computed_items_per_s": model_rate}


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
        outcomes: dict[str, dict] = {}
        with tqdm(total=len(items), unit="item", disable=not self.progress,
                  desc=f"{self.backend.name}:{self.description.get('model', '')}") as bar:
            for batch in _batches(items, self.batch_size):
                self._run_batch(batch, outcomes)
                bar.update(len(batch))
        self.stats.wall_seconds = time.perf_counter() - start
        rows = [trial_row(item, index, outcomes[item.key])
                for index, item in enumerate(items) if item.key in outcomes]
        self.stats.unparseable = sum(r["extra"].get(C.EXTRA_PARSE_STATUS) not in (None, PARSE_OK)
                                     for r in rows)
        return rows

    def _run_batch(self, batch: list, outcomes: dict) -> None:
        found = {item.key: {} for item in batch}
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
            if item.key in computed:
                self.stats.computed += 1
            else:
                self.stats.cached += 1

    def _compute(self, kind: str, pairs: list, found: dict) -> None:
        try:
            results = self._call(kind, [item for item, _ in pairs])
        except Exception:  # noqa: BLE001 - isolate the failing item below
            if len(pairs) == 1:
                item, _ = pairs[0]
                import traceback
                self.stats.errors.append({"item": item.key, "kind": kind,
                                          "error": traceback.format_exc(limit=3)[-1500:]})
                return
            for pair in pairs:
                self._compute(kind, [pair], found)
            return
        for (item, key), value in zip(pairs, results):
            self.cache.put(key, kind, value)
            found[item.key][kind] = value
            self.stats.computed_calls.append(f"{item.key}/{kind}")

    def _call(self, kind: str, items: list) -> list[dict]:
        requests = [item.request for item in items]
        start = time.perf_counter()
        if kind == "generate":
            out = [_generation_value(g) for g in self.backend.generate(requests, self.params)]
        else:
            out = [_score_value(s) for s in self.backend.score(requests, items[0].labels)]
        self.stats.model_seconds += time.perf_counter() - start
        return out


def _generation_value(generation: Generation) -> dict:
    return {"text": generation.text, "n_prompt_tokens": generation.n_prompt_tokens,
            "n_new_tokens": generation.n_new_tokens, **generation.info}


def _score_value(scores: LabelScores) -> dict:
    return {"logprobs": scores.logprobs, "normalised": scores.normalised(),
            "label_mass": scores.label_mass, "forms": scores.forms, **scores.info}


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
        extra.update({"label_logprobs": scores["logprobs"], "p_label": scores["normalised"],
                      "label_mass": scores["label_mass"], "surface_forms": scores["forms"]})
        if "F" in scores["normalised"]:
            extra[C.EXTRA_P_FORWARD] = scores["normalised"]["F"]
        if generation is None:  # logits only: the answer is the more probable label
            response = max(scores["normalised"], key=scores["normalised"].get)
            extra["response_source"] = "logits"
    info = generation or scores or {}
    extra["temporal_position_ids"] = info.get("temporal_position_ids")
    videos = [v for v in item.request.visuals if v.kind == "video"]
    if videos:  # the test clip is the last video (demonstrations come first)
        extra["metadata_fps"] = round(videos[-1].metadata_fps, 6)
        extra["frame_indices"] = videos[-1].frame_indices
    stimulus = item.stimulus
    if stimulus.item_id:  # a published benchmark item: the row traces back to it
        extra["item_id"] = stimulus.item_id
    return {"trial_index": index, "trial_type": item.trial_type, "block": None,
            "stimulus_id": stimulus.stimulus_id, "source_clip_id": stimulus.source_clip_id,
            "categories": list(stimulus.categories), "direction": stimulus.direction,
            "correct_response": item.correct_response, "response": response,
            "correct": None if response is None else response == item.correct_response,
            "rt_ms": None, "onset_method": None, "dropped_frames": None, "excluded": False,
            "exclusion_reasons": [], "extra": extra}
