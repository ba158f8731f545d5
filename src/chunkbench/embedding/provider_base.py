"""What every embedding provider is: the interface, task prefixes, and the checks on what a model returns."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

import numpy as np

from chunkbench.embedding.registry import EmbeddingModelSpec, Purpose
from chunkbench.errors import EmbeddingError, InvalidRequestError
from chunkbench.text.tokens import get_tokenizer

Loaded = TypeVar("Loaded")


class LoadedOnce(Generic[Loaded]):
    """What a process loads once per key (a local model, an ONNX session, the e5 engine): seconds and hundreds of MB
    each, so the first caller loads and concurrent first callers wait for it rather than load it twice."""

    def __init__(self) -> None:
        self._items: dict[Hashable, Loaded] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, load: Callable[[], Loaded]) -> Loaded:
        item = self._items.get(key)
        if item is None:
            with self._lock:
                item = self._items.get(key)
                if item is None:
                    item = self._items[key] = load()
        return item

    def clear(self) -> None:
        """Forget every instance (tests: the next call loads again, as a new process would)."""
        with self._lock:
            self._items.clear()


def apply_task_prefixes(spec: EmbeddingModelSpec, texts: Sequence[str], purpose: Purpose) -> list[str]:
    """The texts with the model's document or query prefix in front (unchanged for models without one)."""
    if purpose not in ("document", "query"):
        raise InvalidRequestError(f"Embedding purpose must be 'document' or 'query', not '{purpose}'.")
    if spec.task_prefixes is None:
        return list(texts)
    prefix = spec.task_prefixes.for_purpose(purpose)
    return [prefix + text for text in texts]


def check_shape(spec: EmbeddingModelSpec, vectors: np.ndarray, count: int, source: str) -> None:
    if vectors.ndim != 2 or vectors.shape[0] != count or vectors.shape[1] != spec.dimension:
        got = vectors.shape[1] if vectors.ndim == 2 else vectors.shape
        raise EmbeddingError(
            f"{source} returned {got}-dimensional vectors for '{spec.id}', which has dimension "
            f"{spec.dimension}: the model served is not the one registered under this id.",
            model_id=spec.id,
        )


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """Scale every row to unit length in place (all-zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.maximum(norms, np.finfo(np.float32).tiny, out=norms)
    vectors /= norms
    return vectors


class EmbeddingProvider(ABC):
    """Turns texts into normalised vectors with one model."""

    def __init__(self, spec: EmbeddingModelSpec) -> None:
        self.spec = spec

    def embed(self, texts: Sequence[str], purpose: Purpose = "document") -> np.ndarray:
        """float32 array of shape ``(len(texts), dimension)``, rows L2-normalised, task prefixes applied."""
        prefixed = apply_task_prefixes(self.spec, texts, purpose)
        if not prefixed:
            return np.zeros((0, self.spec.dimension), dtype=np.float32)
        if self.spec.provider == "plugin":
            # A plugin's vectors are not trusted: the right shape, float32, unit rows, like every built-in.
            vectors = np.array(self._embed(prefixed), dtype=np.float32)
            check_shape(self.spec, vectors, len(prefixed), f"The plugin embedder {type(self).__name__}")
            return normalise_rows(vectors)
        return self._embed(prefixed)

    @abstractmethod
    def _embed(self, texts: list[str]) -> np.ndarray:
        """Embed non-empty, already prefixed texts."""

    def input_tokens(self, texts: Sequence[str], purpose: Purpose = "document") -> tuple[list[int], int, str] | None:
        """How many of the model's own tokens each text is (task prefix and special tokens included), the model's
        window, and what counted them; None when this provider cannot tell."""
        if self.spec.max_input_tokens is None:
            return None
        tokenizer = get_tokenizer()
        counts = tokenizer.count_many(apply_task_prefixes(self.spec, texts, purpose))
        exact = self.spec.provider == "openai"  # OpenAI's embedding models read cl100k tokens
        return list(counts), self.spec.max_input_tokens, "cl100k" if exact else "cl100k (approximate)"
