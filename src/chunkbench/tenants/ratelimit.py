"""Per-tenant token buckets over the whole API (docs/service.md, rate limits).

In process: one bucket per tenant per API process. With N replicas behind a load balancer a tenant gets up to
N × its limit in total; a shared limit would need a shared store (Redis, PostgreSQL), which the single-machine
default does not have.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from chunkbench.errors import RateLimitedError


@dataclass
class TokenBucket:
    """``capacity`` tokens at most, refilled at ``rate_per_s``; a request takes one."""

    rate_per_s: float
    capacity: float
    tokens: float
    updated: float

    def take(self, now: float) -> float:
        """Take a token: 0 when there was one, else the seconds until there will be (nothing is taken)."""
        self.tokens = min(self.capacity, self.tokens + max(0.0, now - self.updated) * self.rate_per_s)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate_per_s


class RateLimiter:
    """Token buckets by tenant; a tenant's own limit (tenants table) overrides the defaults (Settings)."""

    def __init__(self, per_minute: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def check(self, tenant_id: str, *, per_minute: float | None = None, burst: int | None = None) -> None:
        """Spend one request of the tenant's budget, or raise :class:`RateLimitedError` with ``Retry-After``."""
        per_minute = self.per_minute if per_minute is None else per_minute
        capacity = float(self.burst if burst is None else burst)
        if per_minute <= 0:  # 0 = unlimited
            return
        rate = per_minute / 60
        with self._lock:
            now = self._clock()
            bucket = self._buckets.get(tenant_id)
            if bucket is None:
                bucket = self._buckets[tenant_id] = TokenBucket(rate, capacity, capacity, now)
            elif bucket.rate_per_s != rate or bucket.capacity != capacity:
                # The tenant's limit changed: keep what it had saved, within the new capacity.
                bucket.tokens = min(bucket.tokens + max(0.0, now - bucket.updated) * bucket.rate_per_s, capacity)
                bucket.updated, bucket.rate_per_s, bucket.capacity = now, rate, capacity
            wait = bucket.take(now)
        if wait > 0:
            retry_after = max(1, math.ceil(wait))
            raise RateLimitedError(
                f"Tenant '{tenant_id}' is over its limit of {per_minute:g} requests per minute "
                f"(bursts of {capacity:g}); retry in {retry_after} s.",
                retry_after_s=retry_after,
                limit_per_minute=per_minute,
                burst=int(capacity),
            )
