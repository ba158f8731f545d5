"""What :class:`~chunkbench.storage.vectors.VectorStore` builds on, on its side of the engine seam: which engine
opens, what is handed to it and how its answers are read back.

The store keeps the operations callers use (collections, writes, reads, search), their checks and their order;
this module holds the pieces under them: the engine ``settings`` name (migrating old local-mode data), a
document's chunks and vectors as engine points, a search's query vectors with the checks its mode needs, and
rankings cut only where equal scores are settled, hybrid fused here by RRF, so every engine answers in the same
order. Separate so that vectors.py reads as the one seam it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from chunkbench.config import Settings
from chunkbench.errors import CollectionMissingError, QueryError
from chunkbench.storage.engine import EnginePoint, Progress, VectorEngine, VectorQuery
from chunkbench.storage.fusion import Row, cut_is_settled, ranked, reciprocal_rank_fusion
from chunkbench.storage.points import (
    DENSE_VECTOR,
    SPARSE_VECTOR,
    QueryMode,
    SparseLike,
    StoredChunk,
    chunk_payload,
    point_id,
)

logger = logging.getLogger(__name__)


def open_engine(settings: Settings, progress: Progress | None = None) -> VectorEngine:
    """The engine ``settings`` name: a Qdrant server's (URL set), else Qdrant Edge, migrating old local-mode data."""
    from chunkbench.storage.migration import legacy_pending, migrate_legacy

    if settings.qdrant_url:
        from chunkbench.storage.qdrant_server import ServerEngine

        if legacy_pending(settings):
            logger.warning(
                "%s holds embedded Qdrant data of an older chunkbench, not migrated: CHUNKBENCH_QDRANT_URL is set, "
                "so the Qdrant server is used instead. Unset it once to migrate that folder to Qdrant Edge.",
                settings.qdrant_legacy_path,
            )
        return ServerEngine(settings)
    from chunkbench.storage.edge import EdgeEngine

    engine = EdgeEngine(settings)
    try:
        engine.migration = migrate_legacy(engine, settings, progress)
    except BaseException:
        engine.close()
        raise
    return engine


def engine_points(
    chunks: Sequence[StoredChunk],
    dense: np.ndarray,
    sparse: Sequence[SparseLike],
    *,
    tenant_id: str,
    model_id: str,
) -> list[EnginePoint]:
    """One point per chunk: ``dense`` / ``sparse`` rows belong to the non-parent chunks, in order; parents get no
    vectors."""
    matrix = np.asarray(dense, dtype=np.float32)
    points: list[EnginePoint] = []
    row = 0
    for chunk in chunks:
        point = EnginePoint(
            id=point_id(chunk.chunk_id), payload=chunk_payload(chunk, tenant_id=tenant_id, model_id=model_id)
        )
        if not chunk.is_parent:
            point.dense[DENSE_VECTOR] = matrix[row].tolist()
            terms = sparse[row]
            # A chunk of only stopwords has no terms; it is still found by the dense vector.
            if len(terms.indices):
                point.sparse[SPARSE_VECTOR] = (list(terms.indices), list(terms.values))
            row += 1
        points.append(point)
    return points


def dense_query(dense: np.ndarray) -> list[float]:
    """A query embedding as the engine takes it: one float32 row, as a list."""
    return np.asarray(dense, dtype=np.float32).reshape(-1).tolist()


def query_vectors(
    mode: QueryMode, dense: np.ndarray | None, sparse: SparseLike | None
) -> tuple[list[float] | None, tuple[list[int], list[float]] | None]:
    """The dense and sparse query vectors of a ``mode`` search; a mode without the vector it needs is a
    :class:`QueryError`. A sparse query without terms (only stopwords) comes back as ``None``."""
    dense_vector = None if dense is None else dense_query(dense)
    sparse_vector = None
    if sparse is not None and len(sparse.indices):
        sparse_vector = (list(sparse.indices), list(sparse.values))
    if mode is not QueryMode.SPARSE and dense_vector is None:
        raise QueryError(f"A {mode.value} search needs a query embedding; none was given.")
    if mode is QueryMode.SPARSE and sparse is None:
        raise QueryError("A sparse search needs a sparse query vector; none was given.")
    return dense_vector, sparse_vector


def no_collection(name: str, strategy: str, model_id: str) -> CollectionMissingError:
    return CollectionMissingError(
        f"Collection '{name}' does not exist: nothing was processed with strategy '{strategy}' and "
        f"embedding model '{model_id}'.",
        collection=name,
        strategy=strategy,
        model_id=model_id,
    )


def ranked_search(
    search: Callable[[VectorQuery], list[Row]], base: VectorQuery, top_k: int, prefetch_limit: int | None
) -> list[Row]:
    """The best ``top_k`` of ``base`` through ``search`` (one engine query); ``FUSION`` fuses the dense and sparse
    rankings (``prefetch_limit`` candidates each, default ``2 * top_k``) with RRF here, not in the engine."""
    if base.mode is not QueryMode.FUSION:
        return _ranked(search, base, top_k)
    # Each vector's candidates in the store's order, then RRF here: the same fusion on every engine.
    candidates = max(prefetch_limit or 2 * top_k, top_k)
    arms = [_ranked(search, replace(base, mode=QueryMode.DENSE), candidates)]
    if base.sparse is not None:
        arms.append(_ranked(search, replace(base, mode=QueryMode.SPARSE), candidates))
    return reciprocal_rank_fusion(arms, top_k)


def _ranked(search: Callable[[VectorQuery], list[Row]], query: VectorQuery, depth: int) -> list[Row]:
    """The best ``depth`` points of a dense or sparse ``query`` by (score, :func:`~chunkbench.storage.fusion.
    tie_key`): asked one deeper than needed, and deeper again while equal scores run past what came back, so
    which of several equal-scored points make the cut never depends on the engine's order."""
    fetched = depth + 1
    while True:
        rows = search(replace(query, limit=fetched))
        if cut_is_settled(rows, depth, fetched):
            return ranked(rows)[:depth]
        fetched *= 2
