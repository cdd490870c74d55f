"""Scripted participants that no person drives (issue 25), against the participant API as it
is: what each strategy sends, for the tests (tests/webapp/test_bots.py, the Flask test
client) and the bench (bench/bots.py, a live gunicorn site).

Every strategy answers with the fields the runner sends (onset, key time and RT that agree)
and guesses practice and main trials (the practice answers are not published; ``eyes``, a
person's view of the clip, is for the tests' stand-ins for people).  They differ in what else they do: fetch the media or not, wait a
person's time between trials or not, decline consent, send only technical trials, or
recognise catch videos by their bytes.  ``http`` is any client with ``get(path) -> (status,
bytes)`` and ``post(path, body) -> (status, dict)``; ``pause(ms)`` waits (a no-op where the
caller's clock moves on by itself).
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import uuid
from collections.abc import Callable, Mapping

from experiments.trial_types.base import FULLSCREEN_EXITED_ANSWER, MAX_TECHNICAL_EVENTS

ONSET_MS = 4000.0


def enter(http, slug: str, participant: str) -> str:
    """The session's API path, from the entry link's redirect (``http.enter`` follows none)."""
    token = http.enter(f"/p/{slug}?PROLIFIC_PID={participant}").rstrip("/").rsplit("/", 1)[-1]
    return f"/api/session/{token}"


def state(http, api: str) -> dict:
    status, body = http.get(api)
    if status != 200:
        raise RuntimeError(f"GET {api}: {status}")
    return json.loads(body)


def trial_body(trial: dict, key: str, key_mapping: Mapping, rt_ms: float,
               technical: bool = False) -> dict:
    """An answered video trial, its three clocks consistent, as the runner sends it."""
    body = {"client_uuid": str(uuid.uuid4()), "trial_index": trial["trial_index"],
            "trial_type": trial["trial_type"], "rt_ms": rt_ms, "timed_out": False,
            "response": key_mapping[key], "key": key, "onset_method": "canvas-raf-next",
            "onset_time_ms": ONSET_MS, "key_time_ms": ONSET_MS + rt_ms, "dropped_frames": 0,
            "total_frames": 90}
    if technical:  # left fullscreen at every presentation, answered each time: the cap's shape
        body.update(fullscreen_exited=True, technical_events=[
            {"kind": FULLSCREEN_EXITED_ANSWER, "presentation": i + 1}
            for i in range(MAX_TECHNICAL_EVENTS)])
    return body


def _media(http, trial: dict) -> bytes:
    status, data = http.get(trial["stimulus"]["url"])
    return data if status == 200 else b""


def _key(trial: dict, session: dict, rng: random.Random, seen: bytes,
         catch_keys: Mapping[str, str], seen_answer) -> str:
    """The answer ``seen_answer`` saw; a catch video recognised by its hash; else a guess."""
    keys = session["response_keys"]
    if seen_answer is not None:
        return next(k for k in keys if session["key_mapping"][k] == seen_answer)
    known = catch_keys.get(hashlib.sha256(seen).hexdigest()) if seen else None
    return known if known in keys else rng.choice(keys)


def run_api(http, slug: str, participant: str, *, fetch_media: bool, person_delays: bool,
            pause: Callable[[float], None] = lambda ms: None, technical_main: bool = False,
            catch_keys: Mapping[str, str] | None = None, seed: int = 0,
            eyes: Callable[[str, dict], object] | None = None) -> dict:
    """Enter, consent, answer every trial in order through the API, complete; the ending.
    ``eyes(api, trial)``: the response a person who watched the clip gives, or None."""
    rng = random.Random(seed)
    api = enter(http, slug, participant)
    http.post(f"{api}/consent", {"consent": True})
    while True:
        session = state(http, api)
        trial = next((t for t in session["trials"]
                      if t["trial_index"] == session["next_trial_index"]), None)
        if session["status"] != "in_progress" or trial is None:
            break
        seen = _media(http, trial) if fetch_media else b""
        rt = rng.uniform(450.0, 1100.0)
        if person_delays:
            pause(trial["params"].get("fixation_ms", 500) + session["inter_trial_ms"] + rt)
        technical = technical_main and trial["block"] != "practice"
        key = _key(trial, session, rng, seen, catch_keys or {}, 
                   eyes(api, trial) if eyes else None)
        body = trial_body(trial, key, session["key_mapping"], rt, technical)
        status, answer = http.post(f"{api}/trials", body)
        if status not in (200, 201):
            raise RuntimeError(f"trial {trial['trial_index']}: {status} {answer}")
    return http.post(f"{api}/complete", {})[1] | {"api": api}


def decline(http, slug: str, participant: str) -> dict:
    """Enter and decline consent: the no-consent ending, with its code."""
    api = enter(http, slug, participant)
    return http.post(f"{api}/consent", {"consent": False})[1] | {"api": api}


STRATEGIES: dict[str, Callable] = {
    "API only, fast": lambda http, slug, pid, pause: run_api(
        http, slug, pid, fetch_media=False, person_delays=False),
    "API only, human-like delays": lambda http, slug, pid, pause: run_api(
        http, slug, pid, fetch_media=False, person_delays=True, pause=pause),
    "media fetched, unwatched": lambda http, slug, pid, pause: run_api(
        http, slug, pid, fetch_media=True, person_delays=False),
    "consent declined": lambda http, slug, pid, pause: decline(http, slug, pid),
    "all technical": lambda http, slug, pid, pause: run_api(
        http, slug, pid, fetch_media=True, person_delays=True, pause=pause,
        technical_main=True),
}


def record_outcome(strategy: str, participant: str, status: str, decision, reasons) -> None:
    """Append one row of the strategy x outcome table to the file that bench/bots.py names in
    ``CHRONOSCOPE_BOT_REPORT`` (the tests that run the bots call it; without it, nothing)."""
    path = os.environ.get("CHRONOSCOPE_BOT_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as report:
            report.write(json.dumps({"strategy": strategy, "participant": participant,
                                     "status": status, "decision": decision,
                                     "reasons": list(reasons)}) + "\n")
