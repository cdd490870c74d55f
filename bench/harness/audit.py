"""The audit: read the database directly and hold it against what the clients sent.

Checks, for the sessions the run created: every trial a client sent is stored, exactly once
and under the client UUID it was sent with; no row exists that no client sent; and every
request ended in an answer (none gave up after its retries).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import sqlalchemy as sa

from bench.harness.participants import Outcome

ROWS = sa.text("""SELECT s.token, t.trial_index, t.client_uuid
                  FROM trial t JOIN session s ON s.id = t.session_id
                  JOIN subject u ON u.id = s.subject_id JOIN study e ON e.id = u.study_id
                  WHERE e.slug = :slug""")


@dataclass
class Audit:
    sent: int
    stored: int
    missing: int
    duplicate: int
    unexpected: int  # rows no client sent (or stored under another UUID)
    gave_up: int
    failures: int

    @property
    def ok(self) -> bool:
        return not (self.missing or self.duplicate or self.unexpected or self.gave_up or self.failures)


def audit(database_url: str, slug: str, outcome: Outcome) -> Audit:
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(ROWS, {"slug": slug}).all()
    finally:
        engine.dispose()
    tokens = {s.token for s in outcome.sent} | set(outcome.sessions)
    rows = [r for r in rows if r.token in tokens]
    per_trial = Counter((r.token, r.trial_index) for r in rows)
    stored_uuid = {(r.token, r.trial_index): r.client_uuid for r in rows}
    acked = [s for s in outcome.sent if s.status in (200, 201)]
    missing = sum(stored_uuid.get((s.token, s.trial_index)) != s.client_uuid for s in acked)
    sent_keys = {(s.token, s.trial_index, s.client_uuid) for s in outcome.sent}
    unexpected = sum((r.token, r.trial_index, r.client_uuid) not in sent_keys for r in rows)
    return Audit(sent=len(outcome.sent), stored=len(rows), missing=missing,
                 duplicate=sum(n - 1 for n in per_trial.values() if n > 1), unexpected=unexpected,
                 gave_up=sum(s.status is None for s in outcome.sent),
                 failures=len(outcome.failures))
