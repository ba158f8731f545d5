"""Queries API and the serving configuration: thin translation to the retrieval services."""

from __future__ import annotations

from fastapi import APIRouter, Query, Response, status
from fastapi.concurrency import run_in_threadpool

from chunkbench.config import Settings
from chunkbench.dependencies import DatabaseDep, SessionDep, SettingsDep, TenantDep, VectorStoreDep
from chunkbench.retrieval import queries
from chunkbench.retrieval.schemas import (
    QueryIn,
    QueryOut,
    ServingConfig,
)
from chunkbench.retrieval.serving import get_serving_config, set_serving_config
from chunkbench.schemas import ErrorOut, Responses
from chunkbench.storage.db import Database
from chunkbench.storage.vectors import VectorStore

router = APIRouter(tags=["queries"])
serving_router = APIRouter(prefix="/admin", tags=["admin"])

# 409 not_indexed: the run's points were removed (storage.index_state).
_ERRORS: Responses = {
    400: {"model": ErrorOut},
    404: {"model": ErrorOut},
    409: {"model": ErrorOut},
    503: {"model": ErrorOut},
}


@router.post("/queries", response_model=QueryOut, status_code=status.HTTP_201_CREATED, responses=_ERRORS)
async def create_query(
    body: QueryIn, database: DatabaseDep, settings: SettingsDep, store: VectorStoreDep, tenant_id: TenantDep
) -> Response:
    """Ask a processed document a question: answer, sources, Expansion Tree, latency and token breakdown."""
    # One explicit hop to a worker thread, where the JSON is written too. run_query built and validated
    # the QueryOut: FastAPI would dump it, validate it again and encode it (~0.3 ms); response_model keeps
    # the OpenAPI schema.
    content = await run_in_threadpool(_query_json, database, settings, store, body, tenant_id)
    return Response(content, status_code=status.HTTP_201_CREATED, media_type="application/json")


def _query_json(database: Database, settings: Settings, store: VectorStore, body: QueryIn, tenant_id: str) -> bytes:
    return queries.run_query(database, settings, store, body, tenant_id=tenant_id).model_dump_json().encode()


@router.get("/queries/{query_id}", response_model=QueryOut, responses=_ERRORS)
def get_query(query_id: str, session: SessionDep, tenant_id: TenantDep) -> QueryOut:
    return queries.query_out(queries.get(session, query_id, tenant_id=tenant_id))


@router.get("/queries", response_model=list[QueryOut])
def list_queries(
    session: SessionDep,
    tenant_id: TenantDep,
    document_id: str | None = Query(None),
    limit: int = Query(50, ge=1, le=500),
) -> list[QueryOut]:
    """Query history, newest first."""
    rows = queries.get_all(session, tenant_id=tenant_id, document_id=document_id, limit=limit)
    return [queries.query_out(row) for row in rows]


@serving_router.get("/serving", response_model=ServingConfig)
def get_serving(session: SessionDep, tenant_id: TenantDep) -> ServingConfig:
    """The configuration the caller's tenant is answered from (``/api/query``, ``/v1/query``)."""
    return get_serving_config(session, tenant_id)


@serving_router.put("/serving", response_model=ServingConfig, responses=_ERRORS)
def put_serving(body: ServingConfig, session: SessionDep, tenant_id: TenantDep) -> ServingConfig:
    """Set the caller's tenant's configuration (other tenants keep theirs, or the global default)."""
    return set_serving_config(session, body, tenant_id)
