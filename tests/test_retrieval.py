"""Retrieval on embedded Qdrant with real MiniLM and BM25 vectors: retrievers, filters, floor, expansion,
parent context and rerankers (a tiny cross-encoder built here, a scripted LLM)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from chunkbench.chunking.base import Chunk
from chunkbench.config import Settings
from chunkbench.embedding.registry import get_spec
from chunkbench.embedding.roles import embed_query, embed_texts
from chunkbench.embedding.sparse import Bm25Encoder
from chunkbench.errors import QueryError
from chunkbench.limits import MAX_CANDIDATE_K
from chunkbench.models import StrategyName
from chunkbench.retrieval import pipeline
from chunkbench.retrieval.context import attach_parents
from chunkbench.retrieval.expansion import apply_neighbor_expansion
from chunkbench.retrieval.rerank import CrossEncoderReranker, LlmListwiseReranker, parse_ranking
from chunkbench.retrieval.search import RetrievedChunk, RetrieverName, get_retriever, retrieve
from chunkbench.storage.vectors import VectorStore, get_vector_store
from chunkgen import chunks_from_texts

FIXED = StrategyName.FIXED_SIZE
PARENT_CHILD = StrategyName.SEMANTIC_PARENT_CHILD
SPEC = get_spec("all-MiniLM-L6-v2")
CODE_QUERY = "E-4711-XQ"
PARAPHRASE_QUERY = "Why does my car refuse to turn on in the morning?"
CORPUS = [
    "The quarterly sales report shows steady revenue growth across all regions.",
    "When the nightly synchronisation job aborts and the log shows E-4711-XQ, the replica database is out of "
    "date: rebuild it from the latest snapshot before restarting the scheduler.",
    "Error E-4711-XR.",
    "Error E-4717-XQ.",
    "Installer errors are usually caused by missing permissions or a full disk.",
    "The automobile would not start because its battery was completely drained overnight.",
    "Gardeners should water tomato plants early in the morning.",
    "Every error code printed by the setup wizard is explained in the troubleshooting appendix.",
    "Our office cafeteria serves vegetarian lunch every Tuesday.",
]
CODE_CHUNK, CAR_CHUNK = 1, 5


@pytest.fixture(scope="module")
def embed_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("embed"))


@pytest.fixture(scope="module")
def corpus_vectors(embed_settings: Settings) -> np.ndarray:
    return embed_texts(SPEC, CORPUS, "document", embed_settings)


@pytest.fixture(scope="module")
def query_vectors(embed_settings: Settings) -> dict[str, np.ndarray]:
    return {q: embed_query(SPEC, q, embed_settings) for q in (CODE_QUERY, PARAPHRASE_QUERY)}


@pytest.fixture
def store(settings: Settings) -> VectorStore:
    return get_vector_store(settings)


def make_chunks(
    document_id: str, texts: list[str], *, strategy: StrategyName = FIXED, parents: list[str] | None = None
) -> list[Chunk]:
    """Children from ``texts`` (child i under parent ``i % len(parents)``), then the parents."""
    return chunks_from_texts(document_id, texts, strategy=strategy, parents=parents or ())


def put(
    store: VectorStore, chunks: list[Chunk], dense: np.ndarray, *, tenant: str = "t1", strategy: StrategyName = FIXED
) -> None:
    texts = [c.text for c in chunks if not c.is_parent]
    store.replace_document_chunks(
        strategy,
        SPEC.id,
        SPEC.dimension,
        tenant_id=tenant,
        chunks=chunks,
        dense=dense,
        sparse=Bm25Encoder().encode_documents(texts),
    )


def random_dense(count: int, seed: int = 0) -> np.ndarray:
    matrix = np.random.default_rng(seed).normal(size=(count, SPEC.dimension)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture
def corpus_store(store: VectorStore, corpus_vectors: np.ndarray) -> VectorStore:
    put(store, make_chunks("d1", CORPUS), corpus_vectors)
    return store


def run(
    store: VectorStore,
    settings: Settings,
    retriever: str,
    question: str,
    vector: np.ndarray | None,
    *,
    top_k: int = 2,
    document_id: str | None = "d1",
    tenant_id: str = "t1",
    score_floor: float | None = None,
) -> list[RetrievedChunk]:
    return retrieve(
        store,
        settings,
        strategy=FIXED,
        corpus_spec=SPEC,
        retriever=retriever,
        question=question,
        query_vector=vector,
        tenant_id=tenant_id,
        document_id=document_id,
        limit=top_k,
        score_floor=score_floor,
    )


# ---------------------------------------------------------------- retrievers


@pytest.mark.model
def test_hybrid_finds_exact_code_that_dense_ranks_low(
    corpus_store: VectorStore, settings: Settings, query_vectors: dict[str, np.ndarray]
) -> None:
    vector = query_vectors[CODE_QUERY]
    dense = [c.chunk_index for c in run(corpus_store, settings, "dense", CODE_QUERY, vector)]
    bm25 = [c.chunk_index for c in run(corpus_store, settings, "bm25", CODE_QUERY, None)]
    hybrid = run(corpus_store, settings, "hybrid", CODE_QUERY, vector)
    assert CODE_CHUNK not in dense  # the near-miss codes look the same to MiniLM
    assert bm25[0] == CODE_CHUNK
    assert CODE_CHUNK in [c.chunk_index for c in hybrid]
    assert all(c.role == "hit" and c.score is not None for c in hybrid)


@pytest.mark.model
def test_hybrid_finds_paraphrase_that_bm25_misses(
    corpus_store: VectorStore, settings: Settings, query_vectors: dict[str, np.ndarray]
) -> None:
    vector = query_vectors[PARAPHRASE_QUERY]
    dense = run(corpus_store, settings, "dense", PARAPHRASE_QUERY, vector)
    bm25 = run(corpus_store, settings, "bm25", PARAPHRASE_QUERY, None, top_k=10)
    hybrid = run(corpus_store, settings, "hybrid", PARAPHRASE_QUERY, vector)
    assert dense[0].chunk_index == CAR_CHUNK
    assert CAR_CHUNK not in [c.chunk_index for c in bm25]
    assert CAR_CHUNK in [c.chunk_index for c in hybrid]


@pytest.mark.model
def test_scores_descend_and_top_k_is_respected(
    corpus_store: VectorStore, settings: Settings, query_vectors: dict[str, np.ndarray]
) -> None:
    vector = query_vectors[CODE_QUERY]
    for retriever in RetrieverName:
        for top_k in (1, 3, 20):
            hits = run(corpus_store, settings, retriever, CODE_QUERY, vector, top_k=top_k)
            assert 1 <= len(hits) <= top_k
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)
    # The bounds are the plan's (checked once, there); nothing below it checks them again.
    plan = pipeline.make_plan(
        settings, question=CODE_QUERY, scope=pipeline.Scope.document("t1", "d1"), strategy=FIXED, corpus=SPEC,
        retriever="dense", top_k=0, answer="none", query_vector=vector,
    )  # fmt: skip
    with pytest.raises(QueryError, match="top_k must be between 1 and"):
        pipeline.run(settings, corpus_store, plan)


@pytest.mark.model
def test_score_floor_per_retriever(
    corpus_store: VectorStore, settings: Settings, query_vectors: dict[str, np.ndarray]
) -> None:
    vector = query_vectors[CODE_QUERY]
    for retriever in RetrieverName:
        assert run(corpus_store, settings, retriever, CODE_QUERY, vector, top_k=5, score_floor=1e6) == []
        assert run(corpus_store, settings, retriever, CODE_QUERY, vector, top_k=5, score_floor=-1e6)
    dense = run(corpus_store, settings, "dense", CODE_QUERY, vector, top_k=9)
    cosine = {c.chunk_id: c.score for c in dense}
    floor = 0.3
    # Hybrid compares the floor with each hit's dense cosine, not with its RRF score.
    hybrid = run(corpus_store, settings, "hybrid", CODE_QUERY, vector, top_k=9, score_floor=floor)
    assert {c.chunk_id for c in hybrid} == {cid for cid, s in cosine.items() if s >= floor}
    assert all(c.payload["dense_score"] == pytest.approx(cosine[c.chunk_id], abs=1e-5) for c in hybrid)


@pytest.mark.model
def test_document_and_tenant_filters_never_leak(
    corpus_store: VectorStore, settings: Settings, corpus_vectors: np.ndarray, query_vectors: dict[str, np.ndarray]
) -> None:
    # Same text, same vector: only the filters keep these out.
    put(corpus_store, make_chunks("d2", [CORPUS[CODE_CHUNK]]), corpus_vectors[[CODE_CHUNK]])
    put(corpus_store, make_chunks("d3", [CORPUS[CODE_CHUNK]]), corpus_vectors[[CODE_CHUNK]], tenant="t2")
    vector = query_vectors[CODE_QUERY]
    for retriever in RetrieverName:
        in_doc = run(corpus_store, settings, retriever, CODE_QUERY, vector, top_k=20)
        assert {c.document_id for c in in_doc} == {"d1"}
        in_tenant = run(corpus_store, settings, retriever, CODE_QUERY, vector, top_k=20, document_id=None)
        assert {c.document_id for c in in_tenant} == {"d1", "d2"}
        other = run(corpus_store, settings, retriever, CODE_QUERY, vector, top_k=20, document_id=None, tenant_id="t2")
        assert {c.document_id for c in other} == {"d3"}
        assert run(corpus_store, settings, retriever, CODE_QUERY, vector, tenant_id="t2") == []


def test_parents_are_never_search_hits(store: VectorStore, settings: Settings) -> None:
    texts = ["alpha bravo", "charlie delta"]
    put(store, make_chunks("p1", texts, strategy=PARENT_CHILD, parents=["alpha bravo charlie delta"]),
        random_dense(2), strategy=PARENT_CHILD)  # fmt: skip
    hits = retrieve(
        store, settings, strategy=PARENT_CHILD, corpus_spec=SPEC, retriever="bm25", question="alpha charlie",
        query_vector=None, tenant_id="t1", document_id="p1", limit=10, score_floor=None,
    )  # fmt: skip
    assert {h.text for h in hits} == set(texts)


def test_missing_collection_and_bad_inputs(store: VectorStore, settings: Settings) -> None:
    vector = random_dense(1)[0]
    with pytest.raises(QueryError, match=r"not been processed.*chunkbench process d1"):
        run(store, settings, "dense", "anything", vector)
    with pytest.raises(QueryError, match="Unknown retriever"):
        get_retriever("splade")
    with pytest.raises(QueryError, match="needs the question's embedding"):
        run(store, settings, "hybrid", "anything", None)
    with pytest.raises(QueryError, match="dimensions"):
        run(store, settings, "dense", "anything", np.ones(3, dtype=np.float32))


@pytest.mark.model
def test_bm25_with_only_stopwords_finds_nothing(corpus_store: VectorStore, settings: Settings) -> None:
    assert run(corpus_store, settings, "bm25", "what is it", None) == []


def ranked(
    store: VectorStore, settings: Settings, retriever: str, vector: np.ndarray, **knobs: object
) -> pipeline.QueryResult:
    """The pipeline's retrieval only (no answer) of CODE_QUERY over the corpus document, top 2."""
    plan = pipeline.make_plan(
        settings, question=CODE_QUERY, scope=pipeline.Scope.document("t1", "d1"), strategy=FIXED, corpus=SPEC,
        retriever=retriever, top_k=2, answer="none", query_vector=vector, **knobs,
    )  # fmt: skip
    return pipeline.run(settings, store, plan)


@pytest.mark.model
def test_a_deeper_ranking_keeps_the_top_scores(
    corpus_store: VectorStore, settings: Settings, query_vectors: dict[str, np.ndarray]
) -> None:
    vector = query_vectors[CODE_QUERY]
    for retriever in RetrieverName:
        plain, deep = (
            ranked(corpus_store, settings, retriever, vector),
            ranked(corpus_store, settings, retriever, vector, ranking_depth=8),
        )
        # The same scores at the top. Chunks of exactly equal score (the two BM25 "Error E-47…" lines; in RRF, any
        # two chunks with mirrored ranks) may come in another order when the engine is asked for more of them.
        assert [h.score for h in deep.hits] == [h.score for h in plain.hits]
        assert plain.ranking == plain.hits and deep.ranking[:2] == deep.hits
        # The ranking is the retriever's own, eight deep (BM25 ranks only chunks sharing a term with the question).
        alone = run(corpus_store, settings, retriever, CODE_QUERY, vector, top_k=8)
        assert [c.score for c in deep.ranking] == [c.score for c in alone] and len(alone) >= 3
    with pytest.raises(QueryError, match="ranking depth"):
        ranked(corpus_store, settings, "dense", vector, ranking_depth=MAX_CANDIDATE_K + 1)


@pytest.mark.model
def test_a_reranked_ranking_is_the_reranked_pool_then_the_retrievers_order(
    corpus_store: VectorStore, settings: Settings, query_vectors: dict[str, np.ndarray], tiny_cross_encoder: Path
) -> None:
    settings.cross_encoder_model = str(tiny_cross_encoder)
    vector = query_vectors[CODE_QUERY]
    plain = ranked(corpus_store, settings, "dense", vector, rerank="cross_encoder", candidate_k=4)
    deep = ranked(corpus_store, settings, "dense", vector, rerank="cross_encoder", candidate_k=4, ranking_depth=9)
    assert [(h.chunk_id, h.score) for h in deep.hits] == [(h.chunk_id, h.score) for h in plain.hits]
    retrieved = run(corpus_store, settings, "dense", CODE_QUERY, vector, top_k=9)
    pool = CrossEncoderReranker(str(tiny_cross_encoder), settings).rerank(CODE_QUERY, retrieved[:4], top_k=4)
    assert [c.chunk_id for c in deep.ranking] == [c.chunk_id for c in (*pool, *retrieved[4:])]
    assert deep.ranking[:2] == deep.hits


# ---------------------------------------------------------------- Neighbor Expansion

EXPANSION_TEXTS = [f"fixed chunk number {i}" for i in range(8)]


@pytest.fixture
def fixed_store(store: VectorStore) -> VectorStore:
    put(store, make_chunks("d1", EXPANSION_TEXTS), random_dense(len(EXPANSION_TEXTS)))
    return store


def hits_at(store: VectorStore, *indices: int, strategy: StrategyName = FIXED) -> list[RetrievedChunk]:
    """Hits at these chunk indices, in this (score) order, with descending scores."""
    payloads = {
        p["chunk_index"]: p
        for p in store.get_chunks_by_indices(strategy, SPEC.id, tenant_id="t1", document_id="d1", indices=indices)
    }
    return [RetrievedChunk.from_payload(payloads[i], score=1.0 - n / 10, role="hit") for n, i in enumerate(indices)]


def expand(
    store: VectorStore, hits: list[RetrievedChunk], prev: int, nxt: int, strategy: StrategyName = FIXED
) -> tuple[list[RetrievedChunk], list]:
    return apply_neighbor_expansion(
        store, hits, strategy=strategy, model_id=SPEC.id, tenant_id="t1", document_id="d1",
        neighbor_prev=prev, neighbor_next=nxt,
    )  # fmt: skip


def test_expansion_at_first_and_last_chunk(fixed_store: VectorStore) -> None:
    flat, tree = expand(fixed_store, hits_at(fixed_store, 0, 7), 2, 2)
    assert [c.chunk_index for c in flat] == [0, 1, 2, 5, 6, 7]
    assert [(c.chunk_index, c.role, c.score) for c in flat if c.role == "neighbor"] == [
        (1, "neighbor", None), (2, "neighbor", None), (5, "neighbor", None), (6, "neighbor", None),
    ]  # fmt: skip
    assert drawn(tree) == [(0, 1, [], [(1, None), (2, None)]), (7, 2, [(5, None), (6, None)], [])]


def test_expansion_with_overlapping_neighbourhoods_and_hit_as_neighbour(fixed_store: VectorStore) -> None:
    hits = hits_at(fixed_store, 4, 3, 6)  # score order: 4 then 3 then 6
    calls: list[list[int]] = []
    original = fixed_store.get_chunks_by_indices

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(list(kwargs["indices"]))
        return original(*args, **kwargs)

    fixed_store.get_chunks_by_indices = spy  # type: ignore[method-assign]
    flat, tree = expand(fixed_store, hits, 1, 1)
    assert calls == [[2, 5, 7]]  # one call, only indices that are not hits
    assert [c.chunk_index for c in flat] == [2, 3, 4, 5, 6, 7]
    assert len({c.chunk_id for c in flat}) == len(flat)
    by_index = {c.chunk_index: c for c in flat}
    for hit in hits:
        assert by_index[hit.chunk_index].role == "hit"
        assert by_index[hit.chunk_index].score == hit.score
    assert [n.role for n in (by_index[2], by_index[5], by_index[7])] == ["neighbor"] * 3
    # Each chunk once: 5 lies in the windows of 4 and 6 (both one away) and goes to the better-ranked 4; the hits 3
    # and 4, each in the other's window, are listed there as references to their own nodes.
    assert drawn(tree) == [(4, 1, [(3, 2)], [(5, None)]), (3, 2, [(2, None)], [(4, 1)]), (6, 3, [], [(7, None)])]
    assert tree[0].to_dict()["rank"] == 1
    chunk_4, chunk_3, chunk_5 = by_index[4].chunk_id, by_index[3].chunk_id, by_index[5].chunk_id
    # A hit under another hit carries its rank and position, not a second copy of its text.
    assert tree[0].to_dict()["neighbors_prev"] == [
        {"chunk_id": chunk_3, "chunk_index": 3, "role": "hit", "score": hits[1].score, "rank": 2,
         "start_index": by_index[3].start_index, "end_index": by_index[3].end_index, "document_id": "d1"},
    ]  # fmt: skip
    assert tree[0].to_dict()["neighbors_next"][0]["text"] == by_index[5].text
    assert tree[0].to_refs() == {
        "chunk_id": chunk_4, "chunk_index": 4, "role": "hit", "score": hits[0].score, "rank": 1,
        "neighbors_prev": [{"chunk_id": chunk_3, "chunk_index": 3, "role": "hit", "score": hits[1].score, "rank": 2}],
        "neighbors_next": [{"chunk_id": chunk_5, "chunk_index": 5, "role": "neighbor", "score": None}],
    }  # fmt: skip
    without_text = by_index[4].to_dict(with_text=False)
    assert "text" not in without_text and without_text == {
        k: v for k, v in by_index[4].to_dict().items() if k != "text"
    }


def drawn(tree: list) -> list[tuple[int, int, list[tuple[int, int | None]], list[tuple[int, int | None]]]]:
    """The tree as (hit index, rank, [(index, rank of a hit) before], [(index, rank of a hit) after])."""
    return [
        (
            node.hit.chunk_index,
            node.rank,
            [(n.chunk.chunk_index, n.rank) for n in node.neighbors_prev],
            [(n.chunk.chunk_index, n.rank) for n in node.neighbors_next],
        )
        for node in tree
    ]


def test_the_tree_shows_each_chunk_once_with_adjacent_hits_at_both_ends(fixed_store: VectorStore) -> None:
    # The case: hits at both ends of the document, next to each other; each used to appear twice, as a hit
    # and again, unlabelled, as the other's neighbour.
    hits = hits_at(fixed_store, 6, 0, 7, 1)
    flat, tree = expand(fixed_store, hits, 1, 1)
    assert [c.chunk_index for c in flat] == [0, 1, 2, 5, 6, 7]
    assert drawn(tree) == [
        (6, 1, [(5, None)], [(7, 3)]),
        (0, 2, [], [(1, 4)]),
        (7, 3, [(6, 1)], []),
        (1, 4, [(0, 2)], [(2, None)]),
    ]
    listed = [n for node in tree for n in (*node.neighbors_prev, *node.neighbors_next)]
    neighbours = [n.chunk.chunk_index for n in listed if n.rank is None]
    assert sorted(neighbours) == [c.chunk_index for c in flat if c.role == "neighbor"]  # each neighbour once


def test_a_neighbour_in_two_windows_is_drawn_under_the_nearest_hit(fixed_store: VectorStore) -> None:
    # ±2 around 2 and 5: chunk 3 is one from 2, chunk 4 one from 5; each goes under the hit it is next to.
    _, tree = expand(fixed_store, hits_at(fixed_store, 2, 5), 2, 2)
    assert drawn(tree) == [(2, 1, [(0, None), (1, None)], [(3, None)]), (5, 2, [(4, None)], [(6, None), (7, None)])]


def test_expansion_off_without_knobs_or_for_other_strategies(store: VectorStore, fixed_store: VectorStore) -> None:
    hits = hits_at(fixed_store, 3)
    flat, tree = expand(fixed_store, hits, 0, 0)
    assert flat == hits and tree[0].neighbors_prev == [] and tree[0].neighbors_next == []
    put(store, make_chunks("d1", EXPANSION_TEXTS, strategy=StrategyName.RECURSIVE),
        random_dense(len(EXPANSION_TEXTS)), strategy=StrategyName.RECURSIVE)  # fmt: skip
    recursive_hits = hits_at(store, 5, 2, strategy=StrategyName.RECURSIVE)
    flat, tree = expand(store, recursive_hits, 2, 2, strategy=StrategyName.RECURSIVE)
    assert flat == recursive_hits
    assert [n.to_dict()["chunk_id"] for n in tree] == [h.chunk_id for h in recursive_hits]
    assert all(n.to_dict()["neighbors_prev"] == [] == n.to_dict()["neighbors_next"] for n in tree)


def test_expansion_only_prev_or_only_next(fixed_store: VectorStore) -> None:
    flat, _ = expand(fixed_store, hits_at(fixed_store, 3), 1, 0)
    assert [c.chunk_index for c in flat] == [2, 3]
    flat, _ = expand(fixed_store, hits_at(fixed_store, 3), 0, 2)
    assert [c.chunk_index for c in flat] == [3, 4, 5]


# ---------------------------------------------------------------- parent context


def test_parent_context_for_parent_child(store: VectorStore) -> None:
    texts = ["child zero", "child one", "child two"]
    parents = ["PARENT A: child zero and child two", "PARENT B: child one"]
    put(store, make_chunks("d1", texts, strategy=PARENT_CHILD, parents=parents), random_dense(3),
        strategy=PARENT_CHILD)  # fmt: skip
    hits = [
        RetrievedChunk.from_payload(p, score=0.9 - i / 10, role="hit")
        for i, p in enumerate(
            store.get_chunks_by_indices(PARENT_CHILD, SPEC.id, tenant_id="t1", document_id="d1", indices=[2, 1, 0])
        )
    ][::-1]  # chunk 2, 1, 0
    calls: list[list[str]] = []
    original = store.get_chunks_by_ids

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(list(kwargs["chunk_ids"]))
        return original(*args, **kwargs)

    store.get_chunks_by_ids = spy  # type: ignore[method-assign]
    blocks = attach_parents(store, hits, strategy=PARENT_CHILD, model_id=SPEC.id, tenant_id="t1", document_id="d1")
    assert len(calls) == 1
    assert [b.source for b in blocks] == [1, 2, 3]
    assert blocks[0].parent is not None and blocks[0].parent.text == parents[0]
    assert blocks[0].parent.role == "parent" and blocks[0].parent.score is None
    assert blocks[1].parent is not None and blocks[1].parent.text == parents[1]
    assert blocks[2].parent is None and blocks[2].parent_source == 1  # same parent as source 1


def test_context_without_parents_for_other_strategies(fixed_store: VectorStore) -> None:
    hits = hits_at(fixed_store, 1, 0)
    blocks = attach_parents(fixed_store, hits, strategy=FIXED, model_id=SPEC.id, tenant_id="t1", document_id="d1")
    assert [(b.source, b.parent) for b in blocks] == [(1, None), (2, None)]


# ---------------------------------------------------------------- rerankers


def candidates(texts: list[str]) -> list[RetrievedChunk]:
    return [
        RetrievedChunk(
            chunk_id=f"c{i}",
            chunk_index=i,
            text=t,
            score=1.0 - i / 10,
            role="hit",
            start_index=0,
            end_index=len(t),
            token_count=1,
            heading_path=[],
            parent_id=None,
            document_id="d1",
            document_name="d1.md",
            strategy_name="fixed_size",
        )
        for i, t in enumerate(texts)
    ]


@pytest.mark.model
def test_cross_encoder_reorders_by_its_scores_and_keeps_top_k(tiny_cross_encoder: Path, settings: Settings) -> None:
    from sentence_transformers import CrossEncoder

    texts = ["red apples", "a long text about engines", "blue sky", "tax law", "pasta recipe"]
    question = "what colour is the sky"
    expected = CrossEncoder(str(tiny_cross_encoder)).predict([(question, t) for t in texts])
    reranker = CrossEncoderReranker(str(tiny_cross_encoder), settings)
    ranked = reranker.rerank(question, candidates(texts), top_k=3)
    assert [c.text for c in ranked] == [texts[i] for i in np.argsort(-expected, kind="stable")[:3]]
    assert [c.score for c in ranked] == pytest.approx(sorted(expected.tolist(), reverse=True)[:3], abs=1e-5)
    assert reranker.rerank(question, [], top_k=3) == []


@pytest.mark.model
def test_cross_encoder_missing_model_names_the_setting(tmp_path: Path, settings: Settings) -> None:
    for model in ("", str(tmp_path / "no-such-model")):
        with pytest.raises(QueryError, match="CHUNKBENCH_CROSS_ENCODER_MODEL") as info:
            CrossEncoderReranker(model, settings).rerank("q", candidates(["a"]), top_k=1)
        assert "ms-marco-MiniLM-L-6-v2" in info.value.message


def test_llm_listwise_reranker_follows_the_ranking() -> None:
    seen: list[dict] = []

    def chat(messages: list[dict], *, max_tokens: int, response_format: dict | None) -> str:
        seen.append({"messages": messages, "max_tokens": max_tokens, "response_format": response_format})
        return json.dumps({"ranking": [3, 1, 2]})

    chunks = candidates(["one", "two", "three"])
    ranked = LlmListwiseReranker(chat).rerank("which?", chunks, top_k=2)
    assert [c.chunk_id for c in ranked] == ["c2", "c0"]
    assert [c.score for c in ranked] == [1.0, 0.5]
    assert chunks[2].score == pytest.approx(0.8)  # inputs untouched
    prompt = seen[0]["messages"][-1]["content"]
    assert "[1] one" in prompt and "[3] three" in prompt and "which?" in prompt
    assert seen[0]["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize(
    ("reply", "order"),
    [
        ('{"ranking": [2, 2, 9, 0, -1, "4"]}', [1, 3, 0, 2]),  # duplicate, out of range, string id
        ("```json\n[3, 1]\n```", [2, 0, 1, 3]),  # fenced bare list, missing ids follow in order
        ('Sure! {"order": ["[4]", "[2]"]} hope that helps', [3, 1, 0, 2]),
        ("Passage 2 is best, then 4.", [1, 3, 0, 2]),  # no JSON: integers in order
        ("I cannot rank these.", [0, 1, 2, 3]),  # nothing usable: input order
        ('{"ranking": "oops"', [0, 1, 2, 3]),
        ("[true, 1.5, null, 3]", [0, 2, 1, 3]),
    ],
)
def test_parse_ranking_is_robust(reply: str, order: list[int]) -> None:
    assert parse_ranking(reply, 4) == order


def test_llm_listwise_reranker_with_malformed_reply_keeps_order() -> None:
    ranked = LlmListwiseReranker(lambda messages, **_: "not json at all").rerank("q", candidates(["a", "b"]), 5)
    assert [c.chunk_id for c in ranked] == ["c0", "c1"]
    assert [c.score for c in ranked] == [1.0, 0.5]
