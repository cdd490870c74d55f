"""Where rate-limit counters live (webapp.rate_limits): Redis, or the app's database.

Both count atomically: a hit reads the two windows' counts and increments the current one only
if the estimate stays within the limit, as one step (a Lua script in Redis; in the database, a
write transaction that is rolled back when the increment went over).
"""
from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from webapp.database import write_transaction
from webapp.extensions import db
from webapp.models.rate_limit import RateLimitCounter

_COUNTER = RateLimitCounter.__table__

# KEYS: current window, previous window; ARGV: share of the previous window still covered,
# the limit's count, the current window's expiry in seconds.
_HIT = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
if previous * tonumber(ARGV[1]) + current + 1 > tonumber(ARGV[2]) then
  return {0, current, previous}
end
current = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return {1, current, previous}
"""


class RedisCounters:
    def __init__(self, url: str):
        import redis  # only where Redis is configured

        # Short timeouts: an unreachable store answers 503 at once rather than hold a worker.
        self.client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._hit = self.client.register_script(_HIT)
        self.errors = redis.RedisError

    def counts(self, keys: list[str]) -> tuple[int, int]:
        current, previous = self.client.mget(keys)
        return int(current or 0), int(previous or 0)

    def hit(self, keys, covered: float, count: int, expiry_s: int, now: float):
        allowed, current, previous = self._hit(keys=keys, args=[covered, count, expiry_s])
        return bool(allowed), int(current), int(previous)

    def add(self, key: str, expiry_s: int, now: float) -> None:
        with self.client.pipeline() as pipe:
            pipe.incr(key)
            pipe.expire(key, expiry_s)
            pipe.execute()


class _OverLimit(Exception):
    """Rolls a database hit back (raised inside its write transaction)."""


class DatabaseCounters:
    def counts(self, keys: list[str]) -> tuple[int, int]:
        with db.engine.connect() as connection:
            rows = dict(connection.execute(
                select(_COUNTER.c.key, _COUNTER.c.hits).where(_COUNTER.c.key.in_(keys))).all())
        return rows.get(keys[0], 0), rows.get(keys[1], 0)

    def hit(self, keys, covered: float, count: int, expiry_s: int, now: float):
        try:
            with db.engine.connect() as connection, write_transaction(connection):
                current = _increment(connection, keys[0], expiry_s, now)
                previous = connection.scalar(
                    select(_COUNTER.c.hits).where(_COUNTER.c.key == keys[1])) or 0
                if previous * covered + current > count:
                    raise _OverLimit(current - 1, previous)
        except _OverLimit as over:
            return (False, *over.args)
        return True, current, previous

    def add(self, key: str, expiry_s: int, now: float) -> None:
        with db.engine.connect() as connection, write_transaction(connection):
            _increment(connection, key, expiry_s, now)


def _increment(connection, key: str, expiry_s: int, now: float) -> int:
    """Add one to ``key``'s count (a new row for a new window) and return the count.  A new
    row also deletes the rows whose windows have passed, so the table holds live windows only."""
    insert = sqlite_insert if connection.dialect.name == "sqlite" else postgresql_insert
    statement = insert(_COUNTER).values(key=key, hits=1, expires_at=int(now) + expiry_s)
    hits = connection.scalar(statement.on_conflict_do_update(
        index_elements=[_COUNTER.c.key], set_={"hits": _COUNTER.c.hits + 1}
    ).returning(_COUNTER.c.hits))
    if hits == 1:
        connection.execute(delete(_COUNTER).where(_COUNTER.c.expires_at < int(now)))
    return hits
