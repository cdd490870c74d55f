from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from webapp.extensions import Model
from webapp.models._types import JSONType, UTCDateTime, utcnow
from webapp.models.study import Session


class ModelRun(Model):
    """The provenance of one model run, beside the :class:`Session` its trials are stored in.

    ``run_key`` is the run's identity (model, revision and every setting that can change an
    answer): a rerun with the same key completes this run instead of starting another.
    ``item_keys`` is every item ever asked of it, so ``trial_index`` ``i`` of its session
    answers ``item_keys[i]``.  The ``Session`` fields meant for people (``device_info``,
    ``schedule``) stay empty for a model.
    """

    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("session.id"), unique=True)
    run_key: Mapped[str] = mapped_column(String(64), index=True)
    model: Mapped[str] = mapped_column(String(400))
    # The researcher's --model-revision, else the start of the weights fingerprint.
    revision: Mapped[str | None] = mapped_column(String(200))
    # Backend.describe(): model id, dtype, device kind, library versions, processor hash ...
    backend: Mapped[dict] = mapped_column(JSONType, default=dict)
    weights_sha256: Mapped[str | None] = mapped_column(Text)  # files hashed, or hub commit
    params: Mapped[dict] = mapped_column(JSONType, default=dict)  # decoding parameters and seed
    sampling: Mapped[dict] = mapped_column(JSONType, default=dict)  # frames given: fps, n_frames
    task: Mapped[dict] = mapped_column(JSONType, default=dict)  # the TaskSpec
    scoring: Mapped[str | None] = mapped_column(String(20))
    timing: Mapped[dict] = mapped_column(JSONType, default=dict)
    counts: Mapped[dict] = mapped_column(JSONType, default=dict)  # cached, computed, errors ...
    failures: Mapped[list] = mapped_column(JSONType, default=list)  # errors of items not stored
    item_keys: Mapped[list] = mapped_column(JSONType, default=list)
    # analysis.vlm.ledger.summarise of the last run's items: tokens, seconds, cost if priced
    ledger: Mapped[dict | None] = mapped_column(JSONType, default=dict)
    run_id: Mapped[str | None] = mapped_column(String(40))  # the last run's folder in model_runs/
    git_commit: Mapped[str | None] = mapped_column(String(40))
    # The run's whole manifest as it wrote it (with run_key and failures): what the typed
    # columns above do not keep (status, host, cache, batch size, limit, backend options).
    manifest: Mapped[dict] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    session: Mapped[Session] = relationship()

    def provenance(self) -> dict:
        """What the run's exports and listings show of it."""
        return {"run_key": self.run_key, "model": self.model, "revision": self.revision,
                "backend": self.backend, "weights_sha256": self.weights_sha256,
                "params": self.params, "sampling": self.sampling, "task": self.task,
                "scoring": self.scoring, "timing": self.timing, "counts": self.counts,
                "failures": self.failures, "ledger": self.ledger, "run_id": self.run_id,
                "git_commit": self.git_commit}
