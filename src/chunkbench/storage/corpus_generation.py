"""A tenant's corpus generation: a token in ``app_settings`` replaced whenever the tenant's documents change.

Caches of answers (the semantic cache) tag each entry with the generation they read before answering; an
entry whose generation is no longer current answers from a corpus that has changed since, so it is dropped.
The token lives in the database, not in a process, so every API process sharing the database sees a change
made by any of them (one indexed read per lookup).
"""

from __future__ import annotations

import uuid

from sqlalchemy import select, union
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from chunkbench.storage.app_settings import AppSettingsRepository
from chunkbench.storage.schema import AppSettingRow, DocumentRow

_PREFIX = "corpus_generation:"
INITIAL = "initial"  # a tenant whose documents never changed since generations exist


def key(tenant_id: str) -> str:
    return f"{_PREFIX}{tenant_id}"


def current(bind: Session | Connection, tenant_id: str) -> str:
    """The tenant's current generation token."""
    value = bind.scalar(select(AppSettingRow.value).where(AppSettingRow.key == key(tenant_id)))
    return value or INITIAL


def bump(session: Session, tenant_id: str) -> str:
    """Give the tenant a fresh generation (in the caller's transaction) and return it."""
    token = uuid.uuid4().hex
    AppSettingsRepository(session).set(key(tenant_id), token)
    return token


def bump_all(session: Session) -> int:
    """A fresh generation for every tenant with documents or a generation (a whole collection changed)."""
    tenants = session.scalars(
        union(
            select(DocumentRow.tenant_id).distinct(),
            select(AppSettingRow.key).where(AppSettingRow.key.startswith(_PREFIX, autoescape=True)),
        )
    ).all()
    names = {tenant.removeprefix(_PREFIX) for tenant in tenants}
    for tenant_id in names:
        bump(session, tenant_id)
    return len(names)
