"""The query pipeline (seed 000 §9.1) shared by ``/queries``, the chatbot API and the CLI.

load document → resolve Corpus model → embed question → search → rerank → expand → build context →
answer → save, with the time of every stage and the LLM's token usage recorded.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.embedding import service as embedding
from chunkbench.embedding.registry import EmbeddingModelSpec, get_spec
from chunkbench.errors import NotFoundError, QueryError
from chunkbench.guard.injection import InjectionVerdict
from chunkbench.llm.answer import generate_answer
from chunkbench.llm.client import get_llm_client
from chunkbench.models import StrategyName
from chunkbench.retrieval.context import ChunkGuard, ContextBlock, attach_parents
from chunkbench.retrieval.expansion import apply_neighbor_expansion
from chunkbench.retrieval.rerank import CrossEncoderReranker, LlmListwiseReranker
from chunkbench.retrieval.schemas import QueryIn, QueryOut, SourceOut
from chunkbench.retrieval.search import RetrievedChunk, RetrieverName, get_retriever, retrieve
from chunkbench.storage.db import Database
from chunkbench.storage.repositories import QueryRecord, QueryRepository
from chunkbench.storage.schema import QueryRow
from chunkbench.storage.vectors import VectorStore


class QueryNotFoundError(NotFoundError):
    code = "query_not_found"


class Stopwatch:
    """Milliseconds per pipeline stage."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._started = time.perf_counter()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.ms[name] = round(self.ms.get(name, 0.0) + (time.perf_counter() - started) * 1000, 2)

    def total(self) -> dict[str, float]:
        return {**self.ms, "total": round((time.perf_counter() - self._started) * 1000, 2)}


def _resolve_corpus(database: Database, requested: str | None, last_used: str | None) -> EmbeddingModelSpec:
    # The question must be embedded by the model that embedded the chunks: default to that one. Only a
    # document never embedded has neither; the configured Corpus role is read from app_settings then.
    if requested or last_used:
        return get_spec(requested or last_used)
    with database.session() as session:
        return embedding.resolve_corpus_model(session)


def run_query(
    database: Database, settings: Settings, store: VectorStore, request: QueryIn, *, tenant_id: str, save: bool = True
) -> QueryOut:
    """Answer a question over one processed document and strategy."""
    clock = Stopwatch()
    # A bare connection, not a session: one indexed read of four columns is all a query needs.
    with database.engine.connect() as connection:
        document = QueryRepository(connection, tenant_id).query_target(request.document_id)
    if request.strategy.value not in document.chunk_counts:
        raise QueryError(
            f"'{document.filename}' has not been processed with the '{request.strategy.value}' strategy. "
            f"Run: chunkbench process {document.id} --strategies {request.strategy.value}",
            document_id=document.id,
        )
    corpus = _resolve_corpus(database, request.corpus_model_id, document.last_corpus_embedding_model_id)

    top_k = request.top_k or settings.top_k
    prev = settings.neighbor_prev if request.neighbor_prev is None else request.neighbor_prev
    nxt = settings.neighbor_next if request.neighbor_next is None else request.neighbor_next
    floor = request.score_floor if request.score_floor is not None else settings.score_floor
    retriever = RetrieverName(request.retriever)
    candidates = max(top_k, request.candidate_k or settings.rerank_candidate_k) if request.rerank != "none" else top_k

    hits, query_vector = search_stage(
        settings, store, clock, question=request.question, strategy=request.strategy, corpus=corpus,
        retriever=retriever, tenant_id=tenant_id, document_id=document.id, top_k=candidates, score_floor=floor,
    )  # fmt: skip
    client = get_llm_client(settings)
    if request.rerank != "none" and hits:
        with clock.stage("rerank"):
            hits = _reranker(request.rerank, settings, client).rerank(request.question, hits, top_k)
    hits = hits[:top_k]
    with clock.stage("expand"):
        retrieved, tree = apply_neighbor_expansion(
            store, hits, strategy=request.strategy.value, model_id=corpus.id, tenant_id=tenant_id,
            document_id=document.id, neighbor_prev=prev, neighbor_next=nxt,
        )  # fmt: skip
        blocks = attach_parents(
            store, retrieved, strategy=request.strategy.value, model_id=corpus.id, tenant_id=tenant_id,
            document_id=document.id,
        )  # fmt: skip
    guard = ChunkGuard.from_settings(settings)
    verdicts = [guard.block_verdict(block) for block in blocks]
    sources = _sources(blocks, verdicts, guard, for_llm=client is not None)
    with clock.stage("generate"):
        answer = generate_answer(
            request.question,
            guard.passages(
                [(source.number, _passage(source)) for source in sources], verdicts, for_llm=client is not None
            ),
            client=client,
            embed=corpus_embedder(corpus, settings, request.question, query_vector),
        )
    config = {
        "retriever": retriever.value, "top_k": top_k, "neighbor_prev": prev, "neighbor_next": nxt,
        "rerank": request.rerank, "candidate_k": candidates, "corpus_model_id": corpus.id, "score_floor": floor,
        "answer_mode": answer.mode, "llm_model": settings.llm_model if answer.mode == "llm" else None,
    }  # fmt: skip
    result = QueryOut(
        id=None,
        document_id=document.id,
        strategy=request.strategy,
        question=request.question,
        answer=answer.text,
        answer_mode=answer.mode,
        citations=answer.citations,
        sources=sources,
        # Each chunk's text travels once, in its source (sources[n - 1] is retrieved_chunks[n - 1]); the
        # chunk list and the Expansion Tree only refer to it. Three copies tripled the response and the row.
        retrieved_chunks=[chunk.to_dict(with_text=False) for chunk in retrieved],
        expansion_tree=[node.to_refs() for node in tree],
        latency_breakdown=clock.total(),
        token_usage={
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
            "total_tokens": answer.prompt_tokens + answer.completion_tokens,
            "context_tokens": sum(chunk.token_count for chunk in retrieved),
        },
        config=config,
    )
    return _save(database, result, tenant_id=tenant_id, document_id=document.id) if save else result


def search_stage(
    settings: Settings,
    store: VectorStore,
    clock: Stopwatch,
    *,
    question: str,
    strategy: StrategyName,
    corpus: EmbeddingModelSpec,
    retriever: RetrieverName,
    tenant_id: str,
    document_id: str | None,
    top_k: int,
    score_floor: float | None,
    query_vector: np.ndarray | None = None,
) -> tuple[list[RetrievedChunk], np.ndarray | None]:
    """Embed the question (unless BM25 alone, or ``query_vector`` is the Corpus model's vector of it already)
    and search, timing both; the hits and the question's vector."""
    vector = query_vector
    if vector is None and get_retriever(retriever).needs_query_vector:
        with clock.stage("embed"):
            vector = embedding.embed_query(corpus, question, settings)
    with clock.stage("search"):
        hits = retrieve(
            store, settings, strategy=strategy.value, corpus_spec=corpus, retriever=retriever, question=question,
            query_vector=vector, tenant_id=tenant_id, document_id=document_id, top_k=top_k, score_floor=score_floor,
        )  # fmt: skip
    return hits, vector


def _reranker(kind: str, settings: Settings, client):
    if kind == "cross_encoder":
        if not settings.cross_encoder_model:
            raise QueryError(
                "Cross-encoder reranking needs a model: set CHUNKBENCH_CROSS_ENCODER_MODEL to a sentence-transformers "
                "CrossEncoder folder (e.g. a downloaded cross-encoder/ms-marco-MiniLM-L-6-v2)."
            )
        return CrossEncoderReranker(settings.cross_encoder_model, settings)
    if client is None:
        raise QueryError("LLM reranking needs an LLM: set CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL.")
    return LlmListwiseReranker(
        lambda messages, *, max_tokens, response_format=None: (
            client.chat(messages, max_tokens=max_tokens, response_format=response_format).text
        )
    )


class _SentenceCache:
    """Bounded LRU of context-sentence embeddings per Corpus model.

    The extractive answerer embeds every sentence of the retrieved context; the same chunks come back
    across questions (a benchmark asks dozens of one document), so each sentence is embedded once.
    """

    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = capacity
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(
        self,
        corpus: EmbeddingModelSpec,
        texts: list[str],
        settings: Settings,
        known: dict[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, corpus.dimension), dtype=np.float32)
        found: dict[str, np.ndarray] = dict(known or {})
        with self._lock:
            for text in texts:
                if text in found:
                    continue
                vector = self._vectors.get((corpus.id, text))
                if vector is not None:
                    self._vectors.move_to_end((corpus.id, text))
                    found[text] = vector
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            fresh = embedding.embed_texts(corpus, missing, "document", settings)
            found.update(zip(missing, fresh, strict=True))
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    self._vectors[(corpus.id, text)] = vector
                while len(self._vectors) > self.capacity:
                    self._vectors.popitem(last=False)
        return np.stack([found[text] for text in texts])


_SENTENCES = _SentenceCache()


def corpus_embedder(
    corpus: EmbeddingModelSpec, settings: Settings, question: str, query_vector: np.ndarray | None
) -> Callable[[list[str]], np.ndarray]:
    """The Corpus model as the extractive answerer's sentence embedder: context sentences are cached
    across queries, and the question reuses the vector the search already computed."""
    known = {question.strip(): query_vector} if query_vector is not None else None
    return lambda texts: _SENTENCES.embed(corpus, texts, settings, known)


def _sources(
    blocks: list[ContextBlock], verdicts: list[InjectionVerdict], guard: ChunkGuard, *, for_llm: bool
) -> list[SourceOut]:
    """The numbered context passages with their injection verdicts; SourceOut picks its fields from the chunk's
    own dict."""
    return [
        SourceOut(
            **block.chunk.to_dict(),
            number=block.source,
            parent_text=block.parent.text if block.parent is not None else None,
            injection_risk=verdict.risk,
            injection_reasons=list(verdict.reasons),
            injection_flagged=verdict.flagged,
            injection_action=guard.action(verdict, for_llm=for_llm),
        )
        for block, verdict in zip(blocks, verdicts, strict=True)
    ]


def _passage(source: SourceOut) -> str:
    return f"{source.text}\n\n{source.parent_text}" if source.parent_text else source.text


def _save(database: Database, result: QueryOut, *, tenant_id: str, document_id: str) -> QueryOut:
    """Store the query (committed before this returns) and give it its id and time."""
    query_id = uuid.uuid4().hex
    record = QueryRecord(
        document_id=document_id,
        strategy_name=result.strategy.value,
        question=result.question,
        answer=result.answer,
        config=result.config,
        sources=[source.model_dump() for source in result.sources],
        citations=result.citations,
        retrieved_chunks=result.retrieved_chunks,
        expansion_tree=result.expansion_tree,
        latency_breakdown=result.latency_breakdown,
        token_usage=result.token_usage,
    )
    with database.engine.begin() as connection:
        created_at = QueryRepository(connection, tenant_id).add(record, query_id=query_id)
    return result.model_copy(update={"id": query_id, "created_at": created_at})


def query_out(row: QueryRow) -> QueryOut:
    """A stored query as the API returns it."""
    config = row.config or {}
    return QueryOut(
        id=row.id,
        document_id=row.document_id,
        strategy=StrategyName.stored(row.strategy_name),
        question=row.question,
        answer=row.answer or "",
        answer_mode=config.get("answer_mode", "none"),
        citations=row.citations,
        sources=[SourceOut(**source) for source in row.sources],
        retrieved_chunks=row.retrieved_chunks,
        expansion_tree=row.expansion_tree,
        latency_breakdown=row.latency_breakdown,
        token_usage=row.token_usage,
        config=config,
        created_at=row.created_at,
    )


def get(session: Session, query_id: str, *, tenant_id: str) -> QueryRow:
    row = session.scalar(select(QueryRow).where(QueryRow.id == query_id, QueryRow.tenant_id == tenant_id))
    if row is None:
        raise QueryNotFoundError(f"No query with id '{query_id}'.", query_id=query_id)
    return row


def get_all(session: Session, *, tenant_id: str, document_id: str | None = None, limit: int = 50) -> list[QueryRow]:
    statement = select(QueryRow).where(QueryRow.tenant_id == tenant_id)
    if document_id is not None:
        statement = statement.where(QueryRow.document_id == document_id)
    return list(session.scalars(statement.order_by(QueryRow.created_at.desc()).limit(limit)))
