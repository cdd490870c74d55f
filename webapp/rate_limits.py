"""The one rate limiter of the app, counting in a store that every worker and server shares.

Counters live in Redis when ``RATELIMIT_STORAGE_URI`` names one (production: each attempt
counts once, whichever gunicorn worker of whichever server takes it), else in the app's own
database, so the embedded default (`make run`) needs nothing more.  Counting in each process's
memory is refused: with N workers a limit allowed N times its count (measured: 40 sign-ins in
4.3 s against 10 a minute, 4 workers).

A limit is a sliding window estimated from two fixed ones (the previous window's count,
weighted by the share of it the sliding window still covers, plus the current one's), so no
burst of twice the count fits across a window's edge.  A refused request is not counted and
costs one read: a flood writes nothing.  Clients are keyed by address, an IPv6 address by its
/64 (one subscriber's network: a host picks any address in it at will).
"""
from __future__ import annotations

import hashlib
import ipaddress
import math
import re
import time
from dataclasses import dataclass

from flask import Flask, current_app, request

from webapp.config import read_switches
from webapp.errors import busy_response
from webapp.rate_limit_stores import DatabaseCounters, RedisCounters

_LIMIT = re.compile(r"\s*(\d+)\s*(?:per|/)\s*(\d*)\s*(second|minute|hour|day)s?\s*", re.I)
_UNIT_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


@dataclass(frozen=True)
class Limit:
    count: int
    period_s: int


def parse_limit(text: str) -> Limit:
    """``"10 per minute"``, ``"3 per 10 minutes"``, ``"20/hour"`` as a Limit, or ValueError."""
    match = _LIMIT.fullmatch(text or "")
    if not match or int(match[1]) < 1 or match[2] == "0":
        raise ValueError(f"rate limit {text!r}: expected 'COUNT per [N] second|minute|hour|day'"
                         ", COUNT and N at least 1")
    return Limit(int(match[1]), int(match[2] or 1) * _UNIT_S[match[3].lower()])


_LIMIT_PREFIXES = ("NEW_SESSIONS_", "RETURNING_ENTRIES_", "LOGIN_")


def init_app(app: Flask) -> None:
    """Choose the store from ``RATELIMIT_STORAGE_URI`` and check every configured limit, so a
    misspelt limit stops the server at start instead of failing a participant's request."""
    read_switches(app, ("RATELIMIT_ENABLED",))
    for name, value in app.config.items():
        if name.startswith(_LIMIT_PREFIXES) and isinstance(value, str):
            parse_limit(value)
    url = app.config.get("RATELIMIT_STORAGE_URI") or "database"
    store: RedisCounters | DatabaseCounters
    if url.startswith(_REDIS_SCHEMES):
        store = RedisCounters(url)
        app.register_error_handler(store.errors, _store_unavailable)
    elif url == "database":
        store = DatabaseCounters()
    else:
        raise ValueError(f"CHRONOSCOPE_RATELIMIT_STORAGE_URI must be redis://..., rediss://..., "
                         f"unix://... or 'database' (shared by every worker), got {url!r}")
    app.extensions["rate_limits"] = store


def _store_unavailable(error):
    """Fail closed, as when the database is down: nobody signs in or starts unlimited."""
    current_app.logger.warning("rate-limit store unavailable on %s: %s", request.path, error)
    return busy_response()


def client_key(address: str) -> str:
    """The part of a client's address that rate limits count: an IPv4 address, an IPv6
    address's /64 (an IPv4-mapped one as its IPv4 address), or the text as given."""
    try:
        parsed = ipaddress.ip_address((address or "").split("%", 1)[0])
    except ValueError:
        return address or "unknown"
    if parsed.version == 6 and parsed.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed.ipv4_mapped if parsed.version == 6 else parsed)


def client() -> str:
    """The current request's client key (its address as ProxyFix left it: see PROXY_HOPS)."""
    return client_key(request.remote_addr or "")


def hit(name: str, limit: str, *scope: str) -> int:
    """Count one request of ``scope`` (e.g. a client key) against the limit ``limit`` named
    ``name``: 0 when it is allowed (and counted), else the seconds to wait (nothing counted)."""
    return _apply(name, limit, scope, count="if allowed")


def seconds_to_wait(name: str, limit: str, *scope: str) -> int:
    """0 if ``scope`` is within the limit now, else the seconds to wait; counts nothing."""
    return _apply(name, limit, scope, count="never")


def add(name: str, limit: str, *scope: str) -> None:
    """Count something that has already happened (a wrong password), allowed or not."""
    _apply(name, limit, scope, count="always")


def _apply(name: str, limit_text: str, scope: tuple[str, ...], count: str) -> int:
    if not current_app.config["RATELIMIT_ENABLED"]:
        return 0
    limit, now = parse_limit(limit_text), time.time()
    window = int(now // limit.period_s)
    # Hashed: a scope (an account name, an address) is any text, a key is short and plain.
    digest = hashlib.sha256("\x1f".join(scope).encode()).hexdigest()[:32]
    keys = [f"rl:{name}:{limit.period_s}:{digest}:{w}" for w in (window, window - 1)]
    covered = 1 - (now - window * limit.period_s) / limit.period_s  # of the previous window
    store = current_app.extensions["rate_limits"]
    expiry_s = 2 * limit.period_s + 1
    if count == "always":
        store.add(keys[0], expiry_s, now)
        return 0
    current, previous = store.counts(keys)
    if previous * covered + current + 1 <= limit.count:
        if count == "never":
            return 0
        allowed, current, previous = store.hit(keys, covered, limit.count, expiry_s, now)
        if allowed:
            return 0
    return _wait_s(limit, now - window * limit.period_s, current, previous)


def _wait_s(limit: Limit, into_window_s: float, current: int, previous: int) -> int:
    """Seconds until one more request fits under ``limit``, by the same estimate."""
    room = limit.count - 1
    if current <= room:  # once enough of the previous window has slid out
        ends = limit.period_s * (1 - (room - current) / previous) if previous else 0
    else:  # once the current window is the previous one and enough of it has slid out
        ends = limit.period_s * (2 - room / current)
    return max(1, math.ceil(ends - into_window_s))
