"""The RAG API (seed 003): ``POST /v1/query`` and the caller's tenant's semantic cache."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from chunkbench.dependencies import DatabaseDep, SettingsDep, TenantDep, VectorStoreDep
from chunkbench.rag import service
from chunkbench.rag.cache import SemanticCache
from chunkbench.rag.schemas import CacheClearOut, CacheStatsOut, RAGRequest, RAGResponse
from chunkbench.schemas import ErrorOut

router = APIRouter(prefix="/v1", tags=["rag"])

_ERRORS = {400: {"model": ErrorOut}, 503: {"model": ErrorOut}}


async def get_semantic_cache(request: Request) -> SemanticCache:
    """The process's semantic cache (``app.state.semantic_cache``, built by ``create_app``)."""
    cache: SemanticCache | None = getattr(request.app.state, "semantic_cache", None)
    if cache is None:
        cache = request.app.state.semantic_cache = service.build_cache(request.app.state.settings)
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
    """Answer from the tenant's whole corpus with its serving configuration; the response carries the sanitised
    query (PII redacted), never the raw one. A prompt-injection attempt gets a fixed refusal (``blocked``)."""
    # The request id middleware (observability) sets it; without it the service makes one.
    request_id = getattr(request.state, "request_id", None)
    return service.answer_query(database, settings, store, cache, body, tenant_id=tenant_id, request_id=request_id)


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
