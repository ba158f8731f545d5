"""The RAG API (docs/service.md): ``POST /v1/query``, the semantic cache; the chatbot API (docs/retrieval.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, Request, UploadFile

from chunkbench.dependencies import DatabaseDep, SettingsDep, TenantDep, VectorStoreDep
from chunkbench.documents.schemas import IndexDirectoryIn
from chunkbench.rag import chatbot, guarded_query
from chunkbench.rag.schemas import (
    CacheClearOut,
    CacheStatsOut,
    ChatHealthOut,
    ChatIndexOut,
    ChatQueryIn,
    ChatQueryOut,
    RAGRequest,
    RAGResponse,
)
from chunkbench.rag.semantic_cache import SemanticCache
from chunkbench.schemas import ErrorOut, Responses, unprocessable

router = APIRouter(prefix="/v1", tags=["rag"])
chat_router = APIRouter(prefix="/api", tags=["chatbot"])

# 409: a document the serving configuration searches is not indexed any more (storage.index_state).
_ERRORS: Responses = {400: {"model": ErrorOut}, 409: {"model": ErrorOut}, 503: {"model": ErrorOut}}


async def get_semantic_cache(request: Request) -> SemanticCache:
    """The process's semantic cache (``app.state.semantic_cache``, built by ``create_app``)."""
    cache: SemanticCache | None = getattr(request.app.state, "semantic_cache", None)
    if cache is None:
        cache = request.app.state.semantic_cache = guarded_query.build_cache(request.app.state.settings)
    return cache


SemanticCacheDep = Annotated[SemanticCache, Depends(get_semantic_cache)]


@router.post("/query", response_model=RAGResponse, responses=_ERRORS)
def query(
    body: RAGRequest,
    request: Request,
    database: DatabaseDep,
    settings: SettingsDep,
    store: VectorStoreDep,
    cache: SemanticCacheDep,
    tenant_id: TenantDep,
) -> RAGResponse:
    """Answer from the tenant's whole corpus with its serving configuration, through the same query pipeline as
    ``/queries`` and the benchmark: reranking, Neighbor Expansion and parent context apply as configured.

    The response carries the sanitised query (PII redacted), never the raw one. A prompt-injection attempt gets a
    fixed refusal (``blocked``)."""
    # The request id middleware (observability) sets it; without it the service makes one.
    request_id = getattr(request.state, "request_id", None)
    return guarded_query.answer_query(
        database, settings, store, cache, body, tenant_id=tenant_id, request_id=request_id
    )


@router.get("/cache/stats", response_model=CacheStatsOut)
def cache_stats(cache: SemanticCacheDep, settings: SettingsDep, tenant_id: TenantDep) -> CacheStatsOut:
    """The caller's tenant's cache figures in this API process (each replica keeps its own cache)."""
    stats = cache.stats(tenant_id)
    return CacheStatsOut(
        enabled=settings.cache_enabled, entries=stats.entries, hits_exact=stats.hits_exact,
        hits_semantic=stats.hits_semantic, misses=stats.misses, hit_rate=stats.hit_rate,
        evictions=stats.evictions, max_entries=cache.max_entries, ttl_s=cache.ttl_s, similarity=cache.similarity,
    )  # fmt: skip


@router.delete("/cache", response_model=CacheClearOut)
def clear_cache(cache: SemanticCacheDep, tenant_id: TenantDep) -> CacheClearOut:
    """Forget the caller's tenant's cached answers (in this API process)."""
    return CacheClearOut(cleared=cache.clear(tenant_id))


_CHAT_ERRORS: Responses = {
    400: {"model": ErrorOut},
    404: {"model": ErrorOut},
    409: {"model": ErrorOut},
    503: {"model": ErrorOut},
}
_UPLOAD_ERRORS: Responses = {
    413: {"model": ErrorOut, "description": "File larger than CHUNKBENCH_MAX_UPLOAD_MB"},
    415: {"model": ErrorOut, "description": "Unsupported file type, or its converter is not installed"},
    422: unprocessable("A scanned PDF without a text layer (run OCR first), or an invalid request"),
}


@chat_router.post("/index", response_model=ChatIndexOut, responses={**_CHAT_ERRORS, **_UPLOAD_ERRORS})
def chat_index(
    database: DatabaseDep,
    settings: SettingsDep,
    store: VectorStoreDep,
    tenant_id: TenantDep,
    file: UploadFile = File(..., description=".pdf .txt .md .html .htm .docx .doc"),
) -> ChatIndexOut:
    """Ingest and index a file with the serving configuration; the same filename replaces (idempotent)."""
    return chatbot.index_upload(database, settings, store, file.file, file.filename or "", tenant_id=tenant_id)


@chat_router.post(
    "/index-directory",
    response_model=ChatIndexOut,
    responses={**_CHAT_ERRORS, 422: unprocessable("An invalid corpus name, or an invalid request")},
)
def chat_index_directory(
    body: IndexDirectoryIn, database: DatabaseDep, settings: SettingsDep, store: VectorStoreDep, tenant_id: TenantDep
) -> ChatIndexOut:
    """Index every supported file under a folder of the data directory (a path escaping it is a 400); with
    ``corpus``, every file ingested joins it."""
    return chatbot.index_directory(database, settings, store, body.path, tenant_id=tenant_id, corpus=body.corpus)


@chat_router.post("/query", response_model=ChatQueryOut, responses=_CHAT_ERRORS)
def chat_query(
    body: ChatQueryIn, database: DatabaseDep, settings: SettingsDep, store: VectorStoreDep, tenant_id: TenantDep
) -> ChatQueryOut:
    """Answer from every indexed document with the serving configuration, through the same query pipeline as
    ``/queries``: reranking, Neighbor Expansion and parent context apply as configured (503 if the LLM is
    unreachable)."""
    return chatbot.answer(database, settings, store, body.question, body.top_k, tenant_id=tenant_id)


@chat_router.get("/health", response_model=ChatHealthOut)
def chat_health(database: DatabaseDep, settings: SettingsDep, tenant_id: TenantDep) -> ChatHealthOut:
    return chatbot.health(database, settings, tenant_id=tenant_id)
