"""Qdrant Edge as the embedded engine: HNSW builds off the request path, exact vs graph search, per-tenant IDF,
what a crash leaves behind, and the finding that shaped the builds (``optimize()`` holds the GIL)."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import qdrant_edge as qe

from chunkbench.chunking.base import Chunk
from chunkbench.config import Settings
from chunkbench.embedding.registry import get_spec
from chunkbench.embedding.sparse import Bm25Encoder
from chunkbench.models import StrategyName
from chunkbench.retrieval import pipeline
from chunkbench.retrieval.schemas import ServingConfig
from chunkbench.retrieval.serving import serving_plan
from chunkbench.storage import edge_index
from chunkbench.storage.edge import SHARDS, EdgeEngine
from chunkbench.storage.engine import VectorQuery
from chunkbench.storage.points import PointFilter, QueryMode, collection_name
from chunkbench.storage.vectors import VectorStore
from chunkgen import chunks_from_texts
from stand_in import LOCAL_MODE_WARNINGS, server_stand_in

pytestmark = LOCAL_MODE_WARNINGS

DIM = 16
MODEL = "local:test-model"
FIXED = StrategyName.FIXED_SIZE
NAME = collection_name(FIXED, MODEL)
ENCODER = Bm25Encoder()


def clustered(count: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 8 centres (real embeddings cluster; i.i.d. random vectors are adversarial for HNSW)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(8, DIM))
    matrix = centres[rng.integers(0, 8, count)] + 0.35 * rng.normal(size=(count, DIM))
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def put(store: VectorStore, document_id: str, texts: list[str], *, tenant: str = "t1", seed: int = 0) -> list[Chunk]:
    chunks = chunks_from_texts(document_id, texts)
    store.replace_document_chunks(
        FIXED, MODEL, DIM, tenant_id=tenant, chunks=chunks, dense=clustered(len(chunks), seed),
        sparse=ENCODER.encode_documents(texts),
    )  # fmt: skip
    return chunks


def fill(store: VectorStore, documents: int, per_document: int = 50) -> None:
    for number in range(documents):
        put(store, f"d{number}", [f"chunk {i} of document {number}" for i in range(per_document)], seed=number)


@pytest.fixture
def quick_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(edge_index, "QUIET_S", 0.2)


@pytest.fixture
def small_store(settings: Settings, quick_builds: None) -> Iterator[VectorStore]:
    """Edge with a graph from 200 searchable chunks on, built 0.2 s after writes pause."""
    settings.qdrant_hnsw_min_points = 200
    store = VectorStore(settings)
    try:
        yield store
    finally:
        store.close()


def edge(store: VectorStore) -> EdgeEngine:
    assert isinstance(store.engine, EdgeEngine)
    return store.engine


def search(store: VectorStore, vector: np.ndarray, *, exact: bool, top_k: int = 10) -> list[str]:
    rows = store.search(
        FIXED, MODEL, mode=QueryMode.DENSE, tenant_id="t1", document_id=None, top_k=top_k, dense=vector,
        sparse=None, exact=exact,
    )  # fmt: skip
    return [payload["chunk_id"] for payload, _ in rows]


# ---------------------------------------------------------------- HNSW builds


def test_small_collections_get_no_graph(settings: Settings, quick_builds: None) -> None:
    store = VectorStore(settings)  # the default threshold: 20,000 searchable chunks
    try:
        fill(store, 2)
        assert edge(store).indexer.wait_idle(10)
        assert edge(store).indexer.builds == 0
        assert edge(store).collection_info(NAME)["pending"] == 100
    finally:
        store.close()


def test_graph_is_built_after_bulk_writes_and_serving_search_agrees_with_exact(small_store: VectorStore) -> None:
    fill(small_store, 6)  # 300 chunks
    engine = edge(small_store)
    folder_before = engine.collection_info(NAME)["shard"]
    assert engine.indexer.wait_idle(60)
    assert engine.indexer.builds == 1
    info = engine.collection_info(NAME)
    assert info["shard"] != folder_before and info["pending"] == 0
    assert not (engine.root / SHARDS / folder_before).exists()  # the pre-build folder is gone
    for probe in clustered(5, seed=99):
        assert search(small_store, probe, exact=False) == search(small_store, probe, exact=True)
    assert small_store.count_document(FIXED, MODEL, tenant_id="t1", document_id="d5") == 50


@pytest.mark.slow
def test_a_build_never_blocks_requests_and_keeps_the_writes_made_meanwhile(
    small_store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The child waits 3 s before optimizing: requests meanwhile must not wait for it.
    monkeypatch.setattr(edge_index, "CHILD_SCRIPT", "import time\ntime.sleep(3)\n" + edge_index.CHILD_SCRIPT)
    fill(small_store, 6)
    engine = edge(small_store)
    deadline = time.monotonic() + 30
    while engine.indexer._child is None:  # the copy is taken and the child runs
        assert time.monotonic() < deadline
        time.sleep(0.02)
    started = time.perf_counter()
    assert len(search(small_store, clustered(1, seed=5)[0], exact=False)) == 10
    put(small_store, "late", ["written while the graph was being built"] * 3, seed=7)
    assert small_store.delete_document("t1", "d0") == 50
    assert time.perf_counter() - started < 2.5  # none of it waited for the build
    assert engine.indexer._child is not None  # the build was still running

    assert engine.indexer.wait_idle(60)
    assert engine.indexer.builds == 1
    # The swapped-in shard has the writes made during the build (replayed onto the copy).
    assert small_store.count_document(FIXED, MODEL, tenant_id="t1", document_id="late") == 3
    assert small_store.count_document(FIXED, MODEL, tenant_id="t1", document_id="d0") == 0
    assert engine.collection_info(NAME)["pending"] == 3  # outside the new graph


def test_deleting_a_collection_stops_its_build(small_store: VectorStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(edge_index, "CHILD_SCRIPT", "import time\ntime.sleep(30)\n" + edge_index.CHILD_SCRIPT)
    fill(small_store, 6)
    engine = edge(small_store)
    deadline = time.monotonic() + 30
    while engine.indexer._child is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    small_store.delete_collection(NAME)
    assert engine.indexer.wait_idle(10)
    assert engine.indexer.builds == 0
    assert list((engine.root / SHARDS).iterdir()) == []
    assert NAME not in {c["name"] for c in small_store.list_collections()}


def test_benchmarks_search_exactly_and_serving_faces_do_not(settings: Settings) -> None:
    corpus = get_spec(ServingConfig().corpus_model_id)
    plan = pipeline.make_plan(
        settings, question="q", scope=pipeline.Scope.corpus("t1"), strategy=FIXED, corpus=corpus, retriever="dense"
    )
    assert plan.exact is True  # the benchmark runner and `chunkbench eval` build plans this way
    assert serving_plan(settings, ServingConfig(), "q", tenant_id="t1").exact is False  # /api/query, /v1/query


def test_optimize_holds_the_gil_so_builds_run_in_a_child_process(tmp_path: Path) -> None:
    """The measurement behind edge_index: while ``optimize()`` runs in one thread, another Python thread barely
    runs (and a search from it waits for the whole build), so a build in a background thread would stall every
    request. If a later qdrant-edge-py releases the GIL here, this fails: builds could then move to a thread."""
    shard = qe.EdgeShard.create(
        str(tmp_path / "shard"),
        qe.EdgeConfig(
            vectors={"dense": qe.EdgeVectorParams(size=64, distance=qe.Distance.Cosine)},
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1),
        ),
    )
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(6000, 64)).astype(np.float32)
    shard.update(
        qe.UpdateOperation.upsert_points([qe.Point(id=i, vector={"dense": v.tolist()}) for i, v in enumerate(vectors)])
    )
    ticks = 0
    done = threading.Event()

    def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.005)

    def optimize() -> None:
        shard.optimize()
        done.set()

    builder = threading.Thread(target=optimize)
    started = time.perf_counter()
    builder.start()
    tick_thread = threading.Thread(target=ticker)
    tick_thread.start()
    builder.join()
    elapsed = time.perf_counter() - started
    tick_thread.join()
    shard.close()
    assert elapsed > 0.3, "the build was too quick to tell"
    assert ticks < 0.3 * elapsed / 0.005  # a free thread would tick ~every 5 ms


# ---------------------------------------------------------------- BM25 IDF per tenant


@pytest.fixture(params=["edge", "server"])
def any_store(request: pytest.FixtureRequest, settings: Settings) -> Iterator[VectorStore]:
    store = VectorStore(settings) if request.param == "edge" else server_stand_in(settings)
    try:
        yield store
    finally:
        store.close()


def test_bm25_idf_counts_only_the_tenants_own_documents(any_store: VectorStore) -> None:
    """Tenant A: "alpha" in one document of four, "bravo" in another; "alpha bravo" ranks A's alpha document first.
    Tenant B then adds 20 documents about alpha, in the same collection. Counted over every tenant's points,
    alpha's IDF would fall from 1.20 to 0.15 and A's ranking would flip (bravo's document first); counted over
    the tenant's own points (what search does), A's scores are identical to the last decimal before and after."""
    texts = ["alpha alpha report", "bravo report", "charlie report", "delta report"]
    for number, text in enumerate(texts):
        put(any_store, f"a{number}", [text], tenant="A", seed=number)
    query = ENCODER.encode_query("alpha bravo")

    def ranked(idf_corpus: PointFilter | None) -> list[tuple[str, float]]:
        where = PointFilter("A", include_parents=False)
        rows = any_store.engine.query(
            NAME,
            VectorQuery(QueryMode.SPARSE, where, limit=4, sparse=(query.indices, query.values), idf_corpus=idf_corpus),
        )
        return [(payload["document_id"], score) for payload, score in rows]

    def searched() -> list[tuple[str, float]]:
        rows = any_store.search(
            FIXED, MODEL, mode=QueryMode.SPARSE, tenant_id="A", document_id=None, top_k=4, dense=None, sparse=query
        )
        return [(payload["document_id"], score) for payload, score in rows]

    before = searched()
    assert [document for document, _ in before] == ["a0", "a1"]
    for number in range(20):
        put(any_store, f"b{number}", [f"alpha notes {number}"], tenant="B", seed=number)

    assert searched() == before  # A's own IDF: B's documents change nothing
    assert ranked(PointFilter("A")) == before
    collection_wide = ranked(None)
    assert [document for document, _ in collection_wide] == ["a1", "a0"]  # the flip per-tenant IDF prevents


# ---------------------------------------------------------------- crash leftovers


def test_what_a_crash_leaves_is_removed_at_the_next_open(settings: Settings) -> None:
    store = VectorStore(settings)
    put(store, "d1", ["kept"])
    root = edge(store).root
    store.close()
    (root / SHARDS / f"{NAME}.half-built").mkdir()  # a build or migration that never finished
    (root / "collections" / f"{NAME}.tmp").write_text("{", encoding="utf-8")
    reopened = VectorStore(settings)
    try:
        assert sorted(p.name for p in (root / SHARDS).iterdir()) == [edge(reopened).collection_info(NAME)["shard"]]
        assert not (root / "collections" / f"{NAME}.tmp").exists()
        assert reopened.count_document(FIXED, MODEL, tenant_id="t1", document_id="d1") == 1
    finally:
        reopened.close()
    shutil.rmtree(root)
