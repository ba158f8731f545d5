"""The request id: accepted from ``X-Request-ID`` or generated, kept in a contextvar for every log line."""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

from starlette.requests import Request

REQUEST_ID_HEADER = "x-request-id"
# Ids from a proxy or client are echoed in headers and logs: a bounded, log-safe charset (no spaces, quotes,
# semicolons or control characters), long enough for UUIDs, ULIDs and trace ids such as ``Root=1-…``.
_WELL_FORMED = re.compile(r"[A-Za-z0-9._:=+/-]{1,128}")

_REQUEST_ID: ContextVar[str | None] = ContextVar("chunkbench_request_id", default=None)


def accept_or_generate(incoming: str | None) -> str:
    """The incoming id when it is well formed, else a fresh one (32 hex characters)."""
    if incoming and _WELL_FORMED.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    """The id of the request being served in this context (None outside a request)."""
    return _REQUEST_ID.get()


def bind_request_id(request_id: str | None) -> object:
    """Make ``request_id`` the current one; returns the token for ``unbind_request_id``."""
    return _REQUEST_ID.set(request_id)


def unbind_request_id(token: object) -> None:
    _REQUEST_ID.reset(token)  # type: ignore[arg-type]


def request_id_of(request: Request) -> str | None:
    """The id the middleware put on ``request.state`` (None if the middleware is not installed)."""
    return getattr(request.state, "request_id", None)
