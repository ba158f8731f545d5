"""The one embedding cache: vectors by (model, exact input text — task prefix included), computed once.

Every embedding chunkbench computes goes through :data:`EMBEDDINGS` (``embedding.roles.embed_texts`` and
``embed_query`` call it): chunks at indexing, Boundary-model sentences of the semantic strategies, questions,
the extractive answerer's context sentences, expected answers. Two layers:

- in memory, a bounded LRU per process (hot vectors never touch the disk);
- on disk, ``{data_dir}/cache/embeddings.sqlite3`` (:class:`DiskEmbeddings`): survives restarts, shared by every
  process on the machine (SQLite WAL, writes in ``BEGIN IMMEDIATE`` transactions, ``INSERT OR IGNORE``: two
  processes embedding the same text both succeed), bounded by ``CHUNKBENCH_EMBEDDING_CACHE_MAX_MB`` (least
  recently used rows go first), cleared by ``chunkbench cache clear`` or ``DELETE /admin/embedding-cache``.

So re-processing after a parameter change, contextual vs recursive chunks that share text, sweeps, the six rows
of ``eval chroma`` and repeated benchmarks embed only texts never seen before. A model id names one model: a
provider that serves different weights under the same id must get a new id (or the cache cleared).
The disk layer is an optimisation: when it cannot be read or written the embedding still happens (a warning).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from cachetools import LRUCache

from chunkbench.config import Settings
from chunkbench.embedding.providers import apply_task_prefixes, get_provider
from chunkbench.embedding.registry import EmbeddingModelSpec, Purpose
from chunkbench.errors import EmbeddingCacheError

logger = logging.getLogger(__name__)

# 384-dimension float32 rows: 100,000 entries are about 150 MB at most.
DEFAULT_MAX_ENTRIES = 100_000
# Bytes a row costs besides its vector (key, model id, columns, b-tree): for the size bound.
_ROW_OVERHEAD = 96
# When the file passes its bound, the least recently used rows are deleted down to this share of it.
_EVICT_TO = 0.9
_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    key BLOB PRIMARY KEY,       -- sha256(model id, NUL, input text)
    model_id TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    vector BLOB NOT NULL,       -- float32, little-endian, L2-normalised
    used_at INTEGER NOT NULL    -- unix seconds of the last write or disk hit
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS embeddings_used_at ON embeddings (used_at);
CREATE INDEX IF NOT EXISTS embeddings_model ON embeddings (model_id);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('bytes', 0);
"""


def cache_key(model_id: str, input_text: str) -> bytes:
    """The key of one embedding: the model and the exact text it reads."""
    return hashlib.sha256(f"{model_id}\x00{input_text}".encode()).digest()


class DiskEmbeddings:
    """The embedding cache file of one data directory (see the module docstring)."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=30, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get_many(self, keys: Sequence[bytes], dimension: int) -> dict[bytes, np.ndarray]:
        """The stored vectors of these keys (of this dimension); a hit counts as a use."""
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):  # SQLite's bound on host parameters
                batch = list(keys[start : start + 500])
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    f"SELECT key, vector FROM embeddings WHERE dimension = ? AND key IN ({marks})",
                    [dimension, *batch],
                ).fetchall()
                found.update((key, np.frombuffer(blob, dtype="<f4").copy()) for key, blob in rows)
            if found:
                hits = list(found)
                now = int(time.time())
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    for start in range(0, len(hits), 500):
                        batch = hits[start : start + 500]
                        marks = ",".join("?" * len(batch))
                        self._db.execute(f"UPDATE embeddings SET used_at = ? WHERE key IN ({marks})", [now, *batch])
                    self._db.execute("COMMIT")
                except sqlite3.Error:
                    self._db.execute("ROLLBACK")
                    raise
        return found

    def put_many(self, model_id: str, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        """Store new vectors (a key already there is left as it is), then keep the file within its bound."""
        if not items:
            return
        now = int(time.time())
        rows = [(key, model_id, int(v.shape[-1]), np.asarray(v, dtype="<f4").tobytes(), now) for key, v in items]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                before = self._db.total_changes
                self._db.executemany("INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?, ?, ?)", rows)
                added = self._db.total_changes - before
                size = added * (len(rows[0][3]) + _ROW_OVERHEAD)
                self._db.execute("UPDATE meta SET value = value + ? WHERE name = 'bytes'", (size,))
                total = self._db.execute("SELECT value FROM meta WHERE name = 'bytes'").fetchone()[0]
                if total > self.max_bytes:
                    self._evict()
                self._db.execute("COMMIT")
            except sqlite3.Error:
                self._db.execute("ROLLBACK")
                raise

    def _evict(self) -> None:
        """Delete the least recently used rows until the file is at ``_EVICT_TO`` of its bound (in a transaction)."""
        target = int(self.max_bytes * _EVICT_TO)
        while True:
            total = self._bytes()
            if total <= target:
                break
            average = total / max(1, self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            excess = max(1, int((total - target) / average) + 1)
            self._db.execute(
                "DELETE FROM embeddings WHERE key IN (SELECT key FROM embeddings ORDER BY used_at LIMIT ?)", (excess,)
            )
        self._db.execute("UPDATE meta SET value = ? WHERE name = 'bytes'", (self._bytes(),))

    def _bytes(self) -> int:
        row = self._db.execute(f"SELECT COALESCE(SUM(length(vector) + {_ROW_OVERHEAD}), 0) FROM embeddings").fetchone()
        return int(row[0])

    def clear(self, model_id: str | None = None) -> int:
        """Forget every stored vector (of one model when ``model_id`` is given); how many were removed."""
        try:
            return self._clear(model_id)
        except sqlite3.Error as exc:
            raise EmbeddingCacheError(
                f"The embedding cache {self.path} could not be cleared ({exc}). Check that the file is writable, "
                "or stop chunkbench and delete it: it only holds vectors that can be computed again.",
                path=str(self.path),
            ) from exc

    def _clear(self, model_id: str | None) -> int:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if model_id is None:
                    removed = self._db.execute("DELETE FROM embeddings").rowcount
                else:
                    removed = self._db.execute("DELETE FROM embeddings WHERE model_id = ?", (model_id,)).rowcount
                self._db.execute("UPDATE meta SET value = ? WHERE name = 'bytes'", (self._bytes(),))
                self._db.execute("COMMIT")
            except sqlite3.Error:
                self._db.execute("ROLLBACK")
                raise
        return int(removed)

    def stats(self) -> dict[str, Any]:
        """Entries by model, bytes used and the bound."""
        with self._lock:
            models = self._db.execute(
                "SELECT model_id, COUNT(*) FROM embeddings GROUP BY model_id ORDER BY model_id"
            ).fetchall()
            used = self._db.execute("SELECT value FROM meta WHERE name = 'bytes'").fetchone()[0]
        return {
            "path": str(self.path),
            "entries": sum(count for _, count in models),
            "bytes": int(used),
            "max_bytes": self.max_bytes,
            "models": {model: count for model, count in models},
        }


_DISKS: dict[Path, DiskEmbeddings] = {}
_DISKS_LOCK = threading.Lock()


def disk_cache(settings: Settings) -> DiskEmbeddings | None:
    """The data directory's cache file (opened once per process), or None when the disk cache is off."""
    if not settings.embedding_cache_enabled:
        return None
    path = settings.embedding_cache_path
    with _DISKS_LOCK:
        disk = _DISKS.get(path)
        if disk is None:
            disk = _DISKS[path] = DiskEmbeddings(path, settings.embedding_cache_max_mb * 2**20)
        return disk


def close_disk_caches() -> None:
    """Close every cache file this process opened (tests, shutdown)."""
    with _DISKS_LOCK:
        for disk in _DISKS.values():
            disk.close()
        _DISKS.clear()


class EmbeddingCache:
    """Least-recently-used embeddings in memory over the data directory's cache file; only texts seen nowhere
    reach the model, in one batch."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self._vectors: LRUCache[tuple[str, str], np.ndarray] = LRUCache(maxsize=max_entries)
        self._lock = threading.Lock()
        # What the last calls cost, for benchmarks and tests: texts the model embedded, and texts found on disk.
        self.embedded = 0
        self.from_disk = 0

    def __len__(self) -> int:
        return len(self._vectors)

    def clear(self, model_id: str | None = None) -> None:
        """Forget the vectors held in memory, of one model or all (the file: :meth:`DiskEmbeddings.clear`)."""
        with self._lock:
            if model_id is None:
                self._vectors.clear()
                return
            for key in [key for key in self._vectors if key[0] == model_id]:
                del self._vectors[key]

    def embed(
        self,
        spec: EmbeddingModelSpec,
        texts: Sequence[str],
        purpose: Purpose,
        settings: Settings,
        known: Mapping[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        """float32 ``(len(texts), dimension)`` in order. ``known``: vectors the caller has already (by text)."""
        if not texts:
            return np.zeros((0, spec.dimension), dtype=np.float32)
        inputs = dict(zip(texts, apply_task_prefixes(spec, texts, purpose), strict=True))
        found: dict[str, np.ndarray] = {text: known[text] for text in texts if known and text in known}
        with self._lock:
            for text in texts:
                if text not in found and (vector := self._vectors.get((spec.id, inputs[text]))) is not None:
                    found[text] = vector
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            found.update(self._from_disk_or_model(spec, missing, inputs, purpose, settings))
        return np.stack([found[text] for text in texts])

    def _from_disk_or_model(
        self,
        spec: EmbeddingModelSpec,
        missing: list[str],
        inputs: dict[str, str],
        purpose: Purpose,
        settings: Settings,
    ) -> dict[str, np.ndarray]:
        disk = disk_cache(settings)
        keys = {text: cache_key(spec.id, inputs[text]) for text in missing}
        stored: dict[bytes, np.ndarray] = {}
        if disk is not None:
            try:
                stored = disk.get_many(list(keys.values()), spec.dimension)
            except sqlite3.Error as exc:
                logger.warning("embedding cache %s unreadable, embedding anyway: %s", disk.path, exc)
        found = {text: stored[key] for text, key in keys.items() if key in stored}
        unseen = [text for text in missing if text not in found]
        if unseen:
            fresh = get_provider(spec, settings).embed(unseen, purpose)
            found.update(zip(unseen, fresh, strict=True))
            if disk is not None:
                try:
                    disk.put_many(spec.id, [(keys[text], vector) for text, vector in zip(unseen, fresh, strict=True)])
                except sqlite3.Error as exc:
                    logger.warning("embedding cache %s not written: %s", disk.path, exc)
        with self._lock:
            self.embedded += len(unseen)
            self.from_disk += len(missing) - len(unseen)
            for text in missing:
                self._vectors[(spec.id, inputs[text])] = found[text]
        return found


# The process's cache: every face and job of one process shares it.
EMBEDDINGS = EmbeddingCache()
