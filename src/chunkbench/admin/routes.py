"""Admin API (docs/api.md): thin translation to the embedding, vector-store and admin services.

Two roles: a tenant admin's key acts on its own tenant (its points, its Chunk Preview); what acts on the whole
deployment (models, creating and dropping collections, the shared embedding cache) takes ``OperatorDep``.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Response, status

from chunkbench.admin import consistency, operations
from chunkbench.admin.consistency import ConsistencyReport
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
    WhoAmIOut,
)
from chunkbench.dependencies import (
    DatabaseDep,
    OperatorDep,
    PrincipalDep,
    SessionDep,
    SettingsDep,
    TenantDep,
    VectorStoreDep,
)
from chunkbench.embedding import roles
from chunkbench.embedding.registry import get_spec
from chunkbench.indexing.schemas import ChunkPreviewOut, ChunkSizesOut
from chunkbench.models import StrategyName
from chunkbench.schemas import ErrorOut

router = APIRouter(
    prefix="/admin",
    tags=["admin"],
    responses={400: {"model": ErrorOut}, 403: {"model": ErrorOut}, 404: {"model": ErrorOut}},
)


@router.get("/health", response_model=AdminHealthOut)
def health(database: DatabaseDep, settings: SettingsDep, principal: PrincipalDep) -> AdminHealthOut:
    """Health of the app, the database, Qdrant (collections and points: the deployment's for the operator, its own
    share for a tenant admin) and the LLM (not configured, reachable or unreachable with the error); always 200,
    ``status`` says ``ok`` or ``degraded``."""
    return operations.health(database, settings, tenant_id=principal.points_scope)


@router.get("/me", response_model=WhoAmIOut)
def whoami(principal: PrincipalDep) -> WhoAmIOut:
    """Who the key is: its tenant and role (``operator`` or tenant ``admin``), so the dashboard offers only what the
    key may do (the server still refuses the rest with 403)."""
    return WhoAmIOut(
        tenant_id=principal.tenant_id or "",
        role="operator" if principal.is_operator else "admin",
        scopes=sorted(principal.scopes),
        key_id=principal.key_id,
    )


@router.get("/capabilities", response_model=CapabilitiesOut)
def capabilities(settings: SettingsDep) -> CapabilitiesOut:
    """What can work now (rerankers, the LLM-as-judge, the LLM), each unavailable one with why and the setting
    that enables it: the dashboard offers only these."""
    return operations.capabilities(settings)


@router.get("/embedding-models", response_model=EmbeddingModelsOut)
def list_embedding_models(session: SessionDep) -> dict[str, Any]:
    """The model registry with the Corpus/Boundary role defaults and effective thresholds."""
    return roles.list_models(session)


@router.put("/embedding-models/{role}", response_model=EmbeddingModelsOut)
def set_role(
    role: Literal["corpus", "boundary"], body: ModelRoleIn, session: SessionDep, _operator: OperatorDep
) -> dict[str, Any]:
    """Make a model the default for a role; operations already running keep their snapshot."""
    roles.set_role_model(session, role, body.model_id)
    return roles.list_models(session)


@router.put("/embedding-models/{model_id}/semantic-threshold", response_model=EmbeddingModelsOut)
def set_threshold(model_id: str, body: ThresholdIn, session: SessionDep, _operator: OperatorDep) -> dict[str, Any]:
    """Override the model's semantic threshold (used when it is the Boundary model)."""
    roles.set_semantic_threshold(session, model_id, body.threshold)
    return roles.list_models(session)


@router.get("/qdrant/collections", response_model=list[CollectionOut])
def list_collections(store: VectorStoreDep, principal: PrincipalDep) -> list[CollectionOut]:
    """Collections with their point counts: every tenant's for the operator, the caller's own for a tenant admin."""
    return operations.list_collections(store, tenant_id=principal.points_scope)


@router.post("/qdrant/collections", response_model=CollectionOut, status_code=status.HTTP_201_CREATED)
def create_collection(body: CollectionIn, store: VectorStoreDep, _operator: OperatorDep) -> CollectionOut:
    """Create the collection of a strategy × model (processing also creates it on demand)."""
    spec = get_spec(body.model_id)
    return CollectionOut(**store.create_collection(body.strategy, spec.id, spec.dimension))


@router.post("/qdrant/collections/{name}/wipe", status_code=status.HTTP_204_NO_CONTENT)
def wipe_collection(name: str, store: VectorStoreDep, database: DatabaseDep, principal: PrincipalDep) -> Response:
    """Delete the points, keep the collection: every tenant's for the operator, the caller's own for a tenant
    admin. The runs they belonged to read not indexed (their queries answer 409) until processed again."""
    operations.clear_collection(database, store, name, delete=False, tenant_id=principal.points_scope)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.delete("/qdrant/collections/{name}", status_code=status.HTTP_204_NO_CONTENT)
def delete_collection(name: str, store: VectorStoreDep, database: DatabaseDep, _operator: OperatorDep) -> Response:
    """Drop a collection and every tenant's points in it (operator only); their runs read not indexed."""
    operations.clear_collection(database, store, name, delete=True)
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
    return operations.chunk_preview(
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
    return operations.chunk_sizes(session, store, document_id, tenant_id=tenant_id)


@router.get("/embedding-cache", response_model=EmbeddingCacheOut)
def embedding_cache(settings: SettingsDep, _operator: OperatorDep) -> EmbeddingCacheOut:
    """The embedding cache file of this data directory: every text is embedded once per model. Shared by every
    tenant (keyed by model and text), so only the operator reads it."""
    return operations.embedding_cache_stats(settings)


@router.delete("/embedding-cache", response_model=EmbeddingCacheClearedOut, responses={500: {"model": ErrorOut}})
def clear_embedding_cache(
    settings: SettingsDep,
    _operator: OperatorDep,
    model_id: str | None = Query(None, description="Only this model's vectors"),
) -> EmbeddingCacheClearedOut:
    """Forget cached embeddings (all, or one model's); they are computed again when next needed. Operator only:
    the cache is every tenant's."""
    return operations.clear_embedding_cache(settings, model_id)


@router.get("/consistency", response_model=ConsistencyReport)
def check_consistency(database: DatabaseDep, store: VectorStoreDep, _operator: OperatorDep) -> ConsistencyReport:
    """The metadata store compared with the vector store, every tenant (operator only): each difference between
    runs, chunk counts and points; ``chunkbench doctor --repair`` fixes them."""
    return consistency.check(database, store)
