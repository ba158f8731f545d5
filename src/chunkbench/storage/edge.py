"""The embedded vector engine: Qdrant Edge (``qdrant-edge-py``), the Qdrant engine itself, in this process.

One Edge shard per collection (strategy × Corpus model), under ``Settings.qdrant_path``
(``{data_dir}/qdrant-edge``)::

    .lock                        held (flock) while a process has the folder open: one process per folder
    collections/<name>.json      the collection: which shard folder holds it, points written since its HNSW build
    shards/<name>.<token>/       an Edge shard (edge_config.json, wal/, segments/)

A collection's JSON file is replaced atomically (``os.replace``) when an HNSW build swaps in a new shard folder;
a shard folder no JSON file names is left over from a crash (a build, a migration, a delete) and is removed at
the next open. Searches are exact unless a query asks otherwise (serving) and the shard has its graph
(:mod:`chunkbench.storage.edge_index` builds it in a child process, off this process's GIL).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

import qdrant_edge as qe

from chunkbench.config import Settings
from chunkbench.errors import ChunkbenchError, VectorStoreError
from chunkbench.storage.edge_index import HnswBuilder, ReadWriteLock
from chunkbench.storage.engine import (
    EnginePoint,
    Layout,
    VectorEngine,
    VectorQuery,
    fusion_refused,
    missing_collection,
)
from chunkbench.storage.points import DENSE_VECTOR, SPARSE_VECTOR, PointFilter, QueryMode

COLLECTIONS = "collections"
SHARDS = "shards"
_SCROLL_PAGE = 512
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
# Below this many KB of vectors a (filtered) search scans instead of walking the graph: Qdrant's default.
FULL_SCAN_KB = 10_000


def edge_filter(where: PointFilter | None) -> qe.Filter:
    """``where`` as an Edge filter (None: every point)."""
    if where is None:
        return qe.Filter()
    must: list[Any] = [qe.FieldCondition(key="tenant_id", match=qe.MatchValue(where.tenant_id))]
    if where.document_ids is not None:
        documents = list(where.document_ids)
        match = qe.MatchValue(documents[0]) if len(documents) == 1 else qe.MatchAny(documents)
        must.append(qe.FieldCondition(key="document_id", match=match))
    if not where.include_parents:
        # qdrant-edge-py 0.9 matches no boolean value (MatchValue(False) and MatchValue(True) find nothing, with or
        # without a bool index): "not a parent" is "has a dense vector", which every non-parent has and no parent.
        must.append(qe.HasVectorCondition(DENSE_VECTOR))
    if where.point_ids is not None:
        must.append(qe.HasIdCondition(set(where.point_ids)))
    if where.chunk_indices is not None:
        must.append(qe.FieldCondition(key="chunk_index", match=qe.MatchAny(list(where.chunk_indices))))
    return qe.Filter(must=must)


def edge_point(point: EnginePoint) -> qe.Point:
    vectors: dict[str, Any] = dict(point.dense)
    vectors.update({key: qe.SparseVector(list(i), list(v)) for key, (i, v) in point.sparse.items()})
    return qe.Point(id=point.id, vector=vectors, payload=point.payload)


def engine_point(record: Any) -> EnginePoint:
    dense: dict[str, list[float]] = {}
    sparse: dict[str, tuple[list[int], list[float]]] = {}
    vectors = record.vector if isinstance(record.vector, dict) else ({"": record.vector} if record.vector else {})
    for key, vector in vectors.items():
        if isinstance(vector, qe.SparseVector):
            sparse[key] = (list(vector.indices), [float(v) for v in vector.values])
        else:
            dense[key] = list(vector)
    return EnginePoint(id=str(record.id), payload=dict(record.payload or {}), dense=dense, sparse=sparse)


def read_layout(directory: Path) -> Layout:
    """A shard's vectors, from the ``edge_config.json`` Edge keeps in its folder."""
    config = json.loads((directory / "edge_config.json").read_text(encoding="utf-8"))
    return Layout(
        dense={key: (int(v["size"]), str(v["distance"]).lower()) for key, v in (config.get("vectors") or {}).items()},
        sparse={key: (v or {}).get("modifier") for key, v in (config.get("sparse_vectors") or {}).items()},
    )


@dataclass(eq=False)
class Shard:
    """An open collection. Readers hold ``rw`` shared; writers hold ``mutate`` and ``rw`` shared; an index build
    holds ``mutate`` while it copies the folder, and ``rw`` exclusively only to swap the handle."""

    name: str
    directory: Path
    handle: qe.EdgeShard
    pending: int  # points written since the last HNSW build (or since creation)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. migrated_from
    rw: ReadWriteLock = field(default_factory=ReadWriteLock)
    mutate: threading.Lock = field(default_factory=threading.Lock)
    replay: list[Any] | None = None  # writes made while an index build runs, applied to the built copy
    dropped: bool = False


class EdgeEngine(VectorEngine):
    """Qdrant Edge shards in a folder that this process alone opens (see the module docstring)."""

    is_local = True

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = settings.qdrant_path
        self.location = str(self.root)
        try:
            for folder in (self.root / COLLECTIONS, self.root / SHARDS):
                folder.mkdir(parents=True, exist_ok=True)
            self._lock_file = self._lock_folder()
        except OSError as exc:
            raise VectorStoreError(f"Could not open the embedded Qdrant store at {self.root}: {exc}") from exc
        self._shards: dict[str, Shard] = {}
        self._guard = threading.Lock()
        self._closed = False
        self._collect_garbage()
        self.indexer = HnswBuilder(self, min_points=settings.qdrant_hnsw_min_points)
        self.migration: Any = None  # storage.migration.MigrationReport when opening migrated old local-mode data

    def _lock_folder(self) -> IO[str]:
        handle = (self.root / ".lock").open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise VectorStoreError(
                f"The embedded Qdrant store at {self.root} is in use by another process (for example a running "
                "chunkbench server). Stop that process, or run a Qdrant server and point every chunkbench process "
                "at it with CHUNKBENCH_QDRANT_URL.",
                path=str(self.root),
            ) from None
        return handle

    def _collect_garbage(self) -> None:
        """Remove what a crash left: shard folders no collection names, half-written collection files."""
        named = set()
        for pointer in (self.root / COLLECTIONS).iterdir():
            if pointer.suffix == ".json":
                named.add(json.loads(pointer.read_text(encoding="utf-8"))["shard"])
            else:
                pointer.unlink()
        for folder in (self.root / SHARDS).iterdir():
            if folder.name not in named:
                shutil.rmtree(folder, ignore_errors=True)

    # ----------------------------------------------------------------- shards and their files

    def _pointer(self, name: str) -> Path:
        if not _SAFE_NAME.fullmatch(name) or name.startswith("."):
            raise VectorStoreError(f"'{name}' is not a collection name (letters, digits, '.', '_' and '-' only).")
        return self.root / COLLECTIONS / f"{name}.json"

    def _save(self, shard: Shard) -> None:
        """Write the collection's file atomically: from here on ``shard.directory`` is the collection."""
        pointer = self._pointer(shard.name)
        temporary = pointer.with_suffix(".tmp")
        state = {"shard": shard.directory.name, "pending": shard.pending, **shard.extra}
        temporary.write_text(json.dumps(state), encoding="utf-8")
        os.replace(temporary, pointer)

    def _shard(self, name: str) -> Shard:
        if self._closed:
            raise VectorStoreError("The embedded vector store is closed.")
        pointer = self._pointer(name)
        with self._guard:
            shard = self._shards.get(name)
            if shard is not None and not shard.dropped:
                return shard
            if not pointer.exists():
                raise missing_collection(name)
            state = json.loads(pointer.read_text(encoding="utf-8"))
            directory = self.root / SHARDS / state.pop("shard")
            with self._op("open", name):
                handle = qe.EdgeShard.load(str(directory))
            pending = int(state.pop("pending", 0))
            shard = self._shards[name] = Shard(name, directory, handle, pending, extra=state)
        if pending:
            self.indexer.note(name)  # written before a restart and never indexed: the builder decides
        return shard

    def collection_info(self, name: str) -> dict[str, Any]:
        """What the collection's file records besides its shard (``pending``, ``migrated_from``)."""
        pointer = self._pointer(name)
        if not pointer.exists():
            raise missing_collection(name)
        return json.loads(pointer.read_text(encoding="utf-8"))

    def new_shard_folder(self, name: str) -> Path:
        self._pointer(name)
        return self.root / SHARDS / f"{name}.{uuid.uuid4().hex[:12]}"

    def create_shard(self, name: str, config: qe.EdgeConfig, *, fill: Callable[[qe.EdgeShard], int] | None = None,
                     extra: dict[str, Any] | None = None) -> None:  # fmt: skip
        """Create collection ``name`` from ``config`` (``fill`` writes its points first and returns how many).

        The collection appears only once its shard is complete: a crash before leaves an unnamed folder.
        """
        directory = self.new_shard_folder(name)
        with self._guard:
            if self._pointer(name).exists():
                raise VectorStoreError(f"Collection '{name}' exists already.", collection=name)
        with self._op("create", name):
            handle = qe.EdgeShard.create(str(directory), config)
            try:
                if read_layout(directory).dense.get(DENSE_VECTOR):
                    for key, schema in (
                        ("tenant_id", qe.KeywordIndexParams(is_tenant=True)),
                        ("document_id", qe.PayloadSchemaType.Keyword),
                        ("chunk_index", qe.PayloadSchemaType.Integer),
                        ("is_parent", qe.PayloadSchemaType.Bool),
                    ):
                        handle.update(qe.UpdateOperation.create_field_index(key, schema))
                written = fill(handle) if fill is not None else 0
                handle.flush()
            except BaseException:
                handle.close()
                shutil.rmtree(directory, ignore_errors=True)
                raise
        shard = Shard(name, directory, handle, written, extra=dict(extra or {}))
        with self._guard:
            self._save(shard)
            self._shards[name] = shard
        if written:
            self.indexer.note(name)

    def edge_config(self, dimension: int) -> qe.EdgeConfig:
        """chunkbench's layout: named dense (cosine) + bm25 (IDF); HNSW from the settings, built by optimize()."""
        settings = self.settings
        return qe.EdgeConfig(
            vectors={DENSE_VECTOR: qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            hnsw_config=qe.HnswIndexConfig(
                m=settings.qdrant_hnsw_m,
                ef_construct=settings.qdrant_hnsw_ef_construct,
                full_scan_threshold=FULL_SCAN_KB,
            ),
            # optimize() indexes every segment it sees; *when* it runs is the builder's decision.
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1),
        )

    @contextmanager
    def _op(self, operation: str, collection: str | None = None) -> Iterator[None]:
        where = f" on collection '{collection}'" if collection else ""
        try:
            yield
        except ChunkbenchError:
            raise
        except Exception as exc:  # qdrant-edge-py raises plain Exception with the engine's message
            raise VectorStoreError(f"Qdrant Edge failed to {operation}{where}: {exc}") from exc

    @contextmanager
    def _reading(self, name: str, operation: str) -> Iterator[qe.EdgeShard]:
        shard = self._shard(name)
        with shard.rw.shared():
            if shard.dropped:
                raise missing_collection(name)
            with self._op(operation, name):
                yield shard.handle

    def _write(self, name: str, operation: str, update: Any, *, points: int = 0) -> None:
        shard = self._shard(name)
        with shard.mutate, shard.rw.shared():
            if shard.dropped:
                raise missing_collection(name)
            with self._op(operation, name):
                shard.handle.update(update)
            if shard.replay is not None:
                shard.replay.append(update)
            if points:
                shard.pending += points
                self._save(shard)
        if points:
            self.indexer.note(name)

    # ----------------------------------------------------------------- VectorEngine

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.indexer.close()
        with self._guard:
            shards, self._shards = list(self._shards.values()), {}
        for shard in shards:
            with shard.mutate, shard.rw.exclusive():
                if not shard.dropped:
                    shard.dropped = True
                    shard.handle.close()
        self._lock_file.close()  # releases the flock

    def ping(self) -> None:
        self.names()

    def names(self) -> list[str]:
        if self._closed:
            raise VectorStoreError("The embedded vector store is closed.")
        return sorted(p.stem for p in (self.root / COLLECTIONS).glob("*.json"))

    def exists(self, name: str) -> bool:
        return self._pointer(name).exists()

    def create(self, name: str, dimension: int) -> None:
        self.create_shard(name, self.edge_config(dimension))

    def layout(self, name: str) -> Layout:
        shard = self._shard(name)
        with self._op("read the configuration", name):
            return read_layout(shard.directory)

    def drop(self, name: str) -> None:
        shard = self._shard(name)
        self.indexer.cancel(name)
        with shard.mutate, shard.rw.exclusive():
            shard.dropped = True
            with self._op("delete", name):
                shard.handle.close()
                self._pointer(name).unlink()
        with self._guard:
            if self._shards.get(name) is shard:
                del self._shards[name]
        shutil.rmtree(shard.directory, ignore_errors=True)

    def count(self, name: str, where: PointFilter | None = None) -> int:
        with self._reading(name, "count points") as handle:
            return handle.count(qe.CountRequest(exact=True, filter=edge_filter(where)))

    def upsert(self, name: str, points: Sequence[EnginePoint]) -> None:
        operation = qe.UpdateOperation.upsert_points([edge_point(p) for p in points])
        self._write(name, "upsert points", operation, points=len(points))

    def delete_ids(self, name: str, ids: Sequence[str]) -> None:
        self._write(name, "delete points", qe.UpdateOperation.delete_points(list(ids)))

    def delete_where(self, name: str, where: PointFilter | None) -> None:
        self._write(name, "delete points", qe.UpdateOperation.delete_points_by_filter(edge_filter(where)))

    def scroll(
        self, name: str, where: PointFilter | None = None, *, with_payload: bool = True, with_vectors: bool = False
    ) -> list[EnginePoint]:
        found: list[EnginePoint] = []
        offset: Any = None
        point_filter = edge_filter(where)
        while True:
            request = qe.ScrollRequest(
                offset=offset, limit=_SCROLL_PAGE, filter=point_filter, with_payload=with_payload,
                with_vector=with_vectors,
            )  # fmt: skip
            with self._reading(name, "scroll points") as handle:
                page, offset = handle.scroll(request)
            found.extend(engine_point(record) for record in page)
            if offset is None:
                return found

    def _params(self, query: VectorQuery, *, sparse: bool) -> qe.SearchParams:
        idf = qe.IdfParams(corpus=edge_filter(query.idf_corpus)) if sparse and query.idf_corpus is not None else None
        if query.exact:
            return qe.SearchParams(exact=True, idf=idf)
        return qe.SearchParams(hnsw_ef=self.settings.qdrant_hnsw_ef_search, idf=idf)

    def query(self, name: str, query: VectorQuery) -> list[tuple[dict[str, Any], float]]:
        # A search by a named vector finds only points that have it, so parents (no vectors) are out already; the
        # has-vector condition that stands for "no parents" would double an exact search's time (measured).
        point_filter = edge_filter(replace(query.where, include_parents=True))
        with_payload: Any = list(query.payload_fields) if query.payload_fields is not None else True
        dense = qe.Query.Nearest(query.dense, using=DENSE_VECTOR) if query.dense is not None else None
        sparse = qe.Query.Nearest(qe.SparseVector(*query.sparse), using=SPARSE_VECTOR) if query.sparse else None
        common: dict[str, Any] = {"limit": query.limit, "filter": point_filter, "with_payload": with_payload}
        if query.mode is QueryMode.DENSE:
            request = qe.QueryRequest(query=dense, params=self._params(query, sparse=False), **common)
        elif query.mode is QueryMode.SPARSE:
            request = qe.QueryRequest(query=sparse, params=self._params(query, sparse=True), **common)
        else:
            raise fusion_refused()
        with self._reading(name, "search") as handle:
            points = handle.query(request)
        return [(dict(p.payload or {}), float(p.score)) for p in points]

    # ----------------------------------------------------------------- HNSW builds (driven by edge_index)

    def needs_index(self, shard: Shard) -> bool:
        """A build is due once the shard has ``qdrant_hnsw_min_points`` dense vectors and the points written since
        the last build reach that many or a tenth of the shard, whichever is more: the part outside the graph,
        searched exhaustively, then never costs more than an exact search of ``qdrant_hnsw_min_points`` points."""
        if DENSE_VECTOR not in read_layout(shard.directory).dense:
            return False
        dense = shard.handle.count(qe.CountRequest(filter=qe.Filter(must=[qe.HasVectorCondition(DENSE_VECTOR)])))
        threshold = self.indexer.min_points
        return dense >= threshold and shard.pending >= max(threshold, dense // 10)

    def build_index(self, name: str, run_child: Callable[[Path], bool]) -> bool:
        """Copy the shard, let ``run_child`` build the graph in the copy, replay the writes made meanwhile, swap.

        Readers never wait on the build; writers wait while the folder is copied and the copy loaded.
        """
        try:
            shard = self._shard(name)
        except VectorStoreError:
            return False  # deleted (or the store closed) since the build was due
        with shard.mutate:
            if shard.dropped or not self.needs_index(shard):
                return False
            shard.handle.flush()
            target = self.new_shard_folder(name)
            shutil.copytree(shard.directory, target)
            shard.replay, pending_at_copy = [], shard.pending
        built = False
        try:
            built = run_child(target)
        finally:
            if not built:
                with shard.mutate:
                    shard.replay = None
                shutil.rmtree(target, ignore_errors=True)
        if not built:
            return False
        with shard.mutate:
            if shard.dropped:
                shutil.rmtree(target, ignore_errors=True)
                return False
            fresh = qe.EdgeShard.load(str(target))
            for update in shard.replay or []:
                fresh.update(update)
            fresh.flush()
            with shard.rw.exclusive():
                old, old_directory = shard.handle, shard.directory
                shard.handle, shard.directory = fresh, target
                shard.pending -= pending_at_copy  # what was written during the build is outside the new graph
                shard.replay = None
                self._save(shard)
            old.close()
        shutil.rmtree(old_directory, ignore_errors=True)
        return True
