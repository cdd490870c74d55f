"""Result cache: one SQLite file, one row per successful model call.

The key is a hash of everything that can change an answer (see :func:`cache_key`); the
runner builds it.  Each ``put`` is its own transaction in WAL mode, so a process killed
with SIGKILL mid-run leaves every finished item stored and no half-written row: the next
run resumes from there.  Errors are never stored.  A batch sent to a batch API is stored
with its calls' keys as soon as it exists, until its answers are: a rerun resumes it.
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from analysis.vlm.provenance import stable_hash

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""
BATCHES = """
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    keys TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


def cache_key(*, kind: str, backend: dict, prompt: str, visuals: list[dict],
              params: dict | None = None, labels: tuple[str, ...] = ()) -> str:
    """Hash of everything that can change an answer.

    Parameters
    ----------
    kind : {"generate", "score"}
    backend : dict
        ``Backend.describe()``: model id, weights hash, dtype, library versions,
        processor + chat-template hash (and any backend-specific settings).
    prompt : str
        The rendered prompt (chat template applied).
    visuals : list of dict
        ``Visual.key()`` of each input: file hash, decoded-pixel hash, frame indices,
        declared indices and metadata fps.
    params : dict, optional
        Decoding parameters and seed (generation only).
    labels : tuple of str
        Scored labels (scoring only).
    """
    return stable_hash({"kind": kind, "backend": backend, "prompt": prompt, "visuals": visuals,
                        "params": params or {}, "labels": list(labels)})


class ResultCache:
    """A persistent ``key -> JSON value`` map backed by SQLite (WAL)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: a row acknowledged by commit survives a power cut, not just a killed process.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(SCHEMA)
        self._db.execute(BATCHES)

    def get(self, key: str) -> dict | None:
        row = self._db.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, kind: str, value: dict) -> None:
        """Store a successful result (never call this for an error)."""
        if "error" in value:
            raise ValueError("errors are never cached")
        self._db.execute(
            "INSERT OR REPLACE INTO results (key, kind, value, created_at) VALUES (?, ?, ?, ?)",
            (key, kind, json.dumps(value, sort_keys=True), time.time()))

    def add_batch(self, batch_id: str, scope: str,
                  calls: list[tuple[str, str, tuple[str, ...]]]) -> None:
        """A batch whose answers are not stored yet; ``scope``: the backend it went to;
        ``calls``: each call's key, kind and labels, which read its answer."""
        self._db.execute("INSERT OR REPLACE INTO batches (id, scope, keys, created_at) "
                         "VALUES (?, ?, ?, ?)", (batch_id, scope, json.dumps(calls), time.time()))

    def open_batches(self, scope: str) -> list[tuple[str, list[tuple[str, str, tuple]]]]:
        """``(batch id, its calls' (key, kind, labels))`` of the batches sent to ``scope``
        and not ended, oldest first.  A batch stored with its keys alone (before kinds were
        kept) gives kind "": only the calls a run asks for again can be read from it."""
        rows = self._db.execute("SELECT id, keys FROM batches WHERE scope = ? "
                                "ORDER BY created_at, id", (scope,)).fetchall()
        return [(batch_id, [(c, "", ()) if isinstance(c, str) else (c[0], c[1], tuple(c[2]))
                            for c in json.loads(calls)]) for batch_id, calls in rows]

    def end_batch(self, batch_id: str) -> None:
        self._db.execute("DELETE FROM batches WHERE id = ?", (batch_id,))

    def __contains__(self, key: str) -> bool:
        row = self._db.execute("SELECT 1 FROM results WHERE key = ?", (key,)).fetchone()
        return row is not None

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
