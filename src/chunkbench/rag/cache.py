"""The semantic cache (seed 003 §3, its caveats fixed): answers of a tenant's earlier questions, found again by the
exact (normalised) text or by a paraphrase whose embedding is close enough.

- Scope: an answer is only ever returned for the same tenant, session, top_k and serving configuration.
- Lookup: exact match on the normalised sanitised text first (no embedding needed), then the cosine of the
  question's vector against the scope's matrix of normalised vectors, a hit at ``similarity`` or above.
- The caller's vector is computed at most once and reused: ``get`` asks for it lazily, only when the scope has
  entries to compare, and ``set`` takes the vector the retrieval already used (the seed embedded it twice).
- Freshness: entries expire ``ttl_s`` after they were stored; an entry tagged with a corpus generation other
  than the tenant's current one (``storage/corpus_generation.py``) is dropped, with all its tenant's stale peers.
- Size: at most ``max_entries``; beyond, the least recently used entry goes (a hit refreshes its recency).

Thread-safe (one lock; the embedding happens outside it). Per process: several API processes each keep their
own cache, and the generation in the shared database keeps them all correct.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from chunkbench.observability.metrics import CACHE_EVICTIONS, CACHE_LOOKUPS

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


@dataclass
class _Entry:
    scope: CacheScope
    text: str
    vector: np.ndarray
    value: Any
    generation: str
    stored_at: float


@dataclass
class _Bucket:
    """One scope's entries and, built on demand, the matrix of their vectors (row i = keys[i])."""

    keys: list[tuple[CacheScope, str]] = field(default_factory=list)
    matrix: np.ndarray | None = None


def normalise(text: str) -> str:
    """The exact-match key of a question: case-folded, whitespace collapsed."""
    return " ".join(text.casefold().split())


class SemanticCache:
    """See the module docstring; ``clock`` is injectable so tests can move time."""

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
        self._clock = clock
        self._lock = threading.RLock()
        self._entries: OrderedDict[tuple[CacheScope, str], _Entry] = OrderedDict()  # least recently used first
        self._buckets: dict[CacheScope, _Bucket] = {}
        self._generations: dict[str, str] = {}  # the newest generation seen per tenant
        self._stats: dict[str, TenantCacheStats] = {}

    # ------------------------------------------------------------------------------------------------ lookups

    def get(
        self, scope: CacheScope, text: str, *, generation: str, vector: Callable[[], np.ndarray]
    ) -> CacheHit | None:
        """The cached answer for ``text`` in ``scope``, or None; ``vector()`` is called only for a semantic lookup."""
        key = (scope, normalise(text))
        with self._lock:
            self._purge(scope.tenant_id, generation)
            entry = self._entries.get(key)
            if entry is not None:
                return self._hit(entry, "exact", 1.0)
            if not self._buckets.get(scope):
                return self._miss(scope.tenant_id)
        query = _unit(vector())  # outside the lock: embedding takes milliseconds
        with self._lock:
            self._purge(scope.tenant_id, generation)
            bucket = self._buckets.get(scope)
            if not bucket:
                return self._miss(scope.tenant_id)
            if bucket.matrix is None:
                bucket.matrix = np.stack([self._entries[k].vector for k in bucket.keys])
            scores = bucket.matrix @ query
            best = int(np.argmax(scores))
            if float(scores[best]) >= self.similarity:
                return self._hit(self._entries[bucket.keys[best]], "semantic", round(float(scores[best]), 4))
            return self._miss(scope.tenant_id)

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
            self._entries[key] = _Entry(scope, key[1], _unit(vector), value, generation, self._clock())
            bucket = self._buckets.setdefault(scope, _Bucket())
            bucket.keys.append(key)
            bucket.matrix = None
            while len(self._entries) > self.max_entries:
                oldest = next(iter(self._entries))
                self._evict(oldest, "lru")

    # ---------------------------------------------------------------------------------------------- management

    def stats(self, tenant_id: str) -> TenantCacheStats:
        """A copy of the tenant's figures, with its current number of entries."""
        with self._lock:
            self._expire()
            stats = self._stats.get(tenant_id, TenantCacheStats())
            entries = sum(1 for scope, _text in self._entries if scope.tenant_id == tenant_id)
            return TenantCacheStats(entries, stats.hits_exact, stats.hits_semantic, stats.misses, dict(stats.evictions))

    def clear(self, tenant_id: str) -> int:
        """Forget the tenant's entries and figures; the number of entries removed."""
        with self._lock:
            keys = [key for key in self._entries if key[0].tenant_id == tenant_id]
            for key in keys:
                self._remove(key)
            self._stats.pop(tenant_id, None)
            return len(keys)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    # --------------------------------------------------------------------------------------------------- inner

    def _purge(self, tenant_id: str, generation: str) -> None:
        """Drop expired entries, and the tenant's entries of another generation when ``generation`` is new."""
        self._expire()
        if self._generations.get(tenant_id) != generation:
            self._generations[tenant_id] = generation
            stale = [k for k, e in self._entries.items() if k[0].tenant_id == tenant_id and e.generation != generation]
            for key in stale:
                self._evict(key, "invalidated")

    def _expire(self) -> None:
        deadline = self._clock() - self.ttl_s
        expired = [key for key, entry in self._entries.items() if entry.stored_at <= deadline]
        for key in expired:
            self._evict(key, "expired")

    def _evict(self, key: tuple[CacheScope, str], reason: EvictionReason) -> None:
        self._remove(key)
        self._tenant(key[0].tenant_id).evictions[reason] += 1
        CACHE_EVICTIONS.labels(reason=reason).inc()

    def _remove(self, key: tuple[CacheScope, str]) -> None:
        del self._entries[key]
        bucket = self._buckets[key[0]]
        bucket.keys.remove(key)
        bucket.matrix = None
        if not bucket.keys:
            del self._buckets[key[0]]

    def _hit(self, entry: _Entry, kind: HitKind, similarity: float) -> CacheHit:
        self._entries.move_to_end((entry.scope, entry.text))
        stats = self._tenant(entry.scope.tenant_id)
        if kind == "exact":
            stats.hits_exact += 1
        else:
            stats.hits_semantic += 1
        CACHE_LOOKUPS.labels(result=f"hit_{kind}").inc()
        return CacheHit(entry.value, kind, similarity)

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
