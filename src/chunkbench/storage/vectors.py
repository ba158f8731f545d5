"""The vector store (seed 000 §5.2): one Qdrant collection per (strategy, Corpus model), points per chunk.

Each collection holds a named dense vector ``"dense"`` (cosine) and a sparse vector ``"bm25"`` (Qdrant's
IDF modifier over :mod:`chunkbench.embedding.sparse` term weights), so dense, sparse and hybrid (RRF)
search all run on the same points. Parent chunks of ``semantic_parent_child`` are stored without vectors:
retrievable by id, never returned by a search. Every read and delete filters by tenant (and document).

Embedded mode (the default) keeps Qdrant on disk under ``{data_dir}/qdrant``; only one client may open
that folder, hence one :class:`VectorStore` per process through :func:`get_vector_store`.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from math import ceil
from typing import Any

import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from chunkbench.config import Settings
from chunkbench.errors import CollectionMissingError, NotFoundError, QueryError, VectorStoreError
from chunkbench.models import StrategyName
from chunkbench.storage.points import (
    DENSE_VECTOR,
    SPARSE_VECTOR,
    QueryMode,
    ReplaceResult,
    SparseLike,
    StoredChunk,
    chunk_order,
    chunk_payload,
    collection_name,
    document_filter,
    parse_collection_name,
    point_id,
    validate_document_points,
)

UPSERT_BATCH = 256
_SCROLL_PAGE = 512


class VectorStore:
    """Qdrant access for chunkbench: collections per (strategy, model), points per chunk, tenant-filtered."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.is_local = not settings.qdrant_url
        self.location = settings.qdrant_url or str(settings.qdrant_path)
        # The embedded client is plain Python over SQLite with no locking of its own; the server client is
        # thread-safe. FastAPI runs sync routes on a thread pool, so serialise embedded access.
        self._lock: AbstractContextManager[Any] = threading.RLock() if self.is_local else nullcontext()
        self._closed = False
        self.client = self._connect()

    def _connect(self) -> QdrantClient:
        if not self.is_local:
            return QdrantClient(
                url=self.settings.qdrant_url,
                # The URL is taken as written: qdrant-client would otherwise add :6333 to a URL without a port,
                # breaking https://qdrant.example.com behind a proxy on 443. A bare server needs ":6333" in it.
                port=None,
                api_key=self.settings.qdrant_api_key or None,
                timeout=ceil(self.settings.qdrant_timeout_s),
                prefer_grpc=False,
                # The version probe is a network call at construction; the health check covers reachability.
                check_compatibility=False,
            )
        path = self.settings.qdrant_path
        try:
            path.mkdir(parents=True, exist_ok=True)
            return QdrantClient(path=str(path))
        except RuntimeError as exc:
            if "already accessed" in str(exc):
                raise VectorStoreError(
                    f"The embedded Qdrant store at {path} is in use by another process (for example a "
                    "running chunkbench server). Stop that process, or run a Qdrant server and point every "
                    "chunkbench process at it with CHUNKBENCH_QDRANT_URL.",
                    path=str(path),
                ) from exc
            raise VectorStoreError(f"Could not open the embedded Qdrant store at {path}: {exc}") from exc
        except OSError as exc:
            raise VectorStoreError(f"Could not open the embedded Qdrant store at {path}: {exc}") from exc

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Release the client (and, in embedded mode, the folder lock)."""
        if not self._closed:
            self._closed = True
            with self._lock:
                self.client.close()

    @contextmanager
    def _op(self, operation: str, collection: str | None = None) -> Iterator[None]:
        """Serialise embedded access and turn client failures into domain errors naming what failed."""
        where = f" on collection '{collection}'" if collection else ""
        if self._closed:
            raise VectorStoreError(f"Cannot {operation}{where}: the vector store is closed.")
        with self._lock:
            try:
                yield
            except UnexpectedResponse as exc:
                if exc.status_code == 404 and collection:
                    raise self._missing(collection) from exc
                raise VectorStoreError(f"Qdrant failed to {operation}{where}: {exc}") from exc
            except ValueError as exc:
                # Embedded mode reports a missing collection as ValueError("Collection … not found").
                if collection and str(exc) == f"Collection {collection} not found":
                    raise self._missing(collection) from exc
                raise VectorStoreError(f"Qdrant failed to {operation}{where}: {exc}") from exc
            except (ResponseHandlingException, RuntimeError) as exc:
                raise VectorStoreError(f"Qdrant failed to {operation}{where}: {exc}") from exc

    @staticmethod
    def _missing(name: str) -> NotFoundError:
        return NotFoundError(
            f"Collection '{name}' does not exist: nothing has been processed with that strategy and embedding "
            "model yet (or the collection was deleted).",
            collection=name,
        )

    # ----------------------------------------------------------------- collections

    def ping(self) -> None:
        """Raise VectorStoreError unless Qdrant answers (admin health check)."""
        with self._op("list collections"):
            self.client.get_collections()

    def _dimension(self, name: str) -> int | None:
        """The dense size of an existing collection, ``None`` if it lacks chunkbench's named layout."""
        with self._op("read the configuration", name):
            info = self.client.get_collection(name)
        vectors = info.config.params.vectors
        sparse = info.config.params.sparse_vectors or {}
        if not isinstance(vectors, dict) or DENSE_VECTOR not in vectors or SPARSE_VECTOR not in sparse:
            return None
        return vectors[DENSE_VECTOR].size

    def _exists(self, name: str) -> bool:
        with self._op("check the existence", name):
            return self.client.collection_exists(name)

    def ensure_collection(self, strategy: StrategyName | str, model_id: str, dimension: int) -> str:
        """Create the collection of (strategy, model) if missing; return its name. Dimension clash → error."""
        if dimension < 1:
            raise VectorStoreError(f"Embedding dimension must be positive; model '{model_id}' gave {dimension}.")
        name = collection_name(strategy, model_id)
        if not self._exists(name):
            try:
                self._create(name, dimension)
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

    def _create(self, name: str, dimension: int) -> None:
        hnsw = None
        if not self.is_local:
            # Embedded mode searches exhaustively; HNSW parameters only mean something on a server.
            hnsw = qm.HnswConfigDiff(m=self.settings.qdrant_hnsw_m, ef_construct=self.settings.qdrant_hnsw_ef_construct)
        with self._op("create", name):
            self.client.create_collection(
                name,
                vectors_config={DENSE_VECTOR: qm.VectorParams(size=dimension, distance=qm.Distance.COSINE)},
                sparse_vectors_config={SPARSE_VECTOR: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
                hnsw_config=hnsw,
            )
            if not self.is_local:
                # Payload indexes are ignored (with a warning) in embedded mode; on a server they keep
                # tenant/document filters from scanning the whole collection.
                self.client.create_payload_index(
                    name, "tenant_id", qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)
                )
                self.client.create_payload_index(name, "document_id", qm.PayloadSchemaType.KEYWORD)
                self.client.create_payload_index(name, "chunk_index", qm.PayloadSchemaType.INTEGER)
                self.client.create_payload_index(name, "is_parent", qm.PayloadSchemaType.BOOL)

    def create_collection(self, strategy: StrategyName | str, model_id: str, dimension: int) -> dict[str, Any]:
        """Admin: create (or confirm) the collection of (strategy, model); returns its summary."""
        return self._summary(self.ensure_collection(strategy, model_id, dimension))

    def _collection_names(self) -> list[str]:
        with self._op("list collections"):
            return sorted(c.name for c in self.client.get_collections().collections)

    def _summary(self, name: str) -> dict[str, Any]:
        with self._op("read the configuration", name):
            info = self.client.get_collection(name)
            points = self.client.count(name, exact=True).count
        vectors = info.config.params.vectors
        dense = vectors.get(DENSE_VECTOR) if isinstance(vectors, dict) else vectors
        strategy, model = parse_collection_name(name)
        return {
            "name": name,
            "points": points,
            "dimension": dense.size if dense is not None else None,
            "strategy": strategy,
            "model": model,
        }

    def list_collections(self) -> list[dict[str, Any]]:
        """Admin: every collection with its point count, dense dimension, strategy and sanitised model."""
        return [self._summary(name) for name in self._collection_names()]

    def delete_collection(self, name: str) -> None:
        """Admin: drop a collection and its points. Missing → NotFoundError."""
        if not self._exists(name):
            raise self._missing(name)
        with self._op("delete", name):
            self.client.delete_collection(name)

    def wipe_collection(self, name: str) -> int:
        """Admin: delete every point but keep the collection and its configuration; returns points deleted."""
        if not self._exists(name):
            raise self._missing(name)
        with self._op("wipe", name):
            deleted = self.client.count(name, exact=True).count
            self.client.delete(name, points_selector=qm.FilterSelector(filter=qm.Filter()), wait=True)
        return deleted

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
        matrix = np.asarray(dense, dtype=np.float32)
        points: list[qm.PointStruct] = []
        row = 0
        for chunk in chunks:
            vector: dict[str, Any] = {}
            if not chunk.is_parent:
                vector[DENSE_VECTOR] = matrix[row].tolist()
                terms = sparse[row]
                # A chunk of only stopwords has no terms; it is still found by the dense vector.
                if len(terms.indices):
                    vector[SPARSE_VECTOR] = qm.SparseVector(indices=list(terms.indices), values=list(terms.values))
                row += 1
            points.append(
                qm.PointStruct(
                    id=point_id(chunk.chunk_id),
                    vector=vector,
                    payload=chunk_payload(chunk, tenant_id=tenant_id, model_id=model_id),
                )
            )
        for start in range(0, len(points), UPSERT_BATCH):
            with self._op("upsert points", name):
                self.client.upsert(name, points=points[start : start + UPSERT_BATCH], wait=True)
        keep = {str(p.id) for p in points}
        stale = [pid for pid in self._point_ids(name, document_filter(tenant_id, document_id)) if pid not in keep]
        for start in range(0, len(stale), UPSERT_BATCH):
            with self._op("delete stale points", name):
                self.client.delete(
                    name,
                    points_selector=qm.PointIdsList(points=stale[start : start + UPSERT_BATCH]),
                    wait=True,
                )
        return ReplaceResult(collection=name, upserted=len(points), removed=len(stale))

    def _point_ids(self, name: str, point_filter: qm.Filter) -> list[str]:
        return [str(p.id) for p in self._scroll(name, point_filter, with_payload=False)]

    def _scroll(self, name: str, point_filter: qm.Filter, *, with_payload: bool = True) -> list[qm.Record]:
        records: list[qm.Record] = []
        offset: qm.ExtendedPointId | None = None
        while True:
            with self._op("scroll points", name):
                page, offset = self.client.scroll(
                    name,
                    scroll_filter=point_filter,
                    limit=_SCROLL_PAGE,
                    offset=offset,
                    with_payload=with_payload,
                    with_vectors=False,
                )
            records.extend(page)
            if offset is None:
                return records

    def _delete_matching(self, name: str, point_filter: qm.Filter) -> int:
        """Delete the points matching ``point_filter``; missing collection → 0."""
        try:
            with self._op("delete points", name):
                deleted = self.client.count(name, count_filter=point_filter, exact=True).count
                if deleted:
                    self.client.delete(name, points_selector=qm.FilterSelector(filter=point_filter), wait=True)
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

    def delete_document_strategy(
        self, strategy: StrategyName | str, model_id: str, tenant_id: str, document_id: str
    ) -> int:
        """Delete a document's points from one (strategy, model) collection; returns how many."""
        return self._delete_matching(collection_name(strategy, model_id), document_filter(tenant_id, document_id))

    # ----------------------------------------------------------------- reads

    def _payloads(self, strategy: StrategyName | str, model_id: str, point_filter: qm.Filter) -> list[dict[str, Any]]:
        payloads = [dict(r.payload or {}) for r in self._scroll(collection_name(strategy, model_id), point_filter)]
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
        point_filter = document_filter(
            tenant_id,
            document_id,
            qm.FieldCondition(key="chunk_index", match=qm.MatchAny(any=wanted)),
            include_parents=False,
        )
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
        point_filter = document_filter(
            tenant_id, document_id, qm.HasIdCondition(has_id=[point_id(c) for c in dict.fromkeys(chunk_ids)])
        )
        return self._payloads(strategy, model_id, point_filter)

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
        with self._op("count points", name):
            return self.client.count(
                name,
                count_filter=document_filter(tenant_id, document_id, include_parents=include_parents),
                exact=True,
            ).count

    # ----------------------------------------------------------------- search

    def _search_params(self) -> qm.SearchParams | None:
        # Embedded mode searches exhaustively, so ``hnsw_ef`` only means something on a server.
        return None if self.is_local else qm.SearchParams(hnsw_ef=self.settings.qdrant_hnsw_ef_search)

    @staticmethod
    def _no_collection(name: str, strategy: str, model_id: str) -> CollectionMissingError:
        return CollectionMissingError(
            f"Collection '{name}' does not exist: nothing was processed with strategy '{strategy}' and "
            f"embedding model '{model_id}'.",
            collection=name,
            strategy=strategy,
            model_id=model_id,
        )

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
    ) -> list[tuple[dict[str, Any], float]]:
        """Top-``top_k`` (payload, score) of non-parent chunks ranked by ``mode``: cosine, BM25, or RRF of both.

        Always filtered by tenant (and documents when given). ``FUSION`` prefetches ``prefetch_limit``
        candidates (default ``2 * top_k``) from each vector and fuses them with RRF inside Qdrant. A query
        without BM25 terms (only stopwords) finds nothing by BM25; fusion then ranks by the dense prefetch
        alone. A missing collection is a :class:`CollectionMissingError`.
        """
        name = collection_name(strategy, model_id)
        strategy_value = StrategyName(strategy).value
        mode = QueryMode(mode)
        if top_k < 1:
            raise QueryError(f"top_k must be at least 1; got {top_k}.")
        dense_query = None if dense is None else np.asarray(dense, dtype=np.float32).reshape(-1).tolist()
        sparse_query = None
        if sparse is not None and len(sparse.indices):
            sparse_query = qm.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
        if mode is not QueryMode.SPARSE and dense_query is None:
            raise QueryError(f"A {mode.value} search needs a query embedding; none was given.")
        if mode is QueryMode.SPARSE and sparse is None:
            raise QueryError("A sparse search needs a sparse query vector; none was given.")
        if not self._exists(name):
            raise self._no_collection(name, strategy_value, model_id)
        point_filter = document_filter(tenant_id, document_id, include_parents=False)
        query: Any
        prefetch: list[qm.Prefetch] | None = None
        using: str | None
        if mode is QueryMode.DENSE:
            query, using = dense_query, DENSE_VECTOR
        elif mode is QueryMode.SPARSE:
            if sparse_query is None:
                return []
            query, using = sparse_query, SPARSE_VECTOR
        else:
            candidates = max(prefetch_limit or 2 * top_k, top_k)
            prefetch = [qm.Prefetch(query=dense_query, using=DENSE_VECTOR, filter=point_filter, limit=candidates)]
            if sparse_query is not None:
                prefetch.append(
                    qm.Prefetch(query=sparse_query, using=SPARSE_VECTOR, filter=point_filter, limit=candidates)
                )
            query, using = qm.FusionQuery(fusion=qm.Fusion.RRF), None
        try:
            with self._op("search", name):
                response = self.client.query_points(
                    name,
                    query=query,
                    using=using,
                    prefetch=prefetch,
                    query_filter=point_filter,
                    search_params=self._search_params(),
                    limit=top_k,
                    with_payload=True,
                    with_vectors=False,
                )
        except NotFoundError as exc:
            raise self._no_collection(name, strategy_value, model_id) from exc
        return [(dict(p.payload or {}), float(p.score)) for p in response.points]

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
        point_filter = document_filter(
            tenant_id, document_id, qm.HasIdCondition(has_id=[point_id(c) for c in ids]), include_parents=False
        )
        with self._op("score chunks", name):
            response = self.client.query_points(
                name,
                query=np.asarray(dense, dtype=np.float32).reshape(-1).tolist(),
                using=DENSE_VECTOR,
                query_filter=point_filter,
                # Exact on a server, so every listed chunk gets its true cosine, not only what HNSW reaches;
                # embedded mode is always exact (and warns about search params).
                search_params=None if self.is_local else qm.SearchParams(exact=True),
                limit=len(ids),
                with_payload=["chunk_id"],
            )
        return {str((p.payload or {}).get("chunk_id")): float(p.score) for p in response.points}


_STORES: dict[str, VectorStore] = {}
_STORES_LOCK = threading.Lock()


def get_vector_store(settings: Settings) -> VectorStore:
    """The process's store for the location ``settings`` point at (server URL or embedded folder)."""
    location = settings.qdrant_url or str(settings.qdrant_path)
    with _STORES_LOCK:
        store = _STORES.get(location)
        if store is None or store.closed:
            if not _STORES:
                # Close before interpreter teardown: qdrant-client's own __del__ fails noisily then.
                atexit.register(close_vector_stores)
            store = _STORES[location] = VectorStore(settings)
        return store


def close_vector_stores() -> None:
    """Close every cached store (application shutdown, tests) so embedded folders are unlocked."""
    with _STORES_LOCK:
        stores = list(_STORES.values())
        _STORES.clear()
    for store in stores:
        store.close()
