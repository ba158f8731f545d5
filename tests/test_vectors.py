"""The vector store and the BM25 sparse encoder.

The store's tests run on both engines: Qdrant Edge (the embedded default, a temporary folder per test) and the
server engine (qdrant-client), here over qdrant-client's in-process local mode (tests/stand_in.py says what that
does not cover): no Qdrant server can be installed on this machine.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import qdrant_edge as qe
from qdrant_client import models as qm

from chunkbench.chunking.base import Chunk
from chunkbench.config import Settings
from chunkbench.embedding.sparse import ZWNJ, Bm25Encoder, SparseEmbedding, token_index, tokenize
from chunkbench.errors import NotFoundError, VectorStoreError
from chunkbench.models import StrategyName
from chunkbench.storage.edge import EdgeEngine
from chunkbench.storage.engine import VectorQuery
from chunkbench.storage.points import (
    DENSE_VECTOR,
    SPARSE_VECTOR,
    PointFilter,
    QueryMode,
    collection_name,
    document_filter,
    parse_collection_name,
    point_id,
)
from chunkbench.storage.vectors import VectorStore, close_vector_stores, get_vector_store
from chunkgen import chunks_from_texts
from stand_in import LOCAL_MODE_WARNINGS

pytestmark = LOCAL_MODE_WARNINGS

DIM = 8
MODEL = "local:sentence-transformers/all-MiniLM-L6-v2"
FIXED = StrategyName.FIXED_SIZE
PARENT_CHILD = StrategyName.SEMANTIC_PARENT_CHILD
ENCODER = Bm25Encoder()
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
]


def point_ids(store: VectorStore, name: str) -> set[str]:
    return {p.id for p in store.engine.scroll(name, with_payload=False)}


def create_foreign_collection(store: VectorStore, name: str) -> None:
    """A collection with one unnamed cosine vector, made behind the store's back."""
    if isinstance(store.engine, EdgeEngine):
        store.engine.create_shard(
            name, qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine))
        )
    else:
        store.engine.client.create_collection(
            name, vectors_config=qm.VectorParams(size=DIM, distance=qm.Distance.COSINE)
        )


def make_chunks(
    document_id: str, count: int, *, strategy: StrategyName = FIXED, parents: int = 0, name: str = "doc.md"
) -> list[Chunk]:
    """``count`` children (each under parent ``i % parents`` when there are parents), then the parents."""
    texts = [f"{WORDS[index % len(WORDS)]} chunk {index} of {document_id}" for index in range(count)]
    return chunks_from_texts(
        document_id, texts, strategy=strategy, name=name,
        parents=[" ".join(texts[index::parents]) for index in range(parents)],
        heading_path=lambda index: ["Intro", f"Part {index // 2}"],
    )  # fmt: skip


def vectors(chunks: list[Chunk], seed: int = 0) -> tuple[np.ndarray, list[SparseEmbedding]]:
    children = [c for c in chunks if not c.is_parent]
    matrix = np.random.default_rng(seed).normal(size=(len(children), DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix, ENCODER.encode_documents(c.embedding_text for c in children)


def store_chunks(
    store: VectorStore, chunks: list[Chunk], *, tenant: str = "t1", strategy: StrategyName = FIXED, seed: int = 0
) -> np.ndarray:
    dense, sparse = vectors(chunks, seed)
    store.replace_document_chunks(strategy, MODEL, DIM, tenant_id=tenant, chunks=chunks, dense=dense, sparse=sparse)
    return dense


# ---------------------------------------------------------------- naming and collections


def test_collection_name_sanitises_model_ids() -> None:
    assert collection_name(FIXED, MODEL) == "fixed_size__local-sentence-transformers-all-MiniLM-L6-v2_collection"
    assert collection_name("recursive", "ollama:nomic embed@v1.5") == "recursive__ollama-nomic-embed-v1.5_collection"
    assert parse_collection_name(collection_name(PARENT_CHILD, "a:b")) == ("semantic_parent_child", "a-b")
    assert parse_collection_name("someone_elses") == (None, None)
    with pytest.raises(VectorStoreError, match="Unknown strategy"):
        collection_name("nonsense", MODEL)


def test_ensure_collection_layout_and_dimension_clash(store: VectorStore) -> None:
    name = store.ensure_collection(FIXED, MODEL, DIM)
    assert store.ensure_collection(FIXED, MODEL, DIM) == name  # idempotent
    layout = store.engine.layout(name)
    assert layout.dense[DENSE_VECTOR][0] == DIM
    assert layout.dense[DENSE_VECTOR][1] == "cosine"
    assert layout.sparse[SPARSE_VECTOR] == "idf"
    with pytest.raises(VectorStoreError, match=r"8-dimensional.*produces 16") as info:
        store.ensure_collection(FIXED, MODEL, 16)
    assert MODEL in info.value.message


def test_foreign_layout_is_refused(store: VectorStore) -> None:
    name = collection_name(FIXED, MODEL)
    create_foreign_collection(store, name)
    with pytest.raises(VectorStoreError, match="Delete it"):
        store.ensure_collection(FIXED, MODEL, DIM)


# ---------------------------------------------------------------- replace, scroll, idempotence


def test_replace_then_scroll_returns_exact_payloads_in_order(store: VectorStore) -> None:
    chunks = make_chunks("d1", 5)
    chunks[2] = replace(chunks[2], enriched_content="Context: the intro. " + chunks[2].text)
    store_chunks(store, chunks[::-1])  # written out of order, read back in order
    payloads = store.scroll_document(FIXED, MODEL, tenant_id="t1", document_id="d1")
    assert [p["chunk_index"] for p in payloads] == [0, 1, 2, 3, 4]
    first = payloads[0]
    assert first == {
        "chunk_id": "fixed_size_d1_000000",
        "document_id": "d1",
        "document_name": "doc.md",
        "strategy_name": "fixed_size",
        "chunk_index": 0,
        "text": chunks[0].text,
        "start_index": chunks[0].start_index,
        "end_index": chunks[0].end_index,
        "token_count": chunks[0].token_count,
        "character_count": chunks[0].character_count,
        "heading_path": ["Intro", "Part 0"],
        "parent_id": None,
        "is_parent": False,
        "tenant_id": "t1",
        "embedding_model_id": MODEL,
        "enriched": False,
    }
    assert payloads[2]["enriched"] is True
    assert payloads[2]["enriched_content"] == chunks[2].enriched_content
    assert store.count_document(FIXED, MODEL, tenant_id="t1", document_id="d1") == 5


def test_rerun_removes_stale_chunks_and_same_run_is_idempotent(store: VectorStore) -> None:
    name = collection_name(FIXED, MODEL)
    store_chunks(store, make_chunks("d1", 6))
    ids_before = point_ids(store, name)

    dense, sparse = vectors(make_chunks("d1", 6))
    result = store.replace_document_chunks(
        FIXED, MODEL, DIM, tenant_id="t1", chunks=make_chunks("d1", 6), dense=dense, sparse=sparse
    )
    assert (result.upserted, result.removed) == (6, 0)
    assert point_ids(store, name) == ids_before

    fewer = make_chunks("d1", 3)
    dense, sparse = vectors(fewer, seed=1)
    result = store.replace_document_chunks(FIXED, MODEL, DIM, tenant_id="t1", chunks=fewer, dense=dense, sparse=sparse)
    assert (result.upserted, result.removed) == (3, 3)
    assert store.engine.count(name) == 3
    assert point_ids(store, name) == {point_id(c.chunk_id) for c in fewer}

    empty = store.replace_document_chunks(
        FIXED, MODEL, DIM, tenant_id="t1", chunks=[], dense=np.zeros((0, DIM)), sparse=[], document_id="d1"
    )
    assert empty.removed == 3
    assert store.engine.count(name) == 0


def test_row_mismatches_are_refused_before_writing(store: VectorStore) -> None:
    chunks = make_chunks("d1", 3)
    dense, sparse = vectors(chunks)
    name = collection_name(FIXED, MODEL)
    bad_calls = [
        {"dense": dense[:2], "sparse": sparse},
        {"dense": dense, "sparse": sparse[:2]},
        {"dense": np.zeros((3, 4), dtype=np.float32), "sparse": sparse},
        {"dense": np.full((3, DIM), np.nan, dtype=np.float32), "sparse": sparse},
        {"dense": dense, "sparse": sparse, "chunks": chunks + make_chunks("d2", 1)},
        {"dense": dense, "sparse": sparse, "chunks": make_chunks("d1", 3, strategy=StrategyName.RECURSIVE)},
        {"dense": dense, "sparse": sparse, "chunks": [chunks[0], chunks[0], chunks[1]]},
        {"dense": np.zeros((0, DIM)), "sparse": [], "chunks": []},
    ]
    for call in bad_calls:
        kwargs = {"chunks": chunks, **call}
        with pytest.raises(VectorStoreError):
            store.replace_document_chunks(FIXED, MODEL, DIM, tenant_id="t1", **kwargs)
    assert not store.engine.exists(name)


# ---------------------------------------------------------------- parents, neighbours, tenants


def test_parents_have_no_vectors_and_are_never_searched(store: VectorStore) -> None:
    chunks = make_chunks("d1", 4, strategy=PARENT_CHILD, parents=2)
    dense = store_chunks(store, chunks, strategy=PARENT_CHILD)
    name = collection_name(PARENT_CHILD, MODEL)
    assert store.engine.count(name) == 6

    # Searched without the "no parents" condition: parents are out because they have no vectors.
    hits = store.engine.query(name, VectorQuery(QueryMode.DENSE, PointFilter("t1"), limit=10, dense=dense[0].tolist()))
    assert len(hits) == 4
    assert not any(payload["is_parent"] for payload, _ in hits)
    assert hits[0][0]["chunk_index"] == 0
    parent_record = store.engine.scroll(name, document_filter("t1", chunk_ids=[chunks[4].chunk_id]), with_vectors=True)[
        0
    ]
    assert not parent_record.dense and not parent_record.sparse

    payloads = store.scroll_document(PARENT_CHILD, MODEL, tenant_id="t1", document_id="d1")
    assert [(p["is_parent"], p["chunk_index"]) for p in payloads] == [
        (False, 0),
        (False, 1),
        (False, 2),
        (False, 3),
        (True, 0),
        (True, 1),
    ]
    children = store.scroll_document(PARENT_CHILD, MODEL, tenant_id="t1", document_id="d1", include_parents=False)
    assert len(children) == 4
    assert store.count_document(PARENT_CHILD, MODEL, tenant_id="t1", document_id="d1", include_parents=False) == 4

    parents = store.get_chunks_by_ids(
        PARENT_CHILD, MODEL, tenant_id="t1", document_id="d1", chunk_ids=[children[3]["parent_id"], "nope"]
    )
    assert [p["chunk_id"] for p in parents] == [chunks[5].chunk_id]
    assert parents[0]["text"] == chunks[5].text


def test_neighbours_by_indices_skip_missing_and_parents(store: VectorStore) -> None:
    store_chunks(store, make_chunks("d1", 4, strategy=PARENT_CHILD, parents=2), strategy=PARENT_CHILD)
    found = store.get_chunks_by_indices(PARENT_CHILD, MODEL, tenant_id="t1", document_id="d1", indices=[3, 1, -1, 7, 1])
    assert [(p["chunk_index"], p["is_parent"]) for p in found] == [(1, False), (3, False)]
    assert store.get_chunks_by_indices(PARENT_CHILD, MODEL, tenant_id="t1", document_id="d1", indices=[]) == []
    with pytest.raises(NotFoundError):
        store.get_chunks_by_indices(FIXED, MODEL, tenant_id="t1", document_id="d1", indices=[0])


def test_tenants_are_isolated(store: VectorStore) -> None:
    # Two tenants with a document of the same id (and name): distinct chunk ids keep both points apart.
    mine = make_chunks("d1", 3)
    theirs = [replace(c, chunk_id=f"t2/{c.chunk_id}", text=f"secret {c.text}") for c in make_chunks("d1", 5)]
    store_chunks(store, mine, tenant="t1")
    store_chunks(store, theirs, tenant="t2")

    assert len(store.scroll_document(FIXED, MODEL, tenant_id="t1", document_id="d1")) == 3
    assert [
        p["chunk_index"]
        for p in store.get_chunks_by_indices(FIXED, MODEL, tenant_id="t1", document_id="d1", indices=[3, 4])
    ] == []
    assert store.get_chunks_by_ids(FIXED, MODEL, tenant_id="t1", document_id="d1", chunk_ids=[theirs[0].chunk_id]) == []

    # Re-running tenant 1 with fewer chunks must not treat tenant 2's points as its stale ones.
    dense, sparse = vectors(mine[:1])
    result = store.replace_document_chunks(
        FIXED, MODEL, DIM, tenant_id="t1", chunks=mine[:1], dense=dense, sparse=sparse
    )
    assert result.removed == 2
    assert store.delete_document("t1", "d1") == 1
    assert store.delete_document_strategy(FIXED, MODEL, "t1", "d1") == 0
    remaining = store.scroll_document(FIXED, MODEL, tenant_id="t2", document_id="d1")
    assert len(remaining) == 5
    assert all(p["text"].startswith("secret") for p in remaining)


def test_delete_document_across_collections(store: VectorStore) -> None:
    store_chunks(store, make_chunks("d1", 3))
    store_chunks(store, make_chunks("d2", 2))
    store_chunks(store, make_chunks("d1", 2, strategy=PARENT_CHILD, parents=1), strategy=PARENT_CHILD)
    assert store.delete_document("t1", "d1") == 3 + 3
    assert store.count_document(FIXED, MODEL, tenant_id="t1", document_id="d1") == 0
    assert store.count_document(PARENT_CHILD, MODEL, tenant_id="t1", document_id="d1") == 0
    assert store.count_document(FIXED, MODEL, tenant_id="t1", document_id="d2") == 2
    assert store.delete_document("t1", "d1") == 0
    assert store.delete_document_strategy(StrategyName.SEMANTIC, MODEL, "t1", "d2") == 0  # no collection


# ---------------------------------------------------------------- hybrid layout


def test_layout_supports_filtered_hybrid_rrf_query(store: VectorStore) -> None:
    dense = store_chunks(store, make_chunks("d1", 6))
    # The same texts (and the same dense vectors) in another document and in another tenant's "d1".
    store_chunks(store, make_chunks("d2", 6))
    store_chunks(store, [replace(c, chunk_id=f"t2/{c.chunk_id}") for c in make_chunks("d1", 6)], tenant="t2")

    hits = store.search(
        FIXED, MODEL, mode=QueryMode.FUSION, tenant_id="t1", document_id="d1", top_k=3, dense=dense[2],
        sparse=ENCODER.encode_query("Charlie chunk"), prefetch_limit=10,
    )  # fmt: skip
    assert hits and all(h["document_id"] == "d1" and h["tenant_id"] == "t1" for h, _ in hits)
    # Chunk 2 is both the nearest dense vector and the only "charlie": first by both rankings.
    assert hits[0][0]["chunk_index"] == 2


# ---------------------------------------------------------------- admin


def test_admin_list_wipe_delete(store: VectorStore) -> None:
    store_chunks(store, make_chunks("d1", 3))
    summary = store.create_collection(StrategyName.RECURSIVE, "openai:text-embedding-3-small", 4)
    assert summary == {
        "name": "recursive__openai-text-embedding-3-small_collection",
        "points": 0,
        "dimension": 4,
        "strategy": "recursive",
        "model": "openai-text-embedding-3-small",
    }
    listed = {c["name"]: c for c in store.list_collections()}
    fixed = collection_name(FIXED, MODEL)
    assert listed[fixed]["points"] == 3 and listed[fixed]["dimension"] == DIM
    assert listed[fixed]["strategy"] == "fixed_size"

    assert store.wipe_collection(fixed) == 3
    assert store.engine.count(fixed) == 0
    assert store.ensure_collection(FIXED, MODEL, DIM) == fixed  # configuration kept

    store.delete_collection(fixed)
    assert fixed not in {c["name"] for c in store.list_collections()}
    with pytest.raises(NotFoundError):
        store.delete_collection(fixed)
    with pytest.raises(NotFoundError):
        store.wipe_collection(fixed)
    with pytest.raises(NotFoundError):
        store.scroll_document(FIXED, MODEL, tenant_id="t1", document_id="d1")


# ---------------------------------------------------------------- lifecycle


def test_persistence_across_restart(settings: Settings) -> None:
    store = get_vector_store(settings)
    assert get_vector_store(settings) is store
    chunks = make_chunks("d1", 4, strategy=PARENT_CHILD, parents=1)
    store_chunks(store, chunks, strategy=PARENT_CHILD)
    before = store.scroll_document(PARENT_CHILD, MODEL, tenant_id="t1", document_id="d1")
    close_vector_stores()
    assert store.closed
    with pytest.raises(VectorStoreError, match="closed"):
        store.list_collections()

    reopened = VectorStore(settings)
    try:
        assert reopened.scroll_document(PARENT_CHILD, MODEL, tenant_id="t1", document_id="d1") == before
        assert reopened.ensure_collection(PARENT_CHILD, MODEL, DIM) == collection_name(PARENT_CHILD, MODEL)
    finally:
        reopened.close()


def test_second_client_on_same_folder_gets_actionable_error(settings: Settings) -> None:
    first = get_vector_store(settings)
    with pytest.raises(VectorStoreError, match="CHUNKBENCH_QDRANT_URL") as info:
        VectorStore(settings)
    assert str(settings.qdrant_path) in info.value.message
    first.close()
    assert get_vector_store(settings) is not first  # a closed store is replaced, not handed out


def test_unreachable_server_is_a_vector_store_error(tmp_path: Path) -> None:
    store = VectorStore(
        Settings(_env_file=None, data_dir=tmp_path, qdrant_url="http://127.0.0.1:9", qdrant_timeout_s=2)
    )
    try:
        assert not store.is_local
        with pytest.raises(VectorStoreError, match="list collections"):
            store.ping()
        with pytest.raises(VectorStoreError, match="fixed_size__"):
            store.ensure_collection(FIXED, MODEL, DIM)
    finally:
        store.close()


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
@pytest.mark.parametrize(
    ("url", "rest_uri"),
    [
        ("http://qdrant:6333", "http://qdrant:6333"),
        ("https://qdrant.example.com", "https://qdrant.example.com"),  # behind a proxy on 443: no :6333 added
        ("https://q.example.com:8443/qdrant", "https://q.example.com:8443/qdrant"),
    ],
)
def test_server_mode_client_is_built_from_the_url_key_and_timeout(tmp_path: Path, url: str, rest_uri: str) -> None:
    # No Qdrant server can be installed here: this checks the client chunkbench builds, without a request.
    settings = Settings(_env_file=None, data_dir=tmp_path, qdrant_url=url, qdrant_api_key="k-123", qdrant_timeout_s=7.5)
    store = VectorStore(settings)
    try:
        remote = store.engine.client._client
        assert not store.is_local and store.location == url and not (tmp_path / "qdrant").exists()
        assert remote.rest_uri == rest_uri
        assert remote._rest_headers["api-key"] == "k-123" and remote._timeout == 8  # whole seconds, rounded up
        serving = VectorQuery(QueryMode.DENSE, PointFilter("t1"), limit=1, exact=False)
        assert store.engine._params(serving, sparse=False, scoped_idf=True) == qm.SearchParams(
            hnsw_ef=settings.qdrant_hnsw_ef_search
        )
    finally:
        store.close()


# ---------------------------------------------------------------- BM25


def test_bm25_indices_are_deterministic_and_distinct_sorted() -> None:
    first = ENCODER.encode_document("Retrieval augmented generation: retrieval first, generation second.")
    second = Bm25Encoder().encode_document("Retrieval augmented generation: retrieval first, generation second.")
    assert first == second
    assert first.indices == sorted(set(first.indices))
    assert len(first.indices) == len(first.values) == 5  # retrieval, augmented, generation, first, second
    assert token_index("retrieval") == zlib.crc32(b"retrieval") & 0x7FFFFFFF


def test_bm25_term_frequency_saturates_monotonically() -> None:
    weights = []
    for tf in range(1, 12):
        encoded = ENCODER.encode_document(" ".join(["qdrant"] * tf + ["filler"] * (12 - tf)))
        weights.append(dict(zip(encoded.indices, encoded.values, strict=True))[token_index("qdrant")])
    gains = np.diff(weights)
    assert (gains > 0).all() and (np.diff(gains) < 0).all()
    assert weights[-1] < ENCODER.k1 + 1  # the saturation ceiling
    # Longer documents weigh the same term frequency less.
    short = ENCODER.encode_document("qdrant " + "x " * 10)
    long = ENCODER.encode_document("qdrant " + "x " * 1000)
    assert (
        short.values[short.indices.index(token_index("qdrant"))]
        > long.values[long.indices.index(token_index("qdrant"))]
    )


def test_stopwords_and_normalisation() -> None:
    assert tokenize("The Quick brown FOX is over the lazy dog") == ["quick", "brown", "fox", "lazy", "dog"]
    assert tokenize("ﬁle Ｆｕｌｌ straße") == ["file", "full", "strasse"]  # NFKC + casefold
    assert ENCODER.encode_document("the of and").indices == []


def test_farsi_tokens_and_zwnj() -> None:
    assert tokenize("قانون اساسی ایران") == ["قانون", "اساسی", "ایران"]
    # A ZWNJ-joined word gives its fused form and its parts, so every spelling meets every other.
    with_zwnj = tokenize(f"کتاب{ZWNJ}ها")
    assert with_zwnj == ["کتابها", "کتاب", "ها"]
    assert set(tokenize("کتاب ها")) <= set(with_zwnj)
    assert set(tokenize("کتابها")) <= set(with_zwnj)
    # Arabic letter variants, diacritics, tatweel and Persian digits are unified.
    assert tokenize("كِتـاب ماده ۱۲ ي") == ["کتاب", "ماده", "12", "ی"]
    query = ENCODER.encode_query(f"می{ZWNJ}خواهم")
    document = ENCODER.encode_document("میخواهم بخوانم")
    assert set(query.indices) & set(document.indices)


def test_query_encoding_has_unit_weights_per_distinct_term() -> None:
    query = ENCODER.encode_query("Hybrid search, hybrid SEARCH and the ranking")
    assert query.indices == sorted({token_index(t) for t in ("hybrid", "search", "ranking")})
    assert query.values == [1.0, 1.0, 1.0]
    assert ENCODER.encode_query("the and of") == SparseEmbedding([], [])
