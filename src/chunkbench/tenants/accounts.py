"""Tenants and their API keys: create, list, revoke, and find the key behind a bearer token.

A key is ``cb_<prefix>_<secret>``: 12 hex characters that find its row and name it in lists, then 32 random
bytes. Only the SHA-256 of the whole key is stored (a high-entropy secret needs no slow hash), and it is
compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.errors import ApiKeyNotFoundError, InvalidRequestError, TenantExistsError, TenantNotFoundError
from chunkbench.storage.schema import ApiKeyRow, TenantRow, utcnow

KEY_PREFIX = "cb"
SCOPE_QUERY = "query"
# ``admin``: the tenant's administrator (its serving configuration, question sets, its own points and cache share).
SCOPE_ADMIN = "admin"
# ``operator``: the deployment's (collections, the shared embedding cache, models, tenants, keys, metrics). No key
# had it before roles were split, so every existing admin key is a tenant admin of its own tenant only.
SCOPE_OPERATOR = "operator"
SCOPES = (SCOPE_QUERY, SCOPE_ADMIN, SCOPE_OPERATOR)
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_TOKEN = re.compile(rf"^{KEY_PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{43}})$")
# last_used_at is written at most this often per key and process: a write per request would cost more than it tells.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class KeyRecord:
    """What authentication needs to know about a valid key: its tenant, scopes and the tenant's rate limit."""

    key_id: str
    tenant_id: str
    scopes: frozenset[str]
    rate_limit_per_minute: float | None = None
    rate_limit_burst: int | None = None


def slugify(name: str) -> str:
    """A tenant id from a display name: lowercase ASCII letters, digits, ``-``."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:64]
    return slug


def hash_key(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_key(token: str) -> str | None:
    """The prefix of a well-formed key, or None."""
    match = _TOKEN.match(token)
    return match.group(1) if match else None


# ------------------------------------------------------------------------------------------------ tenants


def create_tenant(
    session: Session,
    name: str,
    *,
    tenant_id: str | None = None,
    rate_limit_per_minute: float | None = None,
    rate_limit_burst: int | None = None,
) -> TenantRow:
    """Create a tenant; its id is ``tenant_id`` or the slug of ``name`` (409 when taken)."""
    name = name.strip()
    if not name:
        raise InvalidRequestError("A tenant needs a name.")
    slug = tenant_id if tenant_id is not None else slugify(name)
    if not _SLUG.match(slug):
        raise InvalidRequestError(
            f"'{slug}' is not a usable tenant id: 1–64 lowercase letters, digits, '-' or '_', "
            "starting with a letter or digit.",
            tenant_id=slug,
        )
    if rate_limit_per_minute is not None and rate_limit_per_minute < 0:
        raise InvalidRequestError("rate_limit_per_minute must be ≥ 0 (0 = unlimited).")
    if rate_limit_burst is not None and rate_limit_burst < 1:
        raise InvalidRequestError("rate_limit_burst must be ≥ 1.")
    if session.get(TenantRow, slug) is not None:
        raise TenantExistsError(f"A tenant '{slug}' already exists.", tenant_id=slug)
    row = TenantRow(id=slug, name=name, rate_limit_per_minute=rate_limit_per_minute, rate_limit_burst=rate_limit_burst)
    session.add(row)
    session.flush()
    return row


def get_tenant(session: Session, tenant_id: str) -> TenantRow:
    row = session.get(TenantRow, tenant_id)
    if row is None:
        raise TenantNotFoundError(
            f"No tenant '{tenant_id}'. `chunkbench admin tenant list` shows them.", tenant_id=tenant_id
        )
    return row


def list_tenants(session: Session) -> Sequence[TenantRow]:
    return session.scalars(select(TenantRow).order_by(TenantRow.created_at, TenantRow.id)).all()


# --------------------------------------------------------------------------------------------------- keys


def create_key(
    session: Session, tenant_id: str, *, name: str | None = None, admin: bool = False, operator: bool = False
) -> tuple[ApiKeyRow, str]:
    """A new key for the tenant: its row and the key itself, which exists only in this return value (an operator
    key is also its tenant's admin)."""
    get_tenant(session, tenant_id)
    prefix = secrets.token_hex(6)
    token = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiKeyRow(
        id=uuid.uuid4().hex,
        tenant_id=tenant_id,
        name=name,
        prefix=prefix,
        key_hash=hash_key(token),
        scopes=key_scopes(admin=admin, operator=operator),
    )
    session.add(row)
    session.flush()
    return row, token


def key_scopes(*, admin: bool = False, operator: bool = False) -> list[str]:
    """The scopes of a new key: query always, admin for a tenant admin, all three for an operator."""
    if operator:
        return [SCOPE_QUERY, SCOPE_ADMIN, SCOPE_OPERATOR]
    return [SCOPE_QUERY, SCOPE_ADMIN] if admin else [SCOPE_QUERY]


def list_keys(session: Session, *, tenant_id: str | None = None) -> Sequence[ApiKeyRow]:
    statement = select(ApiKeyRow).order_by(ApiKeyRow.created_at, ApiKeyRow.id)
    if tenant_id is not None:
        statement = statement.where(ApiKeyRow.tenant_id == tenant_id)
    return session.scalars(statement).all()


def revoke_key(session: Session, key: str) -> ApiKeyRow:
    """Revoke a key by its id or prefix (idempotent: a revoked key keeps its first revocation time)."""
    row = session.get(ApiKeyRow, key) or session.scalar(select(ApiKeyRow).where(ApiKeyRow.prefix == key))
    if row is None:
        raise ApiKeyNotFoundError(f"No API key '{key}'. `chunkbench admin key list` shows them.", key=key)
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        session.flush()
    return row


def find_key(session: Session, token: str, *, now: datetime | None = None) -> KeyRecord | None:
    """The valid (well-formed, known, not revoked) key behind ``token``, or None; notes when it was last used."""
    prefix = parse_key(token)
    if prefix is None:
        return None
    row = session.scalar(select(ApiKeyRow).where(ApiKeyRow.prefix == prefix))
    if row is None or not hmac.compare_digest(row.key_hash, hash_key(token)) or row.revoked_at is not None:
        return None
    now = now or utcnow()
    if row.last_used_at is None or _aware(row.last_used_at) < now - LAST_USED_RESOLUTION:
        row.last_used_at = now
    tenant = session.get(TenantRow, row.tenant_id)
    return KeyRecord(
        key_id=row.id,
        tenant_id=row.tenant_id,
        scopes=frozenset(row.scopes),
        rate_limit_per_minute=tenant.rate_limit_per_minute if tenant else None,
        rate_limit_burst=tenant.rate_limit_burst if tenant else None,
    )


def _aware(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes even for timezone-aware columns; chunkbench writes them in UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
