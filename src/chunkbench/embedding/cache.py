"""The one embedding cache: vectors by (model, purpose, exact text), bounded, shared by threads.

Indexing (chunks), corpus evaluation (chunks and questions) and the extractive answerer (context sentences)
embed through it, so a text is embedded once per process and model: re-processing a document, six
configurations of one evaluation or a benchmark's questions over the same chunks pay only for new text.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

import numpy as np
from cachetools import LRUCache

from chunkbench.config import Settings
from chunkbench.embedding.registry import EmbeddingModelSpec, Purpose
from chunkbench.embedding.service import embed_texts

# 384-dimension float32 rows: 100,000 entries are about 150 MB at most.
DEFAULT_MAX_ENTRIES = 100_000


class EmbeddingCache:
    """Least-recently-used embeddings; only texts not seen before reach the model, in one batch."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self._vectors: LRUCache[tuple[str, str, str], np.ndarray] = LRUCache(maxsize=max_entries)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

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
        found: dict[str, np.ndarray] = dict(known or {})
        with self._lock:
            for text in texts:
                if text not in found and (vector := self._vectors.get((spec.id, purpose, text))) is not None:
                    found[text] = vector
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            fresh = embed_texts(spec, missing, purpose, settings)
            found.update(zip(missing, fresh, strict=True))
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    self._vectors[(spec.id, purpose, text)] = vector
        return np.stack([found[text] for text in texts])


# The process's cache: every face and job of one process shares it.
EMBEDDINGS = EmbeddingCache()
