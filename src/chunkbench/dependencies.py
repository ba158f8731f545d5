"""FastAPI dependencies: the process's settings, database session and the caller's tenant."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.errors import AuthenticationError
from chunkbench.storage.db import Database
from chunkbench.storage.vectors import VectorStore
from chunkbench.storage.vectors import get_vector_store as _vector_store
from chunkbench.tenants.auth import Principal, authenticate, require_operator

# The dependencies that only read app.state are ``async``: FastAPI runs every plain ``def`` dependency
# in the thread pool, a hop per dependency per request (~0.2 ms idle, milliseconds on a busy machine).


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_database(request: Request) -> Database:
    return request.app.state.database


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.database.session() as session:
        yield session


async def get_vector_store(request: Request) -> VectorStore:
    """The process's vector store, opened on first use (embedded Qdrant locks its folder)."""
    store: VectorStore | None = getattr(request.app.state, "vector_store", None)
    if store is None or store.closed:
        # Opening embedded Qdrant reads its whole folder: off the event loop, once.
        store = await run_in_threadpool(_vector_store, request.app.state.settings)
        request.app.state.vector_store = store
    return store


async def get_tenant(principal: Annotated[Principal, Depends(authenticate)]) -> str:
    """The caller's tenant: the API key's with ``CHUNKBENCH_AUTH=on``, the default tenant with auth off.

    ``authenticate`` is also installed app-wide (``create_app``); FastAPI runs it once per request either way.
    """
    if principal.tenant_id is None:
        # A public route (tenants.auth.PUBLIC_PATHS) must not read tenant data.
        raise AuthenticationError("This route is public and has no tenant; tenant data needs an API key.")
    return principal.tenant_id


# ``scope="function"`` commits before the response leaves: a client never sees a 201 for a write
# that later failed to commit.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]
DatabaseDep = Annotated[Database, Depends(get_database)]
TenantDep = Annotated[str, Depends(get_tenant)]
PrincipalDep = Annotated[Principal, Depends(authenticate)]
# Deployment-wide operations: the operator's key (or auth off); 403 for every tenant's own keys.
OperatorDep = Annotated[Principal, Depends(require_operator)]
VectorStoreDep = Annotated[VectorStore, Depends(get_vector_store)]
