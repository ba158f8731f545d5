"""The vector store (docs/embedding.md): one collection per (strategy, Corpus model), points per chunk.

Each collection holds a named dense vector ``"dense"`` (cosine) and a sparse vector ``"bm25"`` (Qdrant's
IDF modifier over :mod:`chunkbench.embedding.sparse` term weights, IDF counted over the tenant's own points),
so dense, sparse and hybrid (RRF) search all run on the same points. Parent chunks of ``semantic_parent_child``
are stored without vectors: retrievable by id, never returned by a search. Every read and delete filters by
tenant (and document).

:class:`VectorStore` is the one seam callers use; an engine (:mod:`chunkbench.storage.engine`) runs it: Qdrant
Edge in process by default (:mod:`chunkbench.storage.edge`, on disk under ``{data_dir}/qdrant-edge``, one
process per folder, hence one store per process through :func:`get_vector_store`), or a Qdrant server when
``CHUNKBENCH_QDRANT_URL`` is set (:mod:`chunkbench.storage.qdrant_server`). Searches are exact unless the
caller passes ``exact=False`` (the serving faces), which uses the HNSW graph where one is built. What the store
builds on (which engine opens, engine points, query vectors, rankings cut where equal scores are settled) is
:mod:`chunkbench.storage.engine_io`.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from chunkbench.config import Settings
from chunkbench.errors import NotFoundError, QueryError, VectorStoreError
from chunkbench.models import StrategyName
from chunkbench.storage.engine import Progress, VectorEngine, VectorQuery, missing_collection
from chunkbench.storage.engine_io import (
    dense_query,
    engine_points,
    no_collection,
    open_engine,
    query_vectors,
    ranked_search,
)
from chunkbench.storage.points import (
    DENSE_VECTOR,
    SPARSE_VECTOR,
    PointFilter,
    QueryMode,
    ReplaceResult,
    SparseLike,
    StoredChunk,
    chunk_order,
    collection_name,
    document_filter,
    parse_collection_name,
    validate_document_points,
)

logger = logging.getLogger(__name__)
UPSERT_BATCH = 256


class VectorStore:
    """Vector access for chunkbench: collections per (strategy, model), points per chunk, tenant-filtered.

    ``engine`` replaces the one ``settings`` name (tests run the server engine over qdrant-client's local mode);
    ``progress`` reports a migration of old local-mode data, if one runs while opening.
    """

    def __init__(
        self, settings: Settings, engine: VectorEngine | None = None, *, progress: Progress | None = None
    ) -> None:
        self.settings = settings
        self.engine = engine if engine is not None else open_engine(settings, progress)
        self.is_local = self.engine.is_local
        self.location = self.engine.location
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Release the engine (and, embedded, the folder lock)."""
        if not self._closed:
            self._closed = True
            self.engine.close()

    def _use(self, operation: str, collection: str | None = None) -> VectorEngine:
        if self._closed:
            where = f" on collection '{collection}'" if collection else ""
            raise VectorStoreError(f"Cannot {operation}{where}: the vector store is closed.")
        return self.engine

    # ----------------------------------------------------------------- collections

    def ping(self) -> None:
        """Raise VectorStoreError unless the engine answers (admin health check)."""
        self._use("list collections").ping()

    def _dimension(self, name: str) -> int | None:
        """The dense size of an existing collection, ``None`` if it lacks chunkbench's named layout."""
        layout = self._use("read the configuration", name).layout(name)
        if DENSE_VECTOR not in layout.dense or SPARSE_VECTOR not in layout.sparse:
            return None
        return layout.dense[DENSE_VECTOR][0]

    def _exists(self, name: str) -> bool:
        return self._use("check the existence", name).exists(name)

    def ensure_collection(self, strategy: StrategyName | str, model_id: str, dimension: int) -> str:
        """Create the collection of (strategy, model) if missing; return its name. Dimension clash → error."""
        if dimension < 1:
            raise VectorStoreError(f"Embedding dimension must be positive; model '{model_id}' gave {dimension}.")
        name = collection_name(strategy, model_id)
        if not self._exists(name):
            try:
                self._use("create", name).create(name, dimension)
            except VectorStoreError:
                # A concurrent process may have created it first (server mode); only then is this not fatal.
                if not self._exists(name):
                    raise
        existing = self._dimension(name)
        if existing is None:
            raise VectorStoreError(
                f"Collection '{name}' exists without the '{DENSE_VECTOR}' + '{SPARSE_VECTOR}' vectors "
                f"chunkbench uses. Delete it (DELETE /admin/qdrant/collections/{name}) and process the "
                "documents again.",
                collection=name,
            )
        if existing != dimension:
            raise VectorStoreError(
                f"Collection '{name}' holds {existing}-dimensional vectors, but model '{model_id}' produces "
                f"{dimension}. Two model ids sanitise to the same name, or the model changed: delete the "
                "collection and process the documents again.",
                collection=name,
                existing_dimension=existing,
                dimension=dimension,
            )
        return name

    def create_collection(self, strategy: StrategyName | str, model_id: str, dimension: int) -> dict[str, Any]:
        """Admin: create (or confirm) the collection of (strategy, model); returns its summary."""
        return self._summary(self.ensure_collection(strategy, model_id, dimension))

    def _collection_names(self) -> list[str]:
        return self._use("list collections").names()

    def collection_count(self) -> int:
        """How many collections there are (admin health)."""
        return len(self._collection_names())

    def _summary(self, name: str, tenant_id: str | None = None) -> dict[str, Any]:
        engine = self._use("read the configuration", name)
        layout = engine.layout(name)
        points = engine.count(name, PointFilter(tenant_id) if tenant_id is not None else None)
        dense = layout.dense.get(DENSE_VECTOR) or layout.dense.get("")
        strategy, model = parse_collection_name(name)
        return {
            "name": name,
            "points": points,
            "dimension": dense[0] if dense is not None else None,
            "strategy": strategy,
            "model": model,
        }

    def list_collections(self, tenant_id: str | None = None) -> list[dict[str, Any]]:
        """Admin: every collection with its point count (only ``tenant_id``'s points when given), dense dimension,
        strategy and sanitised model."""
        return [self._summary(name, tenant_id) for name in self._collection_names()]

    def delete_collection(self, name: str) -> None:
        """Admin: drop a collection and its points. Missing → NotFoundError."""
        self.require_collection(name)
        self._use("delete", name).drop(name)

    def require_collection(self, name: str) -> None:
        """NotFoundError unless the collection exists."""
        if not self._exists(name):
            raise missing_collection(name)

    def wipe_collection(self, name: str, tenant_id: str | None = None) -> int:
        """Admin: delete every point (only ``tenant_id``'s when given) but keep the collection and its
        configuration; returns points deleted."""
        self.require_collection(name)
        engine = self._use("wipe", name)
        where = PointFilter(tenant_id) if tenant_id is not None else None
        deleted = engine.count(name, where)
        engine.delete_where(name, where)
        return deleted

    def tenant_points(self, name: str) -> dict[tuple[str, str], int]:
        """``(tenant, document) → searchable points`` of a collection, read from the payloads (``doctor``)."""
        counts: dict[tuple[str, str], int] = {}
        for point in self._use("scroll points", name).scroll(name, None):
            if point.payload.get("is_parent"):
                continue
            key = (str(point.payload.get("tenant_id")), str(point.payload.get("document_id")))
            counts[key] = counts.get(key, 0) + 1
        return counts

    def collection_names(self) -> list[str]:
        """The names of every collection chunkbench made (a strategy × model), sorted."""
        return sorted(name for name in self._collection_names() if parse_collection_name(name)[0] is not None)

    # ----------------------------------------------------------------- writes

    def replace_document_chunks(
        self,
        strategy: StrategyName | str,
        model_id: str,
        dimension: int,
        *,
        tenant_id: str,
        chunks: Sequence[StoredChunk],
        dense: np.ndarray,
        sparse: Sequence[SparseLike],
        document_id: str | None = None,
    ) -> ReplaceResult:
        """Store one document's chunks for (strategy, model), replacing whatever an earlier run left.

        ``dense`` / ``sparse`` rows belong to the non-parent chunks, in order; parents get no vectors.
        New points are written first and stale ones deleted after, so a crash leaves the old run's
        extra chunks behind, never a document with missing chunks. ``document_id`` is needed only when
        ``chunks`` is empty (the document's points are then removed).
        """
        collection_name(strategy, model_id)  # rejects an unknown strategy before the checks below use it
        document_id = validate_document_points(
            StrategyName(strategy).value, model_id, dimension, chunks, dense, sparse, document_id
        )
        name = self.ensure_collection(strategy, model_id, dimension)
        points = engine_points(chunks, dense, sparse, tenant_id=tenant_id, model_id=model_id)
        engine = self._use("upsert points", name)
        for start in range(0, len(points), UPSERT_BATCH):
            engine.upsert(name, points[start : start + UPSERT_BATCH])
        keep = {p.id for p in points}
        stale = [pid for pid in self._point_ids(name, document_filter(tenant_id, document_id)) if pid not in keep]
        for start in range(0, len(stale), UPSERT_BATCH):
            self._use("delete stale points", name).delete_ids(name, stale[start : start + UPSERT_BATCH])
        return ReplaceResult(collection=name, upserted=len(points), removed=len(stale))

    def _point_ids(self, name: str, point_filter: PointFilter) -> list[str]:
        return [p.id for p in self._use("scroll points", name).scroll(name, point_filter, with_payload=False)]

    def _delete_matching(self, name: str, point_filter: PointFilter) -> int:
        """Delete the points matching ``point_filter``; missing collection → 0."""
        engine = self._use("delete points", name)
        try:
            deleted = engine.count(name, point_filter)
            if deleted:
                engine.delete_where(name, point_filter)
        except NotFoundError:
            return 0
        return deleted

    def delete_document(self, tenant_id: str, document_id: str) -> int:
        """Delete a document's points from every chunkbench collection; returns how many were deleted."""
        point_filter = document_filter(tenant_id, document_id)
        return sum(
            self._delete_matching(name, point_filter)
            for name in self._collection_names()
            if parse_collection_name(name)[0] is not None
        )

    def delete_collection_document(self, name: str, tenant_id: str, document_id: str) -> int:
        """Delete a document's points (parents too) from the collection named ``name``; returns how many."""
        return self._delete_matching(name, document_filter(tenant_id, document_id))

    def delete_document_strategy(
        self, strategy: StrategyName | str, model_id: str, tenant_id: str, document_id: str
    ) -> int:
        """Delete a document's points from one (strategy, model) collection; returns how many."""
        return self._delete_matching(collection_name(strategy, model_id), document_filter(tenant_id, document_id))

    # ----------------------------------------------------------------- reads

    def _payloads(self, strategy: StrategyName | str, model_id: str, point_filter: PointFilter) -> list[dict[str, Any]]:
        name = collection_name(strategy, model_id)
        payloads = [p.payload for p in self._use("scroll points", name).scroll(name, point_filter)]
        return sorted(payloads, key=chunk_order)

    def get_chunks_by_indices(
        self,
        strategy: StrategyName | str,
        model_id: str,
        *,
        tenant_id: str,
        document_id: str,
        indices: Sequence[int],
    ) -> list[dict[str, Any]]:
        """Payloads of the document's non-parent chunks at ``indices`` (Neighbor Expansion), by chunk_index.

        Indices that do not exist are simply absent. Missing collection → NotFoundError.
        """
        wanted = sorted({int(i) for i in indices if i >= 0})
        if not wanted:
            return []
        point_filter = document_filter(tenant_id, document_id, chunk_indices=wanted, include_parents=False)
        return self._payloads(strategy, model_id, point_filter)

    def get_chunks_by_ids(
        self,
        strategy: StrategyName | str,
        model_id: str,
        *,
        tenant_id: str,
        document_id: str,
        chunk_ids: Sequence[str],
    ) -> list[dict[str, Any]]:
        """Payloads of the document's chunks (parents included) with these ids, by (is_parent, index)."""
        if not chunk_ids:
            return []
        return self._payloads(strategy, model_id, document_filter(tenant_id, document_id, chunk_ids=chunk_ids))

    def scroll_document(
        self,
        strategy: StrategyName | str,
        model_id: str,
        *,
        tenant_id: str,
        document_id: str,
        include_parents: bool = True,
    ) -> list[dict[str, Any]]:
        """Every chunk payload of a document (Chunk Preview), children first, each group by chunk_index."""
        return self._payloads(
            strategy, model_id, document_filter(tenant_id, document_id, include_parents=include_parents)
        )

    def count_document(
        self,
        strategy: StrategyName | str,
        model_id: str,
        *,
        tenant_id: str,
        document_id: str,
        include_parents: bool = True,
    ) -> int:
        """How many points a document has in one collection. Missing collection → NotFoundError."""
        name = collection_name(strategy, model_id)
        point_filter = document_filter(tenant_id, document_id, include_parents=include_parents)
        return self._use("count points", name).count(name, point_filter)

    # ----------------------------------------------------------------- search

    def search(
        self,
        strategy: StrategyName | str,
        model_id: str,
        *,
        mode: QueryMode,
        tenant_id: str,
        document_id: str | Sequence[str] | None,
        top_k: int,
        dense: np.ndarray | None,
        sparse: SparseLike | None,
        prefetch_limit: int | None = None,
        exact: bool = True,
    ) -> list[tuple[dict[str, Any], float]]:
        """Top-``top_k`` (payload, score) of non-parent chunks ranked by ``mode``: cosine, BM25, or RRF of both.

        Always filtered by tenant (and documents when given); BM25's IDF is counted over the tenant's own points,
        so other tenants' documents never change a tenant's scores. ``FUSION`` prefetches ``prefetch_limit``
        candidates (default ``2 * top_k``) from each vector and fuses them with RRF here (not in the engine),
        every ranking ordered by (score, then :func:`~chunkbench.storage.fusion.tie_key`) before it is cut, so
        equal scores come in the same order on every engine, run and ingest order. A query without BM25 terms
        (only stopwords) finds nothing by BM25; fusion then ranks by the dense candidates alone. ``exact`` (the
        default: benchmarks, evaluation) searches exhaustively, so figures repeat; ``exact=False`` (serving) walks
        the HNSW graph where the collection has one. A missing collection is a :class:`CollectionMissingError`.
        """
        name = collection_name(strategy, model_id)
        strategy_value = StrategyName(strategy).value
        mode = QueryMode(mode)
        if top_k < 1:
            raise QueryError(f"top_k must be at least 1; got {top_k}.")
        dense_vector, sparse_query = query_vectors(mode, dense, sparse)
        if not self._exists(name):
            raise no_collection(name, strategy_value, model_id)
        if mode is QueryMode.SPARSE and sparse_query is None:
            return []
        base = VectorQuery(
            mode=mode,
            where=document_filter(tenant_id, document_id, include_parents=False),
            limit=top_k,
            dense=dense_vector,
            sparse=sparse_query,
            exact=exact,
            idf_corpus=PointFilter(tenant_id),
        )
        try:
            return ranked_search(
                lambda query: self._use("search", name).query(name, query), base, top_k, prefetch_limit
            )
        except NotFoundError as exc:
            raise no_collection(name, strategy_value, model_id) from exc

    def dense_scores(
        self,
        strategy: StrategyName | str,
        model_id: str,
        *,
        tenant_id: str,
        document_id: str | Sequence[str] | None,
        chunk_ids: Sequence[str],
        dense: np.ndarray,
    ) -> dict[str, float]:
        """Cosine of ``dense`` with each of these chunks (by chunk_id); chunks without a dense vector are absent."""
        ids = list(dict.fromkeys(chunk_ids))
        if not ids:
            return {}
        name = collection_name(strategy, model_id)
        query = VectorQuery(
            mode=QueryMode.DENSE,
            where=document_filter(tenant_id, document_id, chunk_ids=ids, include_parents=False),
            limit=len(ids),
            dense=dense_query(dense),
            # Exact, so every listed chunk gets its true cosine, not only what an HNSW walk reaches.
            exact=True,
            payload_fields=("chunk_id",),
        )
        rows = self._use("score chunks", name).query(name, query)
        return {str(payload.get("chunk_id")): score for payload, score in rows}


_STORES: dict[str, VectorStore] = {}
_STORES_LOCK = threading.Lock()


def get_vector_store(settings: Settings, *, progress: Progress | None = None) -> VectorStore:
    """The process's store for the location ``settings`` point at (server URL or embedded folder).

    ``progress`` reports a migration of old local-mode data if opening the embedded store runs one.
    """
    location = settings.qdrant_url or str(settings.qdrant_path)
    with _STORES_LOCK:
        store = _STORES.get(location)
        if store is None or store.closed:
            if not _STORES:
                # Close before interpreter teardown (an index build's child is stopped, shards are flushed).
                atexit.register(close_vector_stores)
            store = _STORES[location] = VectorStore(settings, progress=progress)
        return store


def close_vector_stores() -> None:
    """Close every cached store (application shutdown, tests) so embedded folders are unlocked."""
    with _STORES_LOCK:
        stores = list(_STORES.values())
        _STORES.clear()
    for store in stores:
        store.close()
