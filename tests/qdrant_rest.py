"""A Qdrant REST server for the tests, storing into Qdrant Edge: where no Qdrant server binary can be installed.

It speaks Qdrant's REST protocol for the calls chunkbench's server engine (``storage/qdrant_server.py``) makes
through qdrant-client, so the client's HTTP path (requests, response parsing, errors) runs for real, and several
processes can share one vector store the way distributed workers share a Qdrant server. Request bodies are
validated with qdrant-client's own models (generated from Qdrant's OpenAPI schema) and answers are built with them,
so a body of the wrong shape fails here as it would on a server, and an answer of the wrong shape fails in the
client. The points live in Qdrant Edge shards (the engine of Qdrant itself), one per collection, under one folder
that this process alone owns; writes to a collection are serialised, reads run alongside them.

What it is not: one node (no shards, replicas or consensus), no HNSW build (searches are exhaustive), no snapshots,
no gRPC. Any route it does not implement answers 501 naming the method and path, so a new client call is noticed.

Run: ``python tests/qdrant_rest.py --path DIR --port PORT [--api-key KEY]`` (the ``qdrant_rest_url`` fixture does).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import qdrant_edge as qe
from pydantic import BaseModel, TypeAdapter, ValidationError
from qdrant_client.http import models as qm
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from chunkbench.storage.edge_index import ReadWriteLock

VERSION = "1.18.0"  # what GET / reports: the server deploy/compose.yaml runs (qdrant/qdrant:v1.18.0)
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")
# Payload fields of the server's own, under this prefix, never shown in an answer:
_HIDDEN = "__qdrant_rest_"
# qdrant-edge-py 0.9 matches no boolean value (MatchValue(True) and MatchValue(False) find nothing): a top-level
# boolean is mirrored into a keyword field, and filters on the boolean match the mirror.
_BOOL_MIRROR = _HIDDEN + "bool__"
# A point's version, as Qdrant reports it in search results: the operation id of the write that last stored it
# (Edge reports 0). It shows which write stored a point, so a test can see two clients' writes interleave.
_VERSION = _HIDDEN + "version"
# Qdrant's defaults, reported in a collection's configuration where its creation named none.
_HNSW_DEFAULTS = {"m": 16, "ef_construct": 100, "full_scan_threshold": 10_000}
_DISTANCES = {d.value: getattr(qe.Distance, d.value) for d in qm.Distance}
_SCHEMA_TYPES = {t.value: getattr(qe.PayloadSchemaType, t.value.capitalize()) for t in qm.PayloadSchemaType}
DEFAULT_RRF_K = 2  # Qdrant's k of reciprocal rank fusion when a query names none


# ---------------------------------------------------------------------------------------------- errors


class RestError(Exception):
    """An answer other than 200, with Qdrant's error body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def not_found(name: str) -> RestError:
    return RestError(404, f"Not found: Collection `{name}` doesn't exist!")


def unsupported(what: str) -> RestError:
    return RestError(501, f"Not implemented by the test server (tests/qdrant_rest.py): {what}")


def parse(model: Any, body: Any) -> Any:
    """``body`` as qdrant-client's model of it; a body of the wrong shape is Qdrant's 400."""
    try:
        return TypeAdapter(model).validate_python(body)
    except ValidationError as exc:
        raise RestError(400, f"Format error in JSON body: {exc}") from None


def dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", exclude_none=True, by_alias=True)


# ---------------------------------------------------------------------------------------------- qdrant-client → Edge


def _many(conditions: Any) -> list[Any] | None:
    if conditions is None:
        return None
    return [edge_condition(c) for c in (conditions if isinstance(conditions, list) else [conditions])]


def edge_filter(where: qm.Filter | None) -> qe.Filter | None:
    if where is None:
        return None
    min_should = None
    if where.min_should is not None:
        min_should = qe.MinShould(_many(where.min_should.conditions) or [], where.min_should.min_count)
    return qe.Filter(
        must=_many(where.must), should=_many(where.should), must_not=_many(where.must_not), min_should=min_should
    )


def edge_condition(condition: Any) -> Any:
    if isinstance(condition, qm.Filter):
        return edge_filter(condition)
    if isinstance(condition, qm.HasIdCondition):
        return qe.HasIdCondition({str(i) if not isinstance(i, int) else i for i in condition.has_id})
    if isinstance(condition, qm.HasVectorCondition):
        return qe.HasVectorCondition(condition.has_vector)
    if isinstance(condition, qm.IsEmptyCondition):
        return qe.IsEmptyCondition(condition.is_empty.key)
    if isinstance(condition, qm.IsNullCondition):
        return qe.IsNullCondition(condition.is_null.key)
    if isinstance(condition, qm.FieldCondition):
        return _field_condition(condition)
    raise unsupported(f"filter condition {type(condition).__name__}")


def _field_condition(condition: qm.FieldCondition) -> Any:
    key, match = condition.key, condition.match
    if isinstance(match, qm.MatchValue) and isinstance(match.value, bool):
        return qe.FieldCondition(key=_BOOL_MIRROR + key, match=qe.MatchValue(str(match.value).lower()))
    kwargs: dict[str, Any] = {}
    if isinstance(match, qm.MatchValue):
        kwargs["match"] = qe.MatchValue(match.value)
    elif isinstance(match, qm.MatchAny):
        kwargs["match"] = qe.MatchAny(list(match.any))
    elif isinstance(match, qm.MatchExcept):
        kwargs["match"] = qe.MatchExcept(list(match.except_))
    elif isinstance(match, qm.MatchText):
        kwargs["match"] = qe.MatchText(match.text)
    elif isinstance(match, qm.MatchPhrase):
        kwargs["match"] = qe.MatchPhrase(match.phrase)
    elif match is not None:
        raise unsupported(f"match {type(match).__name__}")
    if condition.range is not None:
        if not isinstance(condition.range, qm.Range):
            raise unsupported("datetime ranges")
        r = condition.range
        kwargs["range"] = qe.RangeFloat(gte=r.gte, gt=r.gt, lte=r.lte, lt=r.lt)
    if condition.values_count is not None:
        v = condition.values_count
        kwargs["values_count"] = qe.ValuesCount(lt=v.lt, gt=v.gt, lte=v.lte, gte=v.gte)
    if condition.is_empty is not None:
        kwargs["is_empty"] = condition.is_empty
    if condition.is_null is not None:
        kwargs["is_null"] = condition.is_null
    if condition.geo_bounding_box or condition.geo_radius or condition.geo_polygon:
        raise unsupported("geo conditions")
    return qe.FieldCondition(key=key, **kwargs)


def edge_vector(vector: Any) -> Any:
    if isinstance(vector, qm.SparseVector):
        return qe.SparseVector(list(vector.indices), [float(v) for v in vector.values])
    if isinstance(vector, list) and all(isinstance(v, float | int) for v in vector):
        return [float(v) for v in vector]
    raise unsupported(f"vector of type {type(vector).__name__} (documents, images, multivectors, point ids)")


def edge_point(point_id: Any, vector: Any, payload: dict[str, Any] | None, version: int) -> qe.Point:
    if isinstance(vector, dict):
        vectors: Any = {name: edge_vector(v) for name, v in vector.items()}
    else:
        vectors = {"": edge_vector(vector)}
    stored = dict(payload or {})
    stored.update({_BOOL_MIRROR + k: str(v).lower() for k, v in (payload or {}).items() if isinstance(v, bool)})
    stored[_VERSION] = version
    return qe.Point(id=_point_id(point_id), vector=vectors, payload=stored)


def _point_id(point_id: Any) -> Any:
    return point_id if isinstance(point_id, int) else str(point_id)


def edge_params(params: qm.SearchParams | None) -> qe.SearchParams | None:
    if params is None:
        return None
    if params.quantization is not None or params.acorn is not None:
        raise unsupported("quantization and ACORN search parameters")
    idf = None
    if isinstance(params.idf, qm.IdfCorpusParams):
        idf = qe.IdfParams(corpus=edge_filter(params.idf.corpus))
    elif params.idf is not None:  # IdfScope.GLOBAL: the whole collection, as without the parameter
        idf = qe.IdfParams(corpus=None)
    return qe.SearchParams(
        hnsw_ef=params.hnsw_ef, exact=bool(params.exact), indexed_only=bool(params.indexed_only), idf=idf
    )


def edge_query(query: Any, using: str | None) -> Any:
    if query is None:
        return None
    if isinstance(query, qm.NearestQuery):
        if query.mmr is not None:
            raise unsupported("MMR queries")
        query = query.nearest
    if isinstance(query, qm.FusionQuery):
        return qe.Fusion.Rrf(k=DEFAULT_RRF_K) if query.fusion is qm.Fusion.RRF else qe.Fusion.Dbsf()
    if isinstance(query, qm.RrfQuery):
        return qe.Fusion.Rrf(k=query.rrf.k if query.rrf.k is not None else DEFAULT_RRF_K, weights=query.rrf.weights)
    if isinstance(query, BaseModel) and not isinstance(query, qm.SparseVector):
        raise unsupported(f"query {type(query).__name__}")
    return qe.Query.Nearest(edge_vector(query), using=using or "")


def edge_prefetch(prefetch: Any) -> list[qe.Prefetch] | None:
    if prefetch is None:
        return None
    stages = prefetch if isinstance(prefetch, list) else [prefetch]
    built = []
    for stage in stages:
        if stage.lookup_from is not None:
            raise unsupported("lookup_from")
        built.append(
            qe.Prefetch(
                limit=stage.limit if stage.limit is not None else 10,
                query=edge_query(stage.query, stage.using),
                prefetches=edge_prefetch(stage.prefetch),
                params=edge_params(stage.params),
                filter=edge_filter(stage.filter),
                score_threshold=stage.score_threshold,
            )
        )
    return built


def edge_with_payload(selector: Any, default: bool) -> tuple[Any, bool]:
    """What to ask Edge for (the version too, always), and whether the client asked for a payload."""
    selector = default if selector is None else selector
    if selector is True:
        return True, True
    if selector is False:
        return [_VERSION], False
    if isinstance(selector, qm.PayloadSelectorInclude):
        return qe.PayloadSelector.Include([*selector.include, _VERSION]), True
    if isinstance(selector, qm.PayloadSelectorExclude):
        return qe.PayloadSelector.Exclude(list(selector.exclude)), True
    return [*selector, _VERSION], True


# ---------------------------------------------------------------------------------------------- Edge → REST


def rest_payload(payload: dict[str, Any] | None, shown: bool = True) -> dict[str, Any] | None:
    if payload is None or not shown:
        return None
    return {k: v for k, v in payload.items() if not k.startswith(_HIDDEN)}


def rest_vector(vector: Any) -> Any:
    if not vector and vector != {}:
        return None
    if not isinstance(vector, dict):
        return list(vector)
    out = {}
    for name, v in vector.items():
        if isinstance(v, qe.SparseVector):
            out[name] = {"indices": list(v.indices), "values": [float(x) for x in v.values]}
        else:
            out[name] = list(v)
    return out[""] if set(out) == {""} else out  # Qdrant shows the unnamed vector bare


def rest_id(point_id: Any) -> Any:
    return point_id if isinstance(point_id, int) else str(point_id)


def rest_record(record: Any, with_vector: Any, shown: bool) -> qm.Record:
    return qm.Record(
        id=rest_id(record.id), payload=rest_payload(record.payload, shown),
        vector=rest_vector(record.vector) if with_vector else None,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------- collections


@dataclass(eq=False)
class Collection:
    name: str
    folder: Path
    shard: qe.EdgeShard
    created: dict[str, Any]  # the creation request as received: its HNSW and optimizer settings are reported back
    created_at: str
    rw: ReadWriteLock = field(default_factory=ReadWriteLock)  # readers and writers shared; a delete exclusive
    writing: threading.Lock = field(default_factory=threading.Lock)  # one write at a time per collection
    dropped: bool = False


class Server:
    """The collections under ``root`` (``<name>/meta.json`` + ``<name>/shard/``), opened at start."""

    def __init__(self, root: Path, api_key: str | None) -> None:
        self.root = root
        self.api_key = api_key or None
        self.collections: dict[str, Collection] = {}
        self.guard = threading.Lock()
        self.operations = itertools.count(1)
        root.mkdir(parents=True, exist_ok=True)
        for meta in sorted(root.glob("*/meta.json")):
            state = json.loads(meta.read_text(encoding="utf-8"))
            folder = meta.parent
            shard = qe.EdgeShard.load(str(folder / "shard"))
            self.collections[folder.name] = Collection(
                folder.name, folder, shard, state["created"], state["created_at"]
            )
        for folder in root.iterdir():  # a creation or delete cut short leaves a folder without meta.json
            if folder.is_dir() and folder.name not in self.collections:
                shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        with self.guard:
            collections, self.collections = list(self.collections.values()), {}
        for collection in collections:
            with collection.rw.exclusive():
                collection.dropped = True
                collection.shard.flush()
                collection.shard.close()

    def get(self, name: str) -> Collection:
        with self.guard:
            collection = self.collections.get(name)
        if collection is None:
            raise not_found(name)
        return collection

    def reading(self, name: str, run: Callable[[qe.EdgeShard], Any]) -> Any:
        collection = self.get(name)
        with collection.rw.shared():
            if collection.dropped:
                raise not_found(name)
            return _engine(lambda: run(collection.shard))

    def writing(self, name: str, operation: Callable[[int], Any], wait: bool) -> dict[str, Any]:
        """Apply ``operation(its operation id)``; the ids are taken in the order the writes are applied."""
        collection = self.get(name)
        with collection.writing, collection.rw.shared():
            if collection.dropped:
                raise not_found(name)
            operation_id = next(self.operations)
            _engine(lambda: collection.shard.update(operation(operation_id)))
        status = qm.UpdateStatus.COMPLETED if wait else qm.UpdateStatus.ACKNOWLEDGED
        return dump(qm.UpdateResult(operation_id=operation_id, status=status))

    # ------------------------------------------------------------- collection routes

    def list_collections(self) -> Any:
        with self.guard:
            names = sorted(self.collections)
        return dump(qm.CollectionsResponse(collections=[qm.CollectionDescription(name=n) for n in names]))

    def exists(self, name: str) -> Any:
        with self.guard:
            return dump(qm.CollectionExistence(exists=name in self.collections))

    def create(self, name: str, body: Any) -> Any:
        if not _NAME.fullmatch(name) or name in {".", ".."}:
            raise RestError(400, f"Wrong input: collection name `{name}` is not allowed here")
        request: qm.CreateCollection = parse(qm.CreateCollection, body or {})
        if request.quantization_config is not None:
            raise unsupported("quantization in a collection's creation")
        config = _edge_config(request)
        with self.guard:
            if name in self.collections:
                raise RestError(409, f"Wrong input: Collection `{name}` already exists!")
            folder = self.root / name
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            shard = _engine(lambda: qe.EdgeShard.create(str(folder / "shard"), config))
            created = dump(request)
            created_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            meta = folder / "meta.json"
            meta.write_text(json.dumps({"created": created, "created_at": created_at}), encoding="utf-8")
            self.collections[name] = Collection(name, folder, shard, created, created_at)
        return True

    def drop(self, name: str) -> Any:
        collection = self.get(name)
        with collection.writing, collection.rw.exclusive():
            if collection.dropped:
                raise not_found(name)
            collection.dropped = True
            collection.shard.close()
            with self.guard:
                self.collections.pop(name, None)
            (collection.folder / "meta.json").unlink()
        shutil.rmtree(collection.folder, ignore_errors=True)
        return True

    def info(self, name: str) -> Any:
        collection = self.get(name)
        shard_info = self.reading(name, lambda shard: shard.info())
        layout = json.loads((collection.folder / "shard" / "edge_config.json").read_text(encoding="utf-8"))
        created = collection.created
        dense = {
            key: qm.VectorParams(size=v["size"], distance=qm.Distance(v["distance"]))
            for key, v in (layout.get("vectors") or {}).items()
        }
        sparse = {
            key: qm.SparseVectorParams(modifier=qm.Modifier((v or {}).get("modifier") or "none"))
            for key, v in (layout.get("sparse_vectors") or {}).items()
        }
        params = qm.CollectionParams(
            vectors=dense[""] if set(dense) == {""} else dense, sparse_vectors=sparse or None,
            shard_number=1, replication_factor=1, write_consistency_factor=1,
            on_disk_payload=created.get("on_disk_payload", True),
        )  # fmt: skip
        hnsw = {**_HNSW_DEFAULTS, **{k: v for k, v in (created.get("hnsw_config") or {}).items() if v is not None}}
        optimizers = qm.OptimizersConfig(
            deleted_threshold=0.2, vacuum_min_vector_number=1000, default_segment_number=0, indexing_threshold=10_000,
            flush_interval_sec=5,
        )  # fmt: skip
        schema = {
            key: qm.PayloadIndexInfo(data_type=qm.PayloadSchemaType(_schema_name(i.data_type)), points=i.points)
            for key, i in shard_info.payload_schema.items()
            if not key.startswith(_BOOL_MIRROR)
        }
        info = qm.CollectionInfo(
            status=qm.CollectionStatus.GREEN, optimizer_status=qm.OptimizersStatusOneOf.OK,
            indexed_vectors_count=shard_info.indexed_vectors_count, points_count=shard_info.points_count,
            segments_count=shard_info.segments_count, payload_schema=schema,
            config=qm.CollectionConfig(
                params=params, hnsw_config=qm.HnswConfig(**hnsw), optimizer_config=optimizers,
                wal_config=qm.WalConfig(wal_capacity_mb=32, wal_segments_ahead=0),
            ),
        )  # fmt: skip
        return {**dump(info), "created_at": collection.created_at}

    def create_index(self, name: str, body: Any, wait: bool) -> Any:
        request: qm.CreateFieldIndex = parse(qm.CreateFieldIndex, body)
        schema = _edge_schema(request.field_schema)
        if _is_bool(request.field_schema):  # the mirror that boolean filters match is indexed too
            mirror = _BOOL_MIRROR + request.field_name
            self.writing(
                name, lambda _: qe.UpdateOperation.create_field_index(mirror, qe.PayloadSchemaType.Keyword), wait
            )
        return self.writing(name, lambda _: qe.UpdateOperation.create_field_index(request.field_name, schema), wait)

    # ------------------------------------------------------------- point routes

    def upsert(self, name: str, body: Any, wait: bool) -> Any:
        request = parse(qm.PointInsertOperations, body)
        if request.shard_key is not None:
            raise unsupported("shard keys")
        if isinstance(request, qm.PointsBatch):
            batch = request.batch
            if isinstance(batch.vectors, dict):
                vectors = [{k: column[i] for k, column in batch.vectors.items()} for i in range(len(batch.ids))]
            else:
                vectors = list(batch.vectors)
            payloads = batch.payloads or [None] * len(batch.ids)
            given = list(zip(batch.ids, vectors, payloads, strict=True))
        else:
            given = [(p.id, p.vector, p.payload) for p in request.points]
        condition = edge_filter(request.update_filter) if isinstance(request, qm.PointsList) else None
        mode = request.update_mode if isinstance(request, qm.PointsList) else None
        update_mode = getattr(qe.UpdateMode, {"upsert": "Upsert", "insert_only": "InsertOnly",
                                              "update_only": "UpdateOnly"}[mode.value]) if mode else None  # fmt: skip
        return self.writing(
            name,
            lambda version: qe.UpdateOperation.upsert_points(
                [edge_point(*point, version=version) for point in given], condition=condition, update_mode=update_mode
            ),
            wait,
        )

    def delete_points(self, name: str, body: Any, wait: bool) -> Any:
        request = parse(qm.PointsSelector, body)
        if request.shard_key is not None:
            raise unsupported("shard keys")
        if isinstance(request, qm.PointIdsList):
            operation = qe.UpdateOperation.delete_points([_point_id(i) for i in request.points])
        else:
            operation = qe.UpdateOperation.delete_points_by_filter(edge_filter(request.filter) or qe.Filter())
        return self.writing(name, lambda _: operation, wait)

    def count(self, name: str, body: Any) -> Any:
        request: qm.CountRequest = parse(qm.CountRequest, body or {})
        exact = True if request.exact is None else request.exact
        found = self.reading(name, lambda s: s.count(qe.CountRequest(exact=exact, filter=edge_filter(request.filter))))
        return dump(qm.CountResult(count=found))

    def scroll(self, name: str, body: Any) -> Any:
        request: qm.ScrollRequest = parse(qm.ScrollRequest, body or {})
        if request.order_by is not None or request.shard_key is not None:
            raise unsupported("scroll with order_by or shard keys")
        with_vector = request.with_vector if request.with_vector is not None else False
        payload, shown = edge_with_payload(request.with_payload, True)
        edge_request = qe.ScrollRequest(
            offset=_point_id(request.offset) if request.offset is not None else None,
            limit=request.limit if request.limit is not None else 10, filter=edge_filter(request.filter),
            with_payload=payload, with_vector=with_vector,
        )  # fmt: skip
        records, offset = self.reading(name, lambda shard: shard.scroll(edge_request))
        result = qm.ScrollResult(
            points=[rest_record(r, with_vector, shown) for r in records],
            next_page_offset=rest_id(offset) if offset is not None else None,
        )
        return dump(result)

    def query(self, name: str, body: Any) -> Any:
        request: qm.QueryRequest = parse(qm.QueryRequest, body or {})
        if request.lookup_from is not None or request.shard_key is not None:
            raise unsupported("lookup_from and shard keys")
        with_vector = request.with_vector if request.with_vector is not None else False
        payload, shown = edge_with_payload(request.with_payload, False)
        edge_request = qe.QueryRequest(
            limit=request.limit if request.limit is not None else 10, offset=request.offset,
            query=edge_query(request.query, request.using), prefetches=edge_prefetch(request.prefetch),
            with_vector=with_vector, with_payload=payload,
            filter=edge_filter(request.filter), score_threshold=request.score_threshold,
            params=edge_params(request.params),
        )  # fmt: skip
        points = self.reading(name, lambda shard: shard.query(edge_request))
        scored = [
            qm.ScoredPoint(
                id=rest_id(p.id),
                version=(p.payload or {}).get(_VERSION, 0),
                score=p.score,
                payload=rest_payload(p.payload, shown),
                vector=rest_vector(p.vector) if with_vector else None,
            )
            for p in points
        ]
        return dump(qm.QueryResponse(points=scored))


def _engine(run: Callable[[], Any]) -> Any:
    """An Edge call; the engine's refusal (a wrong dimension, an unknown vector name) is Qdrant's 400."""
    try:
        return run()
    except RestError:
        raise
    except Exception as exc:  # qdrant-edge-py raises plain Exception with the engine's message
        raise RestError(400, f"Wrong input: {exc}") from None


def _edge_config(request: qm.CreateCollection) -> qe.EdgeConfig:
    vectors: Any = None
    if isinstance(request.vectors, qm.VectorParams):
        vectors = _edge_vector_params(request.vectors)
    elif request.vectors:
        vectors = {key: _edge_vector_params(v) for key, v in request.vectors.items()}
    sparse = None
    if request.sparse_vectors:
        sparse = {
            key: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if v.modifier is qm.Modifier.IDF else None)
            for key, v in request.sparse_vectors.items()
        }
    given = request.hnsw_config.model_dump(exclude_none=True) if request.hnsw_config else {}
    hnsw = {**_HNSW_DEFAULTS, **{k: v for k, v in given.items() if k in _HNSW_DEFAULTS}}
    return qe.EdgeConfig(
        vectors=vectors, sparse_vectors=sparse, on_disk_payload=request.on_disk_payload,
        hnsw_config=qe.HnswIndexConfig(**hnsw),
    )  # fmt: skip


def _edge_vector_params(params: qm.VectorParams) -> qe.EdgeVectorParams:
    if params.multivector_config is not None or params.quantization_config is not None:
        raise unsupported("multivectors and quantization")
    return qe.EdgeVectorParams(size=params.size, distance=_DISTANCES[params.distance.value], on_disk=params.on_disk)


def _is_bool(schema: Any) -> bool:
    return schema == qm.PayloadSchemaType.BOOL or isinstance(schema, qm.BoolIndexParams)


def _edge_schema(schema: Any) -> Any:
    if isinstance(schema, qm.PayloadSchemaType):
        return _SCHEMA_TYPES[schema.value]
    if isinstance(schema, qm.KeywordIndexParams):
        return qe.KeywordIndexParams(is_tenant=schema.is_tenant, on_disk=schema.on_disk)
    if isinstance(schema, qm.IntegerIndexParams):
        return qe.IntegerIndexParams(
            lookup=schema.lookup, range=schema.range, is_principal=schema.is_principal, on_disk=schema.on_disk
        )
    if isinstance(schema, qm.BoolIndexParams):
        return qe.PayloadSchemaType.Bool
    raise unsupported(f"payload index parameters {type(schema).__name__}")


def _schema_name(data_type: Any) -> str:
    return str(data_type).rsplit(".", 1)[-1].lower()


# ---------------------------------------------------------------------------------------------- the app


def _wait(request: Request) -> bool:
    return request.query_params.get("wait", "false").lower() == "true"


def create_app(root: Path, api_key: str | None = None) -> Starlette:
    server = Server(root, api_key)

    def handler(run: Callable[[Server, Request, str, Any], Any], *, has_body: bool = False) -> Callable[..., Any]:
        async def endpoint(request: Request) -> Response:
            started = time.monotonic()
            name = request.path_params.get("name", "")
            try:
                body = None
                if has_body:
                    raw = await request.body()
                    try:
                        body = json.loads(raw) if raw else None
                    except json.JSONDecodeError as exc:
                        raise RestError(400, f"Json deserialize error: {exc}") from None
                # Edge calls block: they run in the thread pool, so one request never holds up the others.
                result = await run_in_threadpool(run, server, request, name, body)
                return JSONResponse({"result": result, "status": "ok", "time": time.monotonic() - started})
            except RestError as exc:
                return error(exc.status, exc.message, started)
            except Exception as exc:  # a bug here: Qdrant's 500, the cause in the body for the failing test to show
                return error(500, f"Service internal error: {type(exc).__name__}: {exc}", started)

        return endpoint

    def error(status: int, message: str, started: float) -> JSONResponse:
        return JSONResponse({"status": {"error": message}, "time": time.monotonic() - started}, status_code=status)

    async def root_info(request: Request) -> Response:
        return JSONResponse({"title": "qdrant - vector search engine", "version": VERSION})

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("healthz check passed")

    async def not_implemented(request: Request) -> Response:
        return error(501, f"Not implemented by the test server (tests/qdrant_rest.py): {request.method} "
                     f"{request.url.path}", time.monotonic())  # fmt: skip

    c = "/collections/{name}"
    # (method, path, what it runs, whether it reads a JSON body): the calls chunkbench's server engine makes.
    table: list[tuple[str, str, Callable[[Server, Request, str, Any], Any], bool]] = [
        ("GET", "/collections", lambda s, r, n, b: s.list_collections(), False),
        ("GET", c, lambda s, r, n, b: s.info(n), False),
        ("PUT", c, lambda s, r, n, b: s.create(n, b), True),
        ("DELETE", c, lambda s, r, n, b: s.drop(n), False),
        ("GET", f"{c}/exists", lambda s, r, n, b: s.exists(n), False),
        ("PUT", f"{c}/index", lambda s, r, n, b: s.create_index(n, b, _wait(r)), True),
        ("PUT", f"{c}/points", lambda s, r, n, b: s.upsert(n, b, _wait(r)), True),
        ("POST", f"{c}/points/delete", lambda s, r, n, b: s.delete_points(n, b, _wait(r)), True),
        ("POST", f"{c}/points/count", lambda s, r, n, b: s.count(n, b), True),
        ("POST", f"{c}/points/scroll", lambda s, r, n, b: s.scroll(n, b), True),
        ("POST", f"{c}/points/query", lambda s, r, n, b: s.query(n, b), True),
    ]
    routes = [Route("/", root_info, methods=["GET"]), Route("/healthz", healthz, methods=["GET"])]
    routes += [Route(path, handler(run, has_body=body), methods=[method]) for method, path, run, body in table]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        server.close()  # flushes every shard: a stopped server leaves its folder whole

    app = Starlette(routes=routes, lifespan=lifespan)

    async def api_key_and_unknown_routes(request: Request, call_next: Callable[[Request], Any]) -> Response:
        if server.api_key is not None and request.url.path not in {"/", "/healthz"}:  # open on Qdrant too
            bearer = request.headers.get("authorization", "")
            given = request.headers.get("api-key") or (bearer[7:] if bearer.lower().startswith("bearer ") else None)
            # Qdrant's auth middleware answers 401 with a plain-text body, a missing key and a wrong one alike (403
            # is its answer to a valid JWT without access, which this server has no notion of).
            if given is None:
                return PlainTextResponse("Must provide an API key or an Authorization bearer token", status_code=401)
            if given != server.api_key:
                return PlainTextResponse("Invalid API key or JWT", status_code=401)
        response = await call_next(request)
        # The router's own 404/405 (plain text) means no route here: 501, so a new client call is noticed. A missing
        # collection's 404 is JSON, from a route.
        if response.status_code in (404, 405) and response.headers.get("content-type", "").startswith("text/plain"):
            return await not_implemented(request)
        return response

    app.add_middleware(BaseHTTPMiddleware, dispatch=api_key_and_unknown_routes)
    app.state.server = server
    return app


@contextmanager
def running(path: Path, *, api_key: str | None = None, timeout_s: float = 60) -> Iterator[str]:
    """This server in a child process on a free loopback port, over the Edge folder ``path``; yields its URL.

    A child, not a thread: it owns its folder as a Qdrant server does, and the test process stays free to open an
    embedded Edge store of its own. Its log goes to ``<path>.log`` (a pipe nobody reads would fill and block it).
    It is stopped with SIGTERM (shards flushed and closed) at the end."""
    import httpx

    from netutil import free_port

    here = Path(__file__).resolve().parent
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here.parent / "src"), str(here)])}
    log_path = path.with_name(path.name + ".log")
    for _attempt in range(3):  # the free port may be taken between the probe and the bind
        port = free_port()
        command = [sys.executable, str(here / "qdrant_rest.py"), "--path", str(path), "--port", str(port),
                   "--exit-with-parent"]  # fmt: skip
        with log_path.open("wb") as log:
            child = subprocess.Popen(
                [*command, *(["--api-key", api_key] if api_key else [])], env=environment,
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout_s
        while child.poll() is None and time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        if child.poll() is None and time.monotonic() < deadline:
            break
        child.kill()
        child.wait()
        logged = log_path.read_text(encoding="utf-8", errors="replace")
        if "address already in use" not in logged.lower():
            raise RuntimeError(f"the Qdrant REST test server did not start: {logged[-2000:]}")
    else:
        raise RuntimeError("the Qdrant REST test server found no free port")
    try:
        yield url
    finally:
        child.terminate()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, required=True, help="the folder of the Edge shards (this process owns it)")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--exit-with-parent", action="store_true", help="stop when the process that started it ends")
    arguments = parser.parse_args()
    app = create_app(arguments.path, arguments.api_key)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=arguments.port, log_level="warning",
                                           access_log=False))  # fmt: skip
    if arguments.exit_with_parent:
        # A test run killed outright (no fixture teardown) must not leave a server behind: once the parent is gone
        # (this process re-parented), stop as on SIGTERM, shards flushed.
        parent = os.getppid()

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1)
            server.should_exit = True

        threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
    server.run()


if __name__ == "__main__":
    main()
