"""Admin API (seed 000 §11): thin translation to the embedding, vector-store and admin services."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Response, status

from chunkbench.admin import service
from chunkbench.admin.schemas import (
    AdminHealthOut,
    CapabilitiesOut,
    CollectionIn,
    CollectionOut,
    EmbeddingCacheClearedOut,
    EmbeddingCacheOut,
    EmbeddingModelsOut,
    ModelRoleIn,
    ThresholdIn,
)
from chunkbench.dependencies import DatabaseDep, SessionDep, SettingsDep, TenantDep, VectorStoreDep
from chunkbench.embedding import service as embedding
from chunkbench.embedding.registry import get_spec
from chunkbench.indexing.schemas import ChunkPreviewOut, ChunkSizesOut
from chunkbench.models import StrategyName
from chunkbench.schemas import ErrorOut

router = APIRouter(prefix="/admin", tags=["admin"], responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}})


@router.get("/health", response_model=AdminHealthOut)
def health(database: DatabaseDep, settings: SettingsDep) -> AdminHealthOut:
    """Health of the app, the database, Qdrant (collections count) and the LLM (not configured, reachable or
    unreachable with the error); always 200, ``status`` says ``ok`` or ``degraded``."""
    return service.health(database, settings)


@router.get("/capabilities", response_model=CapabilitiesOut)
def capabilities(settings: SettingsDep) -> CapabilitiesOut:
    """What can work now (rerankers, the LLM-as-judge, the LLM), each unavailable one with why and the setting
    that enables it: the dashboard offers only these."""
    return service.capabilities(settings)


@router.get("/embedding-models", response_model=EmbeddingModelsOut)
def list_embedding_models(session: SessionDep) -> dict[str, Any]:
    """The model registry with the Corpus/Boundary role defaults and effective thresholds."""
    return embedding.list_models(session)


@router.put("/embedding-models/{role}", response_model=EmbeddingModelsOut)
def set_role(role: Literal["corpus", "boundary"], body: ModelRoleIn, session: SessionDep) -> dict[str, Any]:
    """Make a model the default for a role; operations already running keep their snapshot."""
    embedding.set_role_model(session, role, body.model_id)
    return embedding.list_models(session)


@router.put("/embedding-models/{model_id}/semantic-threshold", response_model=EmbeddingModelsOut)
def set_threshold(model_id: str, body: ThresholdIn, session: SessionDep) -> dict[str, Any]:
    """Override the model's semantic threshold (used when it is the Boundary model)."""
    embedding.set_semantic_threshold(session, model_id, body.threshold)
    return embedding.list_models(session)


@router.get("/qdrant/collections", response_model=list[CollectionOut])
def list_collections(store: VectorStoreDep) -> list[CollectionOut]:
    return [CollectionOut(**info) for info in store.list_collections()]


@router.post("/qdrant/collections", response_model=CollectionOut, status_code=status.HTTP_201_CREATED)
def create_collection(body: CollectionIn, store: VectorStoreDep) -> CollectionOut:
    """Create the collection of a strategy × model (processing also creates it on demand)."""
    spec = get_spec(body.model_id)
    return CollectionOut(**store.create_collection(body.strategy, spec.id, spec.dimension))


@router.post("/qdrant/collections/{name}/wipe", status_code=status.HTTP_204_NO_CONTENT)
def wipe_collection(name: str, store: VectorStoreDep, session: SessionDep) -> Response:
    """Delete every point, keep the collection."""
    service.clear_collection(session, store, name, delete=False)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.delete("/qdrant/collections/{name}", status_code=status.HTTP_204_NO_CONTENT)
def delete_collection(name: str, store: VectorStoreDep, session: SessionDep) -> Response:
    service.clear_collection(session, store, name, delete=True)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/chunks/{document_id}", response_model=ChunkPreviewOut)
def chunk_preview(
    document_id: str,
    session: SessionDep,
    settings: SettingsDep,
    store: VectorStoreDep,
    tenant_id: TenantDep,
    strategy: StrategyName = Query(...),
    corpus_model_id: str | None = Query(None),
    offset: int = Query(0, ge=0),
    limit: int = Query(100, ge=1, le=1000),
    start: int | None = Query(None, ge=0, description="With end: only the chunks overlapping [start, end)"),
    end: int | None = Query(None, ge=1, description="A character offset into the markdown, past start"),
) -> ChunkPreviewOut:
    """Chunk Preview: the indexed chunks with exact offsets (and contextual retrieval's prefixes), and the run's
    diagnostics."""
    return service.chunk_preview(
        session,
        settings,
        store,
        document_id,
        strategy,
        tenant_id=tenant_id,
        corpus_model_id=corpus_model_id,
        offset=offset,
        limit=limit,
        start=start,
        end=end,
    )


@router.get("/chunks/{document_id}/sizes", response_model=ChunkSizesOut)
def chunk_sizes(document_id: str, session: SessionDep, store: VectorStoreDep, tenant_id: TenantDep) -> ChunkSizesOut:
    """A token-size histogram of each indexed strategy × Corpus model of the document, on shared bins."""
    return service.chunk_sizes(session, store, document_id, tenant_id=tenant_id)


@router.get("/embedding-cache", response_model=EmbeddingCacheOut)
def embedding_cache(settings: SettingsDep) -> EmbeddingCacheOut:
    """The embedding cache file of this data directory: every text is embedded once per model."""
    return service.embedding_cache_stats(settings)


@router.delete("/embedding-cache", response_model=EmbeddingCacheClearedOut, responses={500: {"model": ErrorOut}})
def clear_embedding_cache(
    settings: SettingsDep, model_id: str | None = Query(None, description="Only this model's vectors")
) -> EmbeddingCacheClearedOut:
    """Forget cached embeddings (all, or one model's); they are computed again when next needed."""
    return service.clear_embedding_cache(settings, model_id)
