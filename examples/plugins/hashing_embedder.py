"""Example plugin: "hashing-256", a dependency-free embedder (signed feature hashing of lowercase words).

No model, no network: useful as a lexical baseline Corpus model (``corpus_model_id="hashing-256"``).
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from chunkbench.plugins import EmbeddingModelSpec, EmbeddingProvider, register_embedder

DIMENSION = 256
_WORD = re.compile(r"\w+")


def word_bucket(word: str) -> tuple[int, float]:
    """The dimension a word lands in and its sign (from MD5, so stable across processes)."""
    digest = hashlib.md5(word.encode()).digest()
    return int.from_bytes(digest[:4], "little") % DIMENSION, 1.0 if digest[4] & 1 else -1.0


class HashingProvider(EmbeddingProvider):
    """Counts of hashed words; chunkbench normalises the rows."""

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                bucket, sign = word_bucket(word)
                vectors[row, bucket] += sign
        return vectors


register_embedder(
    EmbeddingModelSpec(
        id="hashing-256",
        provider="plugin",
        model_name="hashing-256",
        dimension=DIMENSION,
        display_name="Feature hashing, 256 dims (plugin)",
        default_semantic_threshold=0.2,
        batch_size=256,
    ),
    lambda spec, settings: HashingProvider(spec),
)
