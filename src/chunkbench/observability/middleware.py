"""Per-request observability as one pure-ASGI middleware: request id, Prometheus metrics, the access log.

Pure ASGI (not ``BaseHTTPMiddleware``) because it wraps every request, the query path included: it only wraps
``send`` to read the status and add a header, and never buffers or copies a body.
"""

from __future__ import annotations

import json
import logging
import re
from time import perf_counter
from typing import Any

from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chunkbench.metrics import HTTP_ERRORS, HTTP_LATENCY, HTTP_REQUESTS
from chunkbench.observability.request_id import (
    REQUEST_ID_HEADER,
    accept_or_generate,
    bind_request_id,
    unbind_request_id,
)

access_logger = logging.getLogger("chunkbench.access")

UNMATCHED_ROUTE = "unmatched"
_HEADER = REQUEST_ID_HEADER.encode("latin-1")
# A method label outside this set would let any client mint new time series.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Probes and scrapes arrive every few seconds: counted in metrics, logged only at DEBUG.
QUIET_ROUTES = frozenset({"/metrics", "/health", "/health/live", "/health/ready"})
_ERROR_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")
_MAX_ERROR_BODY = 4096


def route_template(scope: Scope, root_path: str) -> str:
    """The matched route's template (``/documents/{document_id}``), a mount as ``/prefix/{path}``, else
    ``unmatched``: never the raw path, so labels stay few."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if path:
        return path
    # A mount (the dashboard's static files) extends root_path by its prefix and sets no route.
    mounted = scope.get("root_path", "")
    if len(mounted) > len(root_path) and mounted.startswith(root_path):
        return f"{mounted[len(root_path) :]}/{{path}}"
    return UNMATCHED_ROUTE


def error_code_from_body(message: Message) -> str | None:
    """The ``error`` field of a small, complete JSON error body; None when reading it would not be cheap."""
    body = message.get("body", b"")
    if message.get("more_body") or not body or len(body) > _MAX_ERROR_BODY or body[:1] != b"{":
        return None
    try:
        code = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return None
    return code if isinstance(code, str) and _ERROR_CODE.fullmatch(code) else None


class ObservabilityMiddleware:
    """Give every HTTP response an ``X-Request-ID``, count it in the ``HTTP_*`` metrics per route template,
    and write one access-log line; the id is on ``request.state.request_id`` and in the logging context.

    Exception handlers may set ``request.state.error_code`` to name the error in ``HTTP_ERRORS``; otherwise
    the ``error`` field of a small JSON error body is used, else the status class (``4xx``/``5xx``).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        # Label children looked up once per label set (``labels()`` takes a lock and builds a tuple).
        self._requests: dict[tuple[str, str, int], Counter] = {}
        self._latency: dict[tuple[str, str], Histogram] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = perf_counter()
        request_id = accept_or_generate(_header(scope, _HEADER))
        state: dict[str, Any] = scope.setdefault("state", {})
        state["request_id"] = request_id
        root_path = scope.get("root_path", "")
        id_header = (_HEADER, request_id.encode("latin-1"))
        status = 500
        body_error: str | None = None

        async def send_with_id(message: Message) -> None:
            nonlocal status, body_error
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [header for header in message.get("headers", ()) if header[0].lower() != _HEADER]
                headers.append(id_header)
                message = {**message, "headers": headers}
            elif status >= 400 and body_error is None and "error_code" not in state:
                body_error = error_code_from_body(message) or ""
            await send(message)

        token = bind_request_id(request_id)
        failed = False
        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            failed = True
            raise
        finally:
            if failed:
                # The 500 itself is sent by Starlette's outermost error middleware, after this one.
                status, error = 500, "internal_error"
            else:
                error = state.get("error_code") or body_error or f"{status // 100}xx"
            self._record(scope, root_path, status, error, perf_counter() - started)
            unbind_request_id(token)

    def _record(self, scope: Scope, root_path: str, status: int, error: str, seconds: float) -> None:
        route = route_template(scope, root_path)
        method = scope["method"] if scope["method"] in _METHODS else "other"
        requests = self._requests.get((route, method, status))
        if requests is None:
            requests = self._requests[(route, method, status)] = HTTP_REQUESTS.labels(route, method, str(status))
        requests.inc()
        latency = self._latency.get((route, method))
        if latency is None:
            latency = self._latency[(route, method)] = HTTP_LATENCY.labels(route, method)
        latency.observe(seconds)
        if status >= 400:
            HTTP_ERRORS.labels(route, method, error).inc()
        level = logging.ERROR if status >= 500 else logging.DEBUG if route in QUIET_ROUTES else logging.INFO
        if access_logger.isEnabledFor(level):
            duration_ms = round(seconds * 1000, 2)
            access_logger.log(
                level,
                "%s %s %d %.1f ms",
                method,
                scope["path"],
                status,
                duration_ms,
                extra={
                    "method": method,
                    "route": route,
                    "path": scope["path"],
                    "status": status,
                    "duration_ms": duration_ms,
                    **({"error": error} if status >= 400 else {}),
                },
            )


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None
