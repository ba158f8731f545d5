"""The vector engine of a Qdrant server or cluster (``CHUNKBENCH_QDRANT_URL``), over qdrant-client.

Collections get HNSW (``CHUNKBENCH_QDRANT_HNSW_*``) and payload indexes (tenant as a tenant index; document id,
chunk index, is-parent); searches run on the graph unless a query asks for exact results. BM25's IDF is counted
over the tenant's own points (``SearchParams(idf=IdfCorpusParams(corpus=…))``); a server too old for that
parameter answers 400, and the engine then falls back to collection-wide IDF (logged once).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from math import ceil
from typing import Any

from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from chunkbench.config import Settings
from chunkbench.errors import VectorStoreError
from chunkbench.storage.engine import (
    EnginePoint,
    Layout,
    VectorEngine,
    VectorQuery,
    fusion_refused,
    missing_collection,
)
from chunkbench.storage.points import DENSE_VECTOR, SPARSE_VECTOR, PointFilter, QueryMode

logger = logging.getLogger(__name__)
_SCROLL_PAGE = 512


def server_filter(where: PointFilter | None) -> qm.Filter:
    """``where`` as a qdrant-client filter (None: every point)."""
    if where is None:
        return qm.Filter()
    must: list[qm.Condition] = [qm.FieldCondition(key="tenant_id", match=qm.MatchValue(value=where.tenant_id))]
    if where.document_ids is not None:
        documents = list(where.document_ids)
        match = qm.MatchValue(value=documents[0]) if len(documents) == 1 else qm.MatchAny(any=documents)
        must.append(qm.FieldCondition(key="document_id", match=match))
    if not where.include_parents:
        must.append(qm.FieldCondition(key="is_parent", match=qm.MatchValue(value=False)))
    if where.point_ids is not None:
        must.append(qm.HasIdCondition(has_id=list(where.point_ids)))
    if where.chunk_indices is not None:
        must.append(qm.FieldCondition(key="chunk_index", match=qm.MatchAny(any=list(where.chunk_indices))))
    return qm.Filter(must=must)


class ServerEngine(VectorEngine):
    """qdrant-client against a server. ``client`` replaces the one built from the settings (tests run this engine
    against qdrant-client's in-process local mode, which speaks the same API, where no server can run)."""

    is_local = False

    def __init__(self, settings: Settings, client: QdrantClient | None = None) -> None:
        self.settings = settings
        self.location = settings.qdrant_url or "qdrant-client (in process)"
        self._idf_scoped = True
        self.client = client or QdrantClient(
            url=settings.qdrant_url,
            # The URL is taken as written: qdrant-client would otherwise add :6333 to a URL without a port,
            # breaking https://qdrant.example.com behind a proxy on 443. A bare server needs ":6333" in it.
            port=None,
            api_key=settings.qdrant_api_key or None,
            timeout=ceil(settings.qdrant_timeout_s),
            prefer_grpc=False,
            # The version probe is a network call at construction; the health check covers reachability.
            check_compatibility=False,
        )

    @contextmanager
    def _op(self, operation: str, collection: str | None = None) -> Iterator[None]:
        """Client failures as domain errors naming what failed; a missing collection as NotFoundError."""
        where = f" on collection '{collection}'" if collection else ""
        try:
            yield
        except UnexpectedResponse as exc:
            if exc.status_code == 404 and collection:
                raise missing_collection(collection) from exc
            raise VectorStoreError(f"Qdrant failed to {operation}{where}: {exc}") from exc
        except ValueError as exc:
            # Local mode (the tests' stand-in) reports a missing collection as ValueError("Collection … not found").
            if collection and str(exc) == f"Collection {collection} not found":
                raise missing_collection(collection) from exc
            raise VectorStoreError(f"Qdrant failed to {operation}{where}: {exc}") from exc
        except (ResponseHandlingException, RuntimeError) as exc:
            raise VectorStoreError(f"Qdrant failed to {operation}{where}: {exc}") from exc

    def close(self) -> None:
        self.client.close()

    def ping(self) -> None:
        with self._op("list collections"):
            self.client.get_collections()

    def names(self) -> list[str]:
        with self._op("list collections"):
            return sorted(c.name for c in self.client.get_collections().collections)

    def exists(self, name: str) -> bool:
        with self._op("check the existence", name):
            return self.client.collection_exists(name)

    def create(self, name: str, dimension: int) -> None:
        settings = self.settings
        with self._op("create", name):
            self.client.create_collection(
                name,
                vectors_config={DENSE_VECTOR: qm.VectorParams(size=dimension, distance=qm.Distance.COSINE)},
                sparse_vectors_config={SPARSE_VECTOR: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
                hnsw_config=qm.HnswConfigDiff(m=settings.qdrant_hnsw_m, ef_construct=settings.qdrant_hnsw_ef_construct),
            )
            # They keep tenant/document filters from scanning the whole collection.
            self.client.create_payload_index(
                name, "tenant_id", qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)
            )
            self.client.create_payload_index(name, "document_id", qm.PayloadSchemaType.KEYWORD)
            self.client.create_payload_index(name, "chunk_index", qm.PayloadSchemaType.INTEGER)
            self.client.create_payload_index(name, "is_parent", qm.PayloadSchemaType.BOOL)

    def layout(self, name: str) -> Layout:
        with self._op("read the configuration", name):
            params = self.client.get_collection(name).config.params
        vectors = params.vectors if isinstance(params.vectors, dict) else {"": params.vectors}
        return Layout(
            dense={key: (v.size, v.distance.value.lower()) for key, v in vectors.items() if v is not None},
            sparse={
                key: (v.modifier.value.lower() if v.modifier else None)
                for key, v in (params.sparse_vectors or {}).items()
            },
        )

    def drop(self, name: str) -> None:
        with self._op("delete", name):
            self.client.delete_collection(name)

    def count(self, name: str, where: PointFilter | None = None) -> int:
        with self._op("count points", name):
            return self.client.count(name, count_filter=server_filter(where), exact=True).count

    def upsert(self, name: str, points: Sequence[EnginePoint]) -> None:
        structs = [
            qm.PointStruct(
                id=p.id,
                vector={
                    **p.dense,
                    **{key: qm.SparseVector(indices=i, values=v) for key, (i, v) in p.sparse.items()},
                },
                payload=p.payload,
            )
            for p in points
        ]
        with self._op("upsert points", name):
            self.client.upsert(name, points=structs, wait=True)

    def delete_ids(self, name: str, ids: Sequence[str]) -> None:
        with self._op("delete points", name):
            self.client.delete(name, points_selector=qm.PointIdsList(points=list(ids)), wait=True)

    def delete_where(self, name: str, where: PointFilter | None) -> None:
        with self._op("delete points", name):
            self.client.delete(name, points_selector=qm.FilterSelector(filter=server_filter(where)), wait=True)

    def scroll(
        self, name: str, where: PointFilter | None = None, *, with_payload: bool = True, with_vectors: bool = False
    ) -> list[EnginePoint]:
        found: list[EnginePoint] = []
        offset: qm.ExtendedPointId | None = None
        while True:
            with self._op("scroll points", name):
                page, offset = self.client.scroll(
                    name, scroll_filter=server_filter(where), limit=_SCROLL_PAGE, offset=offset,
                    with_payload=with_payload, with_vectors=with_vectors,
                )  # fmt: skip
            found.extend(_point(record) for record in page)
            if offset is None:
                return found

    def query(self, name: str, query: VectorQuery) -> list[tuple[dict[str, Any], float]]:
        point_filter = server_filter(query.where)
        with_payload: bool | list[str] = list(query.payload_fields) if query.payload_fields is not None else True
        try:
            response = self._query(name, query, point_filter, with_payload, scoped_idf=self._idf_scoped)
        except VectorStoreError as exc:
            if not (self._idf_scoped and query.idf_corpus is not None and "idf" in str(exc).lower()):
                raise
            self._idf_scoped = False
            logger.warning("This Qdrant server does not scope BM25's IDF by tenant (too old): collection-wide IDF.")
            response = self._query(name, query, point_filter, with_payload, scoped_idf=False)
        return [(dict(p.payload or {}), float(p.score)) for p in response.points]

    def _params(self, query: VectorQuery, *, sparse: bool, scoped_idf: bool) -> qm.SearchParams:
        idf = None
        if sparse and scoped_idf and query.idf_corpus is not None:
            idf = qm.IdfCorpusParams(corpus=server_filter(query.idf_corpus))
        if query.exact:
            return qm.SearchParams(exact=True, idf=idf)
        return qm.SearchParams(hnsw_ef=self.settings.qdrant_hnsw_ef_search, idf=idf)

    def _query(
        self,
        name: str,
        query: VectorQuery,
        point_filter: qm.Filter,
        with_payload: bool | list[str],
        *,
        scoped_idf: bool,
    ) -> qm.QueryResponse:
        sparse = qm.SparseVector(indices=query.sparse[0], values=query.sparse[1]) if query.sparse else None
        search: Any
        if query.mode is QueryMode.DENSE:
            search, using, params = query.dense, DENSE_VECTOR, self._params(query, sparse=False, scoped_idf=False)
        elif query.mode is QueryMode.SPARSE:
            search, using, params = sparse, SPARSE_VECTOR, self._params(query, sparse=True, scoped_idf=scoped_idf)
        else:
            raise fusion_refused()
        with self._op("search", name):
            return self.client.query_points(
                name, query=search, using=using, query_filter=point_filter, search_params=params,
                limit=query.limit, with_payload=with_payload, with_vectors=False,
            )  # fmt: skip


def _point(record: qm.Record) -> EnginePoint:
    vectors = record.vector if isinstance(record.vector, dict) else ({"": record.vector} if record.vector else {})
    dense: dict[str, list[float]] = {}
    sparse: dict[str, tuple[list[int], list[float]]] = {}
    for key, vector in vectors.items():
        if isinstance(vector, qm.SparseVector):
            sparse[key] = (list(vector.indices), list(vector.values))
        elif vector is not None:
            dense[key] = list(vector)  # type: ignore[arg-type]
    return EnginePoint(id=str(record.id), payload=dict(record.payload or {}), dense=dense, sparse=sparse)
