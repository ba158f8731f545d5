"""The semantic cache (docs/service.md): answers of a tenant's earlier questions, found again by the
exact (normalised) text or by a paraphrase whose embedding is close enough.

- Scope: an answer is only ever returned for the same tenant, session, top_k and serving configuration.
- Lookup: exact match on the normalised sanitised text first (no embedding needed), then the cosine of the
  question's vector against the scope's matrix of normalised vectors, a hit at ``similarity`` or above.
- The caller's vector is computed at most once and reused: ``get`` asks for it lazily, only when the scope has
  entries to compare, and ``set`` takes the vector the retrieval already used (the seed embedded it twice).
- Freshness: entries expire ``ttl_s`` after they were stored; an entry tagged with a corpus generation other
  than the tenant's current one (``storage/corpus_generation.py``) is dropped, with all its tenant's stale peers.
- Size: at most ``max_entries``; beyond, the least recently used entry goes (a hit refreshes its recency).

The answers live in a ``cachetools.TTLCache`` (the TTL and the LRU order); this module adds the scopes, the
vectors, the corpus generations and the eviction figures.

Thread-safe (one lock; the embedding happens outside it). Per process: several API processes each keep their
own cache, and the generation in the shared database keeps them all correct.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import cachetools
import numpy as np

from chunkbench.metrics import CACHE_EVICTIONS, CACHE_LOOKUPS

HitKind = Literal["exact", "semantic"]
EvictionReason = Literal["lru", "expired", "invalidated"]


@dataclass(frozen=True)
class CacheScope:
    """What must be equal for a cached answer to be reused."""

    tenant_id: str
    session_id: str | None
    top_k: int
    config_fingerprint: str


@dataclass(frozen=True)
class CacheHit:
    value: Any
    kind: HitKind
    similarity: float


@dataclass
class TenantCacheStats:
    """A tenant's figures since the process started (or its cache was cleared)."""

    entries: int = 0
    hits_exact: int = 0
    hits_semantic: int = 0
    misses: int = 0
    evictions: dict[str, int] = field(default_factory=lambda: {"lru": 0, "expired": 0, "invalidated": 0})

    @property
    def hit_rate(self) -> float:
        lookups = self.hits_exact + self.hits_semantic + self.misses
        return round((self.hits_exact + self.hits_semantic) / lookups, 4) if lookups else 0.0


CacheKey = tuple[CacheScope, str]  # (scope, normalised text)
_ABSENT = object()


class _Answers(cachetools.TTLCache):
    """Answers by key, for ``ttl`` seconds after they were stored, at most ``maxsize`` (least recently used out);
    every entry it drops by itself (expired, or evicted to make room) is reported to ``dropped``."""

    def __init__(
        self, maxsize: int, ttl: float, timer: Callable[[], float], dropped: Callable[[CacheKey, EvictionReason], None]
    ) -> None:
        super().__init__(maxsize, ttl, timer=timer)
        self._dropped = dropped

    def expire(self, time: float | None = None) -> list[tuple[CacheKey, Any]]:
        expired = super().expire(time)
        for key, _value in expired:
            self._dropped(key, "expired")
        return expired

    def popitem(self) -> tuple[CacheKey, Any]:
        key, value = super().popitem()  # after expiring what is due: the least recently used entry
        self._dropped(key, "lru")
        return key, value


@dataclass
class _Bucket:
    """One scope's vectors by key and, built on demand, their matrix (row i = the i-th key)."""

    vectors: dict[CacheKey, np.ndarray] = field(default_factory=dict)
    matrix: np.ndarray | None = None


def normalise(text: str) -> str:
    """The exact-match key of a question: case-folded, whitespace collapsed."""
    return " ".join(text.casefold().split())


class SemanticCache:
    """See the module docstring; ``clock`` is injectable so tests can move time (the TTLCache's timer)."""

    def __init__(
        self,
        *,
        similarity: float = 0.98,
        ttl_s: float = 3600.0,
        max_entries: int = 1000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < similarity <= 1:
            raise ValueError("similarity must be in (0, 1]")
        if ttl_s <= 0 or max_entries < 1:
            raise ValueError("ttl_s must be positive and max_entries at least 1")
        self.similarity = similarity
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._lock = threading.RLock()
        self._entries = _Answers(max_entries, ttl_s, clock, self._dropped)
        self._buckets: dict[CacheScope, _Bucket] = {}
        # The newest generation seen per tenant; every entry of a tenant was computed from it (``set`` stores
        # nothing else, and a new one drops the tenant's entries).
        self._generations: dict[str, str] = {}
        self._stats: dict[str, TenantCacheStats] = {}

    # ------------------------------------------------------------------------------------------------ lookups

    def get(
        self, scope: CacheScope, text: str, *, generation: str, vector: Callable[[], np.ndarray]
    ) -> CacheHit | None:
        """The cached answer for ``text`` in ``scope``, or None; ``vector()`` is called only for a semantic lookup."""
        key = (scope, normalise(text))
        with self._lock:
            self._purge(scope.tenant_id, generation)
            value = self._entries.get(key, _ABSENT)  # a hit becomes the most recently used entry
            if value is not _ABSENT:
                return self._hit(scope.tenant_id, value, "exact", 1.0)
            if not self._buckets.get(scope):
                self._miss(scope.tenant_id)
                return None
        query = _unit(vector())  # outside the lock: embedding takes milliseconds
        with self._lock:
            self._purge(scope.tenant_id, generation)
            bucket = self._buckets.get(scope)
            if not bucket:
                self._miss(scope.tenant_id)
                return None
            if bucket.matrix is None:
                bucket.matrix = np.stack(list(bucket.vectors.values()))
            scores = bucket.matrix @ query
            best = int(np.argmax(scores))
            if float(scores[best]) >= self.similarity:
                value = self._entries.get(list(bucket.vectors)[best], _ABSENT)
                if value is not _ABSENT:
                    return self._hit(scope.tenant_id, value, "semantic", round(float(scores[best]), 4))
            self._miss(scope.tenant_id)
            return None

    def set(self, scope: CacheScope, text: str, vector: np.ndarray, value: Any, *, generation: str) -> None:
        """Store ``value`` as the answer to ``text`` in ``scope``, computed from the corpus ``generation``."""
        key = (scope, normalise(text))
        with self._lock:
            known = self._generations.setdefault(scope.tenant_id, generation)
            if known != generation:
                # Answered from a generation this process has already seen replaced (or one it cannot order
                # against a newer one): not stored; the next lookup learns the current generation anyway.
                return
            self._purge(scope.tenant_id, generation)
            if key in self._entries:
                self._remove(key)
            self._entries[key] = value  # evicts the least recently used entry when full
            bucket = self._buckets.setdefault(scope, _Bucket())
            bucket.vectors[key] = _unit(vector)
            bucket.matrix = None

    # ---------------------------------------------------------------------------------------------- management

    def stats(self, tenant_id: str) -> TenantCacheStats:
        """A copy of the tenant's figures, with its current number of entries."""
        with self._lock:
            self._entries.expire()
            stats = self._stats.get(tenant_id, TenantCacheStats())
            entries = sum(1 for scope, _text in self._entries if scope.tenant_id == tenant_id)
            return TenantCacheStats(entries, stats.hits_exact, stats.hits_semantic, stats.misses, dict(stats.evictions))

    def clear(self, tenant_id: str) -> int:
        """Forget the tenant's entries and figures; the number of entries removed."""
        with self._lock:
            self._entries.expire()
            keys = [key for key in self._entries if key[0].tenant_id == tenant_id]
            for key in keys:
                self._remove(key)
            self._stats.pop(tenant_id, None)
            return len(keys)

    def __len__(self) -> int:
        with self._lock:
            self._entries.expire()
            return len(self._entries)

    # --------------------------------------------------------------------------------------------------- inner

    def _purge(self, tenant_id: str, generation: str) -> None:
        """Drop expired entries, and all the tenant's entries when ``generation`` is new (they are of the old)."""
        self._entries.expire()
        if self._generations.get(tenant_id) != generation:
            self._generations[tenant_id] = generation
            for key in [key for key in self._entries if key[0].tenant_id == tenant_id]:
                self._remove(key)
                self._count_eviction(key, "invalidated")

    def _dropped(self, key: CacheKey, reason: EvictionReason) -> None:
        """The TTLCache dropped ``key`` by itself: forget its vector and count the eviction."""
        self._forget_vector(key)
        self._count_eviction(key, reason)

    def _count_eviction(self, key: CacheKey, reason: EvictionReason) -> None:
        self._tenant(key[0].tenant_id).evictions[reason] += 1
        CACHE_EVICTIONS.labels(reason=reason).inc()

    def _remove(self, key: CacheKey) -> None:
        with contextlib.suppress(KeyError):  # expired since the last purge: TTLCache removes it, then raises
            del self._entries[key]
        self._forget_vector(key)

    def _forget_vector(self, key: CacheKey) -> None:
        bucket = self._buckets[key[0]]
        del bucket.vectors[key]
        bucket.matrix = None
        if not bucket.vectors:
            del self._buckets[key[0]]

    def _hit(self, tenant_id: str, value: Any, kind: HitKind, similarity: float) -> CacheHit:
        stats = self._tenant(tenant_id)
        if kind == "exact":
            stats.hits_exact += 1
        else:
            stats.hits_semantic += 1
        CACHE_LOOKUPS.labels(result=f"hit_{kind}").inc()
        return CacheHit(value, kind, similarity)

    def _miss(self, tenant_id: str) -> None:
        self._tenant(tenant_id).misses += 1
        CACHE_LOOKUPS.labels(result="miss").inc()
        return None

    def _tenant(self, tenant_id: str) -> TenantCacheStats:
        return self._stats.setdefault(tenant_id, TenantCacheStats())


def _unit(vector: np.ndarray) -> np.ndarray:
    """``vector`` as float32 of length 1 (the providers normalise already; a cosine must not rely on it)."""
    vector = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
