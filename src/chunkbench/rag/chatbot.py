"""The chatbot API's logic (docs/retrieval.md): index files with the serving configuration, answer across them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from sqlalchemy import select

from chunkbench.config import Settings
from chunkbench.documents import ingest
from chunkbench.documents.ingest_results import IngestOutcome, IngestResult, IngestSummary
from chunkbench.errors import ChunkbenchError
from chunkbench.indexing import processing
from chunkbench.indexing.schemas import ProcessIn
from chunkbench.llm.client import get_llm_client
from chunkbench.rag import guarded_query
from chunkbench.rag.schemas import ChatFileOut, ChatHealthOut, ChatIndexOut, ChatQueryOut, ChatSourceOut, RAGRequest
from chunkbench.retrieval.schemas import ServingConfig
from chunkbench.retrieval.serving import get_serving_config
from chunkbench.schemas import ErrorOut
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DocumentRow
from chunkbench.storage.vectors import VectorStore

_SOURCE_PREVIEW_CHARS = 200


def _serving(database: Database, tenant_id: str) -> ServingConfig:
    """The tenant's serving configuration (indexing and health need not every document it searches indexed)."""
    with database.session() as session:
        return get_serving_config(session, tenant_id)


def _index(
    database: Database,
    settings: Settings,
    store: VectorStore,
    result: IngestResult,
    config: ServingConfig,
    tenant_id: str,
) -> int:
    """Process an ingested document with the serving configuration unless it already is; chunks indexed."""
    document = result.document
    assert document is not None  # callers index stored files only (ingest_upload raises on a refused one)
    already = (
        result.outcome is IngestOutcome.UNCHANGED
        and document.last_corpus_embedding_model_id == config.corpus_model_id
        and config.strategy.value in (document.chunk_counts or {})
    )
    if already:
        return document.chunk_counts[config.strategy.value]
    request = ProcessIn(strategies=[config.strategy], corpus_model_id=config.corpus_model_id)
    outcome = processing.process(database, settings, store, document.id, request, tenant_id=tenant_id)
    if outcome.failed:
        failure = outcome.failed[0]
        raise ChunkbenchError(f"Indexing '{document.filename}' failed: {failure.message}")
    return outcome.chunk_counts[config.strategy.value]


def index_upload(
    database: Database, settings: Settings, store: VectorStore, stream: BinaryIO, filename: str, *, tenant_id: str
) -> ChatIndexOut:
    """``POST /api/index``: same filename replaces, same bytes change nothing (idempotent)."""
    config = _serving(database, tenant_id)
    result = ingest.ingest_upload(database, settings, stream, filename, tenant_id=tenant_id)
    count = _index(database, settings, store, result, config, tenant_id)
    return ChatIndexOut(
        status="success", chunks_created=count, message=f"Indexed {count} chunks from {result.filename}"
    )


def index_directory(
    database: Database,
    settings: Settings,
    store: VectorStore,
    relative: str,
    *,
    tenant_id: str,
    corpus: str | None = None,
) -> ChatIndexOut:
    """``POST /api/index-directory``: every supported file under a folder of the data directory (joining
    ``corpus`` when given); every other file listed as skipped, and a file that fails to index as refused."""
    config = _serving(database, tenant_id)
    total, outcomes, files = 0, [], []
    for result in ingest.index_directory(database, settings, relative, tenant_id=tenant_id, corpus=corpus):
        chunks = None
        if result.document is not None:
            try:
                chunks = _index(database, settings, store, result, config, tenant_id)
                total += chunks
            except ChunkbenchError as exc:  # ingested, but not searchable: refused as far as the chatbot goes
                result = replace(result, outcome=IngestOutcome.FAILED, error=exc)
        outcomes.append(result)
        files.append(
            ChatFileOut(
                source_key=result.source_key,
                outcome=result.outcome,
                chunks=chunks if result.error is None else None,
                error=ErrorOut(**result.error.to_dict()) if result.error is not None else None,
                skip_reason=result.skip_reason,
            )
        )
    summary = IngestSummary.of(outcomes)
    refusals = [f"{r.source_key}: {r.error.message}" for r in outcomes if r.error is not None]
    indexed = sum(file.chunks is not None for file in files)
    message = f"Indexed {total} chunks from {indexed} file(s) under {Path(relative).as_posix()} ({summary.line})"
    if refusals:
        message += ". Refused: " + "; ".join(refusals)
    return ChatIndexOut(
        status="success" if not refusals else "partial",
        chunks_created=total,
        message=message,
        summary=summary,
        files=files,
    )


def answer(
    database: Database, settings: Settings, store: VectorStore, question: str, top_k: int | None, *, tenant_id: str
) -> ChatQueryOut:
    """``POST /api/query``: ``/v1/query``'s answer (guarded, PII redacted, the serving configuration over the whole
    corpus), each question afresh (no semantic cache), in the chatbot's shape: the first 200 characters per source."""
    result = guarded_query.answer_query(
        database, settings, store, None, RAGRequest(query=question, top_k=top_k), tenant_id=tenant_id
    )
    return ChatQueryOut(
        answer=result.answer,
        sources=[
            ChatSourceOut(
                text=source.text[:_SOURCE_PREVIEW_CHARS],
                score=source.score,
                source=source.filename,
                injection_flagged=source.injection_flagged,
            )
            for source in result.sources
        ],
        latency_ms=result.latency_ms,
    )


def health(database: Database, settings: Settings, *, tenant_id: str) -> ChatHealthOut:
    """Chunks indexed under the serving configuration, and whether the configured LLM answers."""
    config = _serving(database, tenant_id)
    with database.session() as session:
        rows = session.scalars(
            select(DocumentRow).where(
                DocumentRow.tenant_id == tenant_id,
                DocumentRow.last_corpus_embedding_model_id == config.corpus_model_id,
            )
        ).all()
        chunks = sum((row.chunk_counts or {}).get(config.strategy.value, 0) for row in rows)
    client = get_llm_client(settings)
    connected = bool(client is not None and client.health()["ok"])
    return ChatHealthOut(
        status="ok", documents_indexed=chunks, llm_connected=connected, llm_configured=client is not None
    )
