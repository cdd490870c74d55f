"""Simulated participants that follow the browser's API sequence, on threads of their own.

Each participant: enters via ``/p/<slug>?participant=<id>``, GETs the session, consents,
posts each trial (a fresh client UUID per trial, kept across retries) after a think time,
and completes; then a new participant takes its place until the run's time is up.  Every
trial the client sent is written to the ledger with the answer it finally got, for the audit.
"""
from __future__ import annotations

import random
import threading
import time
import uuid
from dataclasses import dataclass, field

from bench.harness.client import Answer, Attempt, Retrying


@dataclass
class Sent:
    token: str
    trial_index: int
    client_uuid: str
    status: int | None  # final HTTP status; None: gave up after the retry budget


@dataclass
class Outcome:
    """What all participants did: the trials sent, every request attempt, and failures."""

    sent: list[Sent] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    sessions: dict[str, str] = field(default_factory=dict)  # token -> final status
    started: float = 0.0
    ended: float = 0.0


def trial_body(trial: dict, key_mapping: dict, rng: random.Random) -> dict:
    """An aot/catch answer as the runner posts it (a guess: no answer is published), with the
    key that gives the response in the session's ``key_mapping``."""
    response = rng.choice("FB")
    key = next(k for k, label in key_mapping.items() if label == response)
    return {"client_uuid": str(uuid.uuid4()), "trial_index": trial["trial_index"],
            "trial_type": trial["trial_type"], "rt_ms": rng.uniform(400.0, 1500.0),
            "timed_out": False, "response": response, "key": key, "onset_method": "element-timing",
            "dropped_frames": 0, "total_frames": 90, "stalls": 0, "stall_ms": 0.0}


class Participant:
    def __init__(self, base_url: str, slug: str, name: str, think_s: float, end: float,
                 outcome: Outcome, seed: int, source: str | None = None):
        self.rng = random.Random(seed)
        self.http = Retrying(base_url, self.rng, source=source)
        self.slug, self.name, self.think_s, self.end = slug, name, think_s, end
        self.outcome, self.sent, self.failures = outcome, [], []

    def fail(self, what: str, answer: Answer | None) -> None:
        self.failures.append(f"{self.name}: {what} -> "
                             f"{answer.status if answer else 'gave up'} {answer.body if answer else ''}")

    def think(self) -> None:
        if self.think_s > 0:
            time.sleep(min(self.rng.uniform(0.5, 1.5) * self.think_s, max(0.0, self.end - time.time())))

    def run(self) -> None:
        serial = 0
        while time.time() < self.end:
            serial += 1
            self.session(f"{self.name}-{serial}")

    def session(self, participant: str) -> None:
        entry = self.http.send("entry", "GET", f"/p/{self.slug}?participant={participant}")
        if entry is None or entry.status != 303:
            return self.fail("entry", entry)
        token = entry.headers["Location"].rstrip("/").rsplit("/", 1)[-1]
        api = f"/api/session/{token}"
        state = self.http.send("state", "GET", api)
        consent = self.http.send("consent", "POST", f"{api}/consent", {"consent": True})
        if state is None or state.status != 200 or consent is None or consent.status != 200:
            return self.fail("state/consent", consent if state and state.status == 200 else state)
        pending = [t for t in state.body["trials"] if t["trial_index"] not in state.body["stored_indices"]]
        for trial in pending:
            self.think()
            if time.time() >= self.end:
                return self.close(token, "unfinished")
            body = trial_body(trial, state.body["key_mapping"], self.rng)
            answer = self.http.send("trial", "POST", f"{api}/trials", body)
            self.sent.append(Sent(token, trial["trial_index"], body["client_uuid"],
                                  answer.status if answer else None))
            if answer is None or answer.status not in (200, 201):
                self.fail(f"trial {trial['trial_index']}", answer)
                return self.close(token, "failed")
        done = self.http.send("complete", "POST", f"{api}/complete", {})
        if done is None or done.status != 200:
            self.fail("complete", done)
            return self.close(token, "failed")
        self.close(token, done.body["status"])

    def close(self, token: str, status: str) -> None:
        self.outcome.sessions[token] = status  # dict item assignment is atomic under the GIL


def run_participants(base_url: str, slug: str, n: int, duration_s: float, think_s: float,
                     seed: int = 0, prefix: str = "sim", arrivals_per_s: float = 20.0,
                     sources: list[str] | None = None) -> Outcome:
    """Run ``n`` concurrent participants for ``duration_s``; returns what they did.
    Participant ``i`` sends from ``sources[i % len(sources)]`` (default: the system's choice).

    Participants who think between trials arrive at ``arrivals_per_s`` (a load tool's spawn
    rate; 200 arrive over 10 s), as a study launch brings them; back-to-back participants
    (``think_s == 0``, the throughput scenarios) all start at once.
    """
    outcome = Outcome(started=time.monotonic())
    end = time.time() + duration_s
    people = [Participant(base_url, slug, f"{prefix}{seed}-{i}", think_s, end, outcome,
                          seed * 100_003 + i, sources[i % len(sources)] if sources else None)
              for i in range(n)]
    threads = [threading.Thread(target=p.run, daemon=True) for p in people]
    for thread in threads:
        thread.start()
        if think_s > 0:
            time.sleep(1.0 / arrivals_per_s)
    for thread in threads:
        thread.join()
    outcome.ended = time.monotonic()
    for person in people:
        outcome.sent += person.sent
        outcome.attempts += person.http.attempts
        outcome.failures += person.failures
    return outcome
