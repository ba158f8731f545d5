"""Authentication: the app-wide dependency that turns ``Authorization: Bearer KEY`` into a :class:`Principal`.

``create_app`` installs :func:`authenticate` as a dependency of the whole app, so every route of every router,
including routers added later, needs a key when ``CHUNKBENCH_AUTH=on``. A route is public only when its path
template is in :data:`PUBLIC_PATHS` (add it there to make a new route public; a test checks that every other
route answers 401 without a key). ``/admin/*`` also needs the ``admin`` scope (a tenant admin: its own tenant's
configuration and points); deployment-wide operations need the ``operator`` scope too (:func:`require_operator`,
and :data:`OPERATOR_PATHS`). The dashboard's static files and
the OpenAPI pages are mounts/plain routes outside FastAPI's dependency system, and are public.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import cachetools
from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from chunkbench.config import Settings
from chunkbench.errors import AuthenticationError, InsecureBindError, PermissionDeniedError
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.tenants.accounts import SCOPE_ADMIN, SCOPE_OPERATOR, SCOPES, KeyRecord, find_key, hash_key
from chunkbench.tenants.ratelimit import RateLimiter

# Route templates anyone may call: the dashboard shell and liveness/readiness probes. Nothing here may read
# tenant data.
PUBLIC_PATHS = frozenset({"/", "/app", "/app/", "/health", "/health/live", "/health/ready"})
ADMIN_PREFIX = "/admin"
# Operators' paths outside /admin: the metrics describe every tenant's traffic.
OPERATOR_PATHS = frozenset({"/metrics"})
OPERATOR_KEY_HINT = (
    "An operator key is made on the server's machine: `chunkbench admin key create --operator` (tenant admin keys "
    "act only on their own tenant)."
)


@dataclass(frozen=True)
class Principal:
    """Who is calling: a tenant with scopes (``key_id`` None in the local single-user mode)."""

    tenant_id: str | None
    scopes: frozenset[str]
    key_id: str | None = None

    @property
    def is_operator(self) -> bool:
        """Whether the caller may act on the whole deployment (every tenant's points, the shared caches)."""
        return SCOPE_OPERATOR in self.scopes

    @property
    def points_scope(self) -> str | None:
        """Whose points an admin operation touches: None (every tenant's) for the operator, else its tenant's."""
        return None if self.is_operator else self.tenant_id


# Auth off: the local single user owns the default tenant and is the operator of the deployment.
LOCAL_PRINCIPAL = Principal(DEFAULT_TENANT, frozenset(SCOPES))
# A public route: nobody in particular (get_tenant refuses it).
ANONYMOUS = Principal(None, frozenset())


class KeyCache:
    """Key lookups by key hash, trusted for ``ttl_s`` seconds (unknown keys too, so a flood of bad keys does not
    reach the database), at most ``max_entries`` of them (least recently used out): a ``cachetools.TTLCache``
    behind a lock. A revoked key stops working within ``ttl_s`` on every process, however many replicas there
    are; :meth:`clear` makes it immediate in this one. With ``ttl_s`` 0 every entry is expired at once."""

    _ABSENT = object()

    def __init__(self, ttl_s: float, *, max_entries: int = 10_000, clock: Callable[[], float] = time.monotonic):
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: cachetools.TTLCache[str, KeyRecord | None] = cachetools.TTLCache(max_entries, ttl_s, timer=clock)
        self._lock = threading.Lock()

    def get(self, key_hash: str) -> tuple[bool, KeyRecord | None]:
        """``(found, record)``: found is False when the lookup must go to the database."""
        with self._lock:
            record = self._entries.get(key_hash, self._ABSENT)
        return (False, None) if record is self._ABSENT else (True, cast("KeyRecord | None", record))

    def put(self, key_hash: str, record: KeyRecord | None) -> None:
        with self._lock:
            self._entries[key_hash] = record

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


class Authenticator:
    """Resolves keys against the database through a :class:`KeyCache`, and holds the rate limiter."""

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.cache = KeyCache(settings.auth_cache_ttl_s, clock=clock)
        self.limiter = RateLimiter(settings.rate_limit_per_minute, settings.rate_limit_burst, clock=clock)

    def load(self, database: Database, token: str, key_hash: str) -> KeyRecord | None:
        """Look the key up in the database and cache the answer."""
        with database.session() as session:
            record = find_key(session, token)
        self.cache.put(key_hash, record)
        return record


def get_authenticator(request: Request) -> Authenticator:
    """The app's authenticator, made on first use (tests may replace ``app.state.authenticator``)."""
    authenticator: Authenticator | None = getattr(request.app.state, "authenticator", None)
    if authenticator is None:
        authenticator = request.app.state.authenticator = Authenticator(request.app.state.settings)
    return authenticator


_bearer = HTTPBearer(auto_error=False, description="An API key: `chunkbench admin key create --tenant T`.")


async def authenticate(
    request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)
) -> Principal:
    """The caller of this request (401 without a valid key, 403 without the admin scope on ``/admin/*``,
    429 over the tenant's rate limit). Installed app-wide; ``dependencies.get_tenant`` reads its result."""
    route = request.scope.get("route")
    path = cast(str, getattr(route, "path", request.scope["path"]))
    if path in PUBLIC_PATHS:
        return ANONYMOUS
    authenticator = get_authenticator(request)
    settings: Settings = request.app.state.settings
    if not settings.auth:
        if settings.rate_limit_without_auth:
            authenticator.limiter.check(DEFAULT_TENANT)
        request.state.principal = LOCAL_PRINCIPAL
        return LOCAL_PRINCIPAL
    if credentials is None or not credentials.credentials:
        raise AuthenticationError(
            "This server needs an API key: send 'Authorization: Bearer <key>' "
            "(an admin creates one with `chunkbench admin key create --tenant T`)."
        )
    token = credentials.credentials
    key_hash = hash_key(token)
    found, record = authenticator.cache.get(key_hash)
    if not found:
        # A database read: off the event loop. Cached hits (the common case) stay on it.
        record = await run_in_threadpool(authenticator.load, request.app.state.database, token, key_hash)
    if record is None:
        raise AuthenticationError("The API key is unknown or revoked.")
    authenticator.limiter.check(
        record.tenant_id, per_minute=record.rate_limit_per_minute, burst=record.rate_limit_burst
    )
    principal = Principal(record.tenant_id, record.scopes, record.key_id)
    if not principal.is_operator and (path in OPERATOR_PATHS or _needs_operator(route)):
        # Before the admin check: a plain key on an operator's route hears which key it needs, not "admin".
        raise PermissionDeniedError(
            f"{request.method} {path} acts on the whole deployment and needs an operator key. {OPERATOR_KEY_HINT}",
            tenant_id=record.tenant_id,
        )
    if _is_admin_path(path) and SCOPE_ADMIN not in principal.scopes:
        raise PermissionDeniedError(
            f"{path} needs an admin key (`chunkbench admin key create --tenant {record.tenant_id} --admin`)."
        )
    request.state.principal = principal
    return principal


def _is_admin_path(path: str) -> bool:
    return path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")


# Remembered on the route object itself: routes are not hashable, and an id could be reused by another app's route.
_OPERATOR_FLAG = "_chunkbench_needs_operator"


def _needs_operator(route: object) -> bool:
    """Whether a route depends on :func:`require_operator` (read once per route from its dependency tree)."""
    if route is None:
        return False
    known = getattr(route, _OPERATOR_FLAG, None)
    if known is None:
        pending, known = [getattr(route, "dependant", None)], False
        while pending and not known:
            dependant = pending.pop()
            if dependant is not None:
                known = any(d.call is require_operator for d in dependant.dependencies)
                pending.extend(dependant.dependencies)
        setattr(route, _OPERATOR_FLAG, known)
    return known


async def require_operator(request: Request, principal: Principal = Depends(authenticate)) -> Principal:
    """The caller, when it is the deployment's operator (403 ``forbidden`` for a tenant's key, saying how an
    operator key is made). With auth off the local user is the operator."""
    if not principal.is_operator:
        route = request.scope.get("route")
        what = f"{request.method} {getattr(route, 'path', request.scope['path'])}"
        raise PermissionDeniedError(
            f"{what} acts on the whole deployment and needs an operator key. {OPERATOR_KEY_HINT}",
            tenant_id=principal.tenant_id,
        )
    return principal


def check_bind(host: str, settings: Settings, *, allow_insecure: bool = False) -> None:
    """Refuse to listen beyond loopback with authentication off, unless explicitly allowed."""
    if settings.auth or allow_insecure or settings.allow_insecure_bind or _is_loopback(host):
        return
    raise InsecureBindError(
        f"Refusing to listen on {host} with authentication off: anyone who can reach it could read and delete "
        "every document. Turn authentication on (CHUNKBENCH_AUTH=on, then `chunkbench admin key create`), "
        "listen on 127.0.0.1, or pass --allow-insecure-bind (CHUNKBENCH_ALLOW_INSECURE_BIND=true) if a proxy "
        "in front does the authentication.",
        host=host,
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # another host name: it may resolve beyond loopback
