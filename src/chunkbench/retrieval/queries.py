"""``POST /queries`` (docs/api.md): one question against one processed document, answered by the query pipeline
and stored in the query history; the history's reads."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.embedding.registry import EmbeddingModelSpec, get_spec
from chunkbench.errors import NotFoundError, QueryError
from chunkbench.models import StrategyName
from chunkbench.retrieval import pipeline
from chunkbench.retrieval.pipeline import QueryResult, Scope, Source
from chunkbench.retrieval.schemas import QueryIn, QueryOut, SourceOut
from chunkbench.storage.db import Database
from chunkbench.storage.index_state import require_indexed
from chunkbench.storage.repositories import QueryRecord, QueryRepository
from chunkbench.storage.schema import QueryRow
from chunkbench.storage.vectors import VectorStore


class QueryNotFoundError(NotFoundError):
    code = "query_not_found"


def _resolve_corpus(database: Database, requested: str | None, last_used: str | None) -> EmbeddingModelSpec:
    # The question must be embedded by the model that embedded the chunks: default to that one. Only a
    # document never embedded has neither; the configured Corpus role is read from app_settings then.
    chosen = requested or last_used
    if chosen:
        return get_spec(chosen)
    with database.session() as session:
        return roles.resolve_corpus_model(session)


def run_query(
    database: Database, settings: Settings, store: VectorStore, request: QueryIn, *, tenant_id: str, save: bool = True
) -> QueryOut:
    """Answer a question over one processed document and strategy (the ``/queries`` face of the pipeline)."""
    # A bare connection, not a session: one indexed read of four columns is all a query needs.
    with database.engine.connect() as connection:
        document = QueryRepository(connection, tenant_id).query_target(request.document_id)
        corpus_model_id = request.corpus_model_id or document.last_corpus_embedding_model_id
        if corpus_model_id is not None:
            require_indexed(connection, tenant_id, request.strategy.value, corpus_model_id, [document.id])
    if request.strategy.value not in document.chunk_counts:
        raise QueryError(
            f"'{document.filename}' has not been processed with the '{request.strategy.value}' strategy. "
            f"Run: chunkbench process {document.id} --strategies {request.strategy.value}",
            document_id=document.id,
        )
    plan = pipeline.make_plan(
        settings,
        question=request.question,
        scope=Scope.document(tenant_id, document.id),
        strategy=request.strategy,
        corpus=_resolve_corpus(database, request.corpus_model_id, document.last_corpus_embedding_model_id),
        retriever=request.retriever,
        top_k=request.top_k,
        candidate_k=request.candidate_k,
        rerank=request.rerank,
        score_floor=request.score_floor,
        neighbor_prev=request.neighbor_prev,
        neighbor_next=request.neighbor_next,
        exact=False,  # serving: the HNSW graph where the collection has one
    )
    result = query_out_of(pipeline.run(settings, store, plan), settings)
    return _save(database, result, tenant_id=tenant_id, document_id=document.id) if save else result


def query_out_of(result: QueryResult, settings: Settings) -> QueryOut:
    """The API's view of a pipeline result."""
    plan, answer = result.plan, result.answer
    assert answer is not None  # /queries always answers
    config = {
        "retriever": plan.retriever.value, "top_k": plan.top_k, "neighbor_prev": plan.neighbor_prev,
        "neighbor_next": plan.neighbor_next, "rerank": plan.rerank, "candidate_k": plan.candidate_k,
        "corpus_model_id": plan.corpus.id, "score_floor": plan.score_floor, "answer_mode": answer.mode,
        "llm_model": settings.llm_model if answer.mode == "llm" else None,
    }  # fmt: skip
    return QueryOut(
        id=None,
        document_id=plan.scope.single,
        strategy=plan.strategy,
        question=plan.question,
        answer=answer.text,
        answer_mode=answer.mode,
        citations=answer.citations,
        sources=[source_out(source) for source in result.sources],
        # Each chunk's text travels once, in its source (sources[n - 1] is retrieved_chunks[n - 1]); the
        # chunk list and the Expansion Tree only refer to it. Three copies tripled the response and the row.
        retrieved_chunks=[chunk.to_dict(with_text=False) for chunk in result.context],
        expansion_tree=[node.to_refs() for node in result.tree],
        latency_breakdown=result.latency_ms,
        token_usage=result.token_usage(),
        config=config,
    )


def source_out(source: Source) -> SourceOut:
    """A numbered context passage with its injection verdict; SourceOut picks its fields from the chunk's dict."""
    verdict = source.verdict
    return SourceOut(
        **source.chunk.to_dict(),
        number=source.number,
        context_header=source.chunk.context_header,
        parent_text=source.parent.text if source.parent is not None else None,
        injection_risk=verdict.risk if verdict else 0.0,
        injection_reasons=list(verdict.reasons) if verdict else [],
        injection_flagged=verdict.flagged if verdict else False,
        injection_action=source.action,
    )


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
