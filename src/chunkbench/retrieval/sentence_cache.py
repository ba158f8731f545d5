"""Context-sentence embeddings kept across queries, for the extractive answerer."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from chunkbench.config import Settings
from chunkbench.embedding import service as embedding
from chunkbench.embedding.registry import EmbeddingModelSpec


class SentenceCache:
    """Bounded LRU of context-sentence embeddings per Corpus model.

    The extractive answerer embeds every sentence of the retrieved context; the same chunks come back
    across questions (a benchmark asks dozens of one document), so each sentence is embedded once.
    """

    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = capacity
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(
        self,
        corpus: EmbeddingModelSpec,
        texts: list[str],
        settings: Settings,
        known: dict[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, corpus.dimension), dtype=np.float32)
        found: dict[str, np.ndarray] = dict(known or {})
        with self._lock:
            for text in texts:
                if text in found:
                    continue
                vector = self._vectors.get((corpus.id, text))
                if vector is not None:
                    self._vectors.move_to_end((corpus.id, text))
                    found[text] = vector
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            fresh = embedding.embed_texts(corpus, missing, "document", settings)
            found.update(zip(missing, fresh, strict=True))
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    self._vectors[(corpus.id, text)] = vector
                while len(self._vectors) > self.capacity:
                    self._vectors.popitem(last=False)
        return np.stack([found[text] for text in texts])


# One per process: every query of every face shares it.
SENTENCE_CACHE = SentenceCache()
