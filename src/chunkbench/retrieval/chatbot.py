"""The chatbot API's logic (seed 002 §4): index files with the serving configuration, answer across them."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
from sqlalchemy import select

from chunkbench.chunking import service as processing
from chunkbench.chunking.schemas import ProcessIn
from chunkbench.config import Settings
from chunkbench.documents import service as documents
from chunkbench.documents.service import IngestOutcome, IngestResult
from chunkbench.embedding.registry import get_spec
from chunkbench.errors import ChunkbenchError
from chunkbench.guard.injection import InjectionVerdict
from chunkbench.llm.answer import AnswerResult, generate_answer
from chunkbench.llm.client import get_llm_client
from chunkbench.retrieval import service as queries
from chunkbench.retrieval.context import ChunkGuard, InjectionAction
from chunkbench.retrieval.schemas import ChatHealthOut, ChatIndexOut, ChatQueryOut, ChatSourceOut, ServingConfig
from chunkbench.retrieval.search import RetrievedChunk, RetrieverName
from chunkbench.retrieval.serving import get_serving_config
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DocumentRow
from chunkbench.storage.vectors import VectorStore

_SOURCE_PREVIEW_CHARS = 200


def _serving(database: Database, tenant_id: str) -> ServingConfig:
    with database.session() as session:
        return get_serving_config(session, tenant_id)


@dataclass(frozen=True)
class CorpusAnswer:
    """An answer over a tenant's whole corpus, the hits it came from and the question's Corpus-model vector."""

    result: AnswerResult
    hits: list[RetrievedChunk]
    query_vector: np.ndarray | None
    # The prompt-injection verdict of each hit, in order, and what the context builder did with it.
    verdicts: list[InjectionVerdict]
    actions: list[InjectionAction]


def answer_from_corpus(
    settings: Settings,
    store: VectorStore,
    config: ServingConfig,
    question: str,
    *,
    tenant_id: str,
    top_k: int | None = None,
    query_vector: np.ndarray | None = None,
    max_tokens: int | None = None,
) -> CorpusAnswer:
    """Search every document of the tenant with ``config`` and answer (shared by ``/api/query`` and ``/v1/query``).

    ``query_vector``: the question's vector from ``config``'s Corpus model when the caller has it already.
    """
    corpus = get_spec(config.corpus_model_id)
    clock = queries.Stopwatch()
    hits, vector = queries.search_stage(
        settings, store, clock, question=question, strategy=config.strategy, corpus=corpus,
        retriever=RetrieverName(config.retriever), tenant_id=tenant_id, document_id=None,
        top_k=top_k or config.top_k, score_floor=settings.score_floor, query_vector=query_vector,
    )  # fmt: skip
    client = get_llm_client(settings)
    guard = ChunkGuard.from_settings(settings)
    verdicts = [guard.chunk_verdict(hit) for hit in hits]
    actions = [guard.action(verdict, for_llm=client is not None) for verdict in verdicts]
    passages = [(number, hit.text) for number, hit in enumerate(hits, start=1)]
    result = generate_answer(
        question,
        guard.passages(passages, verdicts, for_llm=client is not None),
        client=client,
        embed=queries.corpus_embedder(corpus, settings, question, vector),
        max_tokens=max_tokens,
    )
    return CorpusAnswer(result, hits, vector, verdicts, actions)


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
    already = (
        result.outcome is IngestOutcome.UNCHANGED
        and document.last_corpus_embedding_model_id == config.corpus_model_id
        and config.strategy.value in (document.chunk_counts or {})
    )
    if already:
        return document.chunk_counts[config.strategy.value]
    request = ProcessIn(strategies=[config.strategy], corpus_model_id=config.corpus_model_id)
    with database.session() as session:
        plan = processing.plan(session, settings, document.id, request, tenant_id=tenant_id)
    outcome = processing.run(database, settings, store, plan, lambda _fraction, _message: None)
    if outcome.failed:
        failure = outcome.failed[0]
        raise ChunkbenchError(f"Indexing '{document.filename}' failed: {failure.message}")
    return outcome.chunk_counts[config.strategy.value]


def index_upload(
    database: Database, settings: Settings, store: VectorStore, stream: BinaryIO, filename: str, *, tenant_id: str
) -> ChatIndexOut:
    """``POST /api/index``: same filename replaces, same bytes change nothing (idempotent)."""
    config = _serving(database, tenant_id)
    result = documents.ingest_upload(database, settings, stream, filename, tenant_id=tenant_id)
    count = _index(database, settings, store, result, config, tenant_id)
    return ChatIndexOut(
        status="success", chunks_created=count, message=f"Indexed {count} chunks from {result.filename}"
    )


def index_directory(
    database: Database, settings: Settings, store: VectorStore, relative: str, *, tenant_id: str
) -> ChatIndexOut:
    """``POST /api/index-directory``: every supported file under a folder of the data directory."""
    config = _serving(database, tenant_id)
    total, indexed, failures = 0, 0, []
    for result in documents.index_directory(database, settings, relative, tenant_id=tenant_id):
        if result.error is not None:
            failures.append(f"{result.filename}: {result.error.message}")
            continue
        try:
            total += _index(database, settings, store, result, config, tenant_id)
            indexed += 1
        except ChunkbenchError as exc:
            failures.append(f"{result.filename}: {exc.message}")
    message = f"Indexed {total} chunks from {indexed} file(s) under {Path(relative).as_posix()}"
    if failures:
        message += f"; {len(failures)} failed: " + "; ".join(failures)
    return ChatIndexOut(status="success" if not failures else "partial", chunks_created=total, message=message)


def answer(
    database: Database, settings: Settings, store: VectorStore, question: str, top_k: int | None, *, tenant_id: str
) -> ChatQueryOut:
    """``POST /api/query``: search every document of the tenant with the serving configuration, then answer."""
    started = time.perf_counter()
    config = _serving(database, tenant_id)
    found = answer_from_corpus(settings, store, config, question, tenant_id=tenant_id, top_k=top_k)
    return ChatQueryOut(
        answer=found.result.text,
        sources=[
            ChatSourceOut(
                text=hit.text[:_SOURCE_PREVIEW_CHARS],
                score=hit.score,
                source=hit.document_name,
                injection_flagged=verdict.flagged,
            )
            for hit, verdict in zip(found.hits, found.verdicts, strict=True)
        ],
        latency_ms=round((time.perf_counter() - started) * 1000, 1),
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
