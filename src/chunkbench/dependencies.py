"""FastAPI dependencies: the process's settings, database session and the caller's tenant."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.storage.vectors import VectorStore
from chunkbench.storage.vectors import get_vector_store as _vector_store


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_database(request: Request) -> Database:
    return request.app.state.database


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.database.session() as session:
        yield session


def get_vector_store(request: Request) -> VectorStore:
    """The process's vector store, opened on first use (embedded Qdrant locks its folder)."""
    return _vector_store(request.app.state.settings)


def get_tenant() -> str:
    """The caller's tenant. Single-user mode: always the default tenant (API keys come with auth)."""
    return DEFAULT_TENANT


# ``scope="function"`` commits before the response leaves: a client never sees a 201 for a write
# that later failed to commit.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]
DatabaseDep = Annotated[Database, Depends(get_database)]
TenantDep = Annotated[str, Depends(get_tenant)]
VectorStoreDep = Annotated[VectorStore, Depends(get_vector_store)]
