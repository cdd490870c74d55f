"""Rate-limit counters when no Redis is configured (webapp.rate_limits): one row per limit,
client and fixed window, deleted once its window can no longer count."""
from sqlalchemy import BigInteger, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from webapp.extensions import Model


class RateLimitCounter(Model):
    __tablename__ = "rate_limit_counter"

    key: Mapped[str] = mapped_column(String(120), primary_key=True)
    hits: Mapped[int] = mapped_column(Integer)
    # Unix seconds: a plain number compares the same on every backend.
    expires_at: Mapped[int] = mapped_column(BigInteger, index=True)
