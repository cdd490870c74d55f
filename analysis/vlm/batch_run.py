"""A run's calls through a backend's batch API, before the run reads them from the cache.

Every call the cache lacks goes into one batch, whose id is stored in the cache's database
as soon as the batch exists: a client that stops while it waits (killed, interrupted, a lost
machine) resumes polling that batch on the next run instead of submitting its calls again.
Each answer is stored under the key a synchronous call has, as the value it stores, so the
run's rows and its identity do not depend on the way the answers came.  A call the batch
did not answer (a line of its error file, a line an expired batch never reached, a batch
that failed as a whole) is left to the run's synchronous loop, which sends it once more as
an ordinary request.  A stored batch the server no longer has (:class:`BatchGone`) is said
so, and its calls not stored yet go into the run's new batch.
"""
from __future__ import annotations

import time

from analysis.vlm.backends.base import (
    BackendError,
    BatchCall,
    BatchGone,
    Generation,
    LabelScores,
    Request,
)
from analysis.vlm.provenance import stable_hash

# A stored call is read back by its key, kind and labels; its request was sent long ago.
_UNSENT = Request([], [])


def prefetch(runner, items: list) -> dict:
    """Answer the calls of ``items`` that ``runner``'s cache lacks through the batch API;
    what was sent and answered (``batches``, ``resumed``, ``gone``: why a stored batch was
    sent again, ``calls``, ``answered``, ``unanswered`` with a few of its causes), and the
    item keys answered in ``answered_items``."""
    calls: dict[str, BatchCall] = {}
    owners: dict[str, str] = {}
    for item in items:
        for kind in runner._kinds(item):
            key = runner.key(item, kind)
            if key not in calls and key not in runner.cache:
                calls[key] = BatchCall(key, kind, item.request,
                                       tuple(item.labels) if kind == "score" else ())
                owners[key] = item.key
    report: dict = {"batches": [], "resumed": [], "gone": [], "calls": len(calls),
                    "answered": 0, "unanswered": 0, "causes": [], "answered_items": set(),
                    "stored_for_later": 0}
    if not calls:
        return report
    start = time.perf_counter()
    scope = stable_hash(runner.description)
    for batch_id, stored in runner.cache.open_batches(scope):
        keys = [key for key, _, _ in stored]
        waiting = [calls[key] for key in keys if key in calls]
        if waiting:
            # Every answer it holds is paid for: those this run does not ask for are read
            # by their kind and labels and stored too, before the batch is forgotten.
            others = [BatchCall(key, kind, _UNSENT, labels) for key, kind, labels in stored
                      if kind and key not in calls and key not in runner.cache]
            try:
                _collect(runner, batch_id, waiting + others, owners, report)
            except BatchGone as gone:  # its calls go into the new batch below
                runner.cache.end_batch(batch_id)
                report["gone"].append(f"{gone}: its {len(waiting)} calls not stored yet are "
                                      "sent again in a new batch")
                continue
            report["resumed"].append(batch_id)
            for call in waiting:
                del calls[call.custom_id]
        elif not any(key not in runner.cache for key in keys):
            runner.cache.end_batch(batch_id)  # every answer is stored already
    if calls:
        try:
            batch_id = runner.backend.submit_batch(list(calls.values()), runner.params)
        except BackendError as error:
            raise BackendError(f"{error}; the batch was not sent (does the server offer the "
                               "batch API? run without --batch-api)",
                               transient=error.transient) from error
        runner.cache.add_batch(batch_id, scope, [(call.custom_id, call.kind, call.labels)
                                                 for call in calls.values()])
        report["batches"].append(batch_id)
        _collect(runner, batch_id, list(calls.values()), owners, report)
    runner.stats.model_seconds += time.perf_counter() - start
    return report


def _collect(runner, batch_id: str, calls: list[BatchCall], owners: dict, report: dict) -> None:
    """Store the answers of ``batch_id``, then forget the batch."""
    from analysis.vlm.runner import outcome_value

    outcomes = runner.backend.batch_outcomes(batch_id, calls)
    for call in calls:
        outcome = outcomes.get(call.custom_id)
        if not isinstance(outcome, (Generation, LabelScores)) and call.custom_id not in owners:
            continue  # not this run's call: its own run sends it again
        if not isinstance(outcome, (Generation, LabelScores)):
            report["unanswered"] += 1
            cause = str(outcome) if outcome is not None else f"batch {batch_id}: no answer"
            if len(report["causes"]) < 5 and cause not in report["causes"]:
                report["causes"].append(cause)
            continue
        runner.cache.put(call.custom_id, call.kind, outcome_value(outcome))
        if call.custom_id not in owners:  # another command's call: stored for its rerun
            report["stored_for_later"] += 1
            continue
        runner.stats.computed_calls.append(f"{owners[call.custom_id]}/{call.kind}")
        report["answered"] += 1
        report["answered_items"].add(owners[call.custom_id])
    runner.cache.end_batch(batch_id)
