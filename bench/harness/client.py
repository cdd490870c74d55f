"""HTTP for simulated participants: one request, and a request retried like the browser does;
and a signed-in researcher, for the exports.

Retry policy (the runner's): 5xx answers and connection errors are retried with jittered
exponential backoff (at least ``Retry-After`` when the server gives one), with the very same
body, so a trial keeps its client UUID across attempts.  4xx answers are final.
"""
from __future__ import annotations

import http.client
import json
import random
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

RETRYABLE_ERRORS = (OSError, http.client.HTTPException)


def exchange(host: str, port: int, timeout_s: float, method: str, path: str,
             body: bytes | None = None, headers: dict | None = None,
             source: str | None = None) -> tuple[int, list, bytes]:
    """One request on a fresh connection (gunicorn's sync workers close it after each answer):
    status, response headers as (name, value) pairs, body.  ``source``: the local address to
    send from (any 127.x.y.z stands for another client on loopback)."""
    connection = http.client.HTTPConnection(host, port, timeout=timeout_s,
                                            source_address=(source, 0) if source else None)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        connection.close()


def header(pairs: list, name: str) -> str:
    """A response header by case-insensitive name ('' when absent)."""
    return next((value for key, value in pairs if key.lower() == name.lower()), "")


@dataclass
class Answer:
    status: int
    body: object
    headers: dict


@dataclass
class Attempt:
    """One request on the wire: what, when (monotonic s), how long (s), and its outcome."""

    kind: str
    started: float
    seconds: float
    status: int  # 0: no HTTP answer (connection refused / reset)


@dataclass
class Retrying:
    """Sends requests for one participant, retrying retryable failures within ``budget_s``."""

    base_url: str
    rng: random.Random
    budget_s: float = 120.0
    base_delay_s: float = 0.1
    max_delay_s: float = 5.0
    timeout_s: float = 60.0
    attempts: list[Attempt] = field(default_factory=list)
    source: str | None = None  # the local address to send from (see exchange)

    def __post_init__(self):
        parts = urlsplit(self.base_url)
        self.host, self.port = parts.hostname, parts.port

    def once(self, method: str, path: str, body: dict | None = None) -> Answer:
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        status, answer_headers, raw = exchange(self.host, self.port, self.timeout_s, method, path,
                                               payload, headers, self.source)
        parsed = json.loads(raw) if raw and header(answer_headers, "Content-Type").startswith(
            "application/json") else None
        return Answer(status, parsed, dict(answer_headers))

    def send(self, kind: str, method: str, path: str, body: dict | None = None) -> Answer | None:
        """The final answer (2xx-4xx), or None when the retry budget ran out."""
        deadline = time.monotonic() + self.budget_s
        for attempt in range(10_000):
            started = time.monotonic()
            try:
                answer = self.once(method, path, body)
            except RETRYABLE_ERRORS:
                answer = None
            self.attempts.append(Attempt(kind, started, time.monotonic() - started,
                                         answer.status if answer else 0))
            if answer is not None and answer.status < 500:
                return answer
            delay = min(self.max_delay_s, self.base_delay_s * 2 ** attempt)
            retry_after = (answer.headers.get("Retry-After") if answer else None) or 0
            delay = max(delay, float(retry_after)) * self.rng.uniform(0.5, 1.5)
            if time.monotonic() + delay > deadline:
                return None
            time.sleep(delay)
        return None


class Researcher:
    """A researcher signed in over HTTP, as a browser is: session cookie and CSRF token."""

    _CSRF = re.compile(rb'name="csrf_token" type="hidden" value="([^"]+)"')

    def __init__(self, base_url: str, username: str, password: str, timeout_s: float = 120.0):
        parts = urlsplit(base_url)
        self.host, self.port, self.timeout_s = parts.hostname, parts.port, timeout_s
        self.cookies: dict[str, str] = {}
        page = self.request("GET", "/auth/login")
        token = self._CSRF.search(page[1])
        if page[0] != 200 or token is None:
            raise RuntimeError(f"no sign-in form (HTTP {page[0]})")
        form = urlencode({"csrf_token": token.group(1).decode(), "username": username,
                          "password": password})
        status, _ = self.request("POST", "/auth/login", form.encode(),
                                 {"Content-Type": "application/x-www-form-urlencoded"})
        if status != 302:
            raise RuntimeError(f"sign-in refused (HTTP {status})")

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict | None = None) -> tuple[int, bytes]:
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        status, answer_headers, raw = exchange(
            self.host, self.port, self.timeout_s, method, path, body,
            {**(headers or {}), **({"Cookie": cookie} if cookie else {})})
        for name, value in answer_headers:
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";", 1)[0]
        return status, raw
