"""A cap on request bodies, enforced before and while they stream in (a 200 MB upload never reaches a file)."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chunkbench.errors import FileTooLargeError

# Multipart framing (boundaries, part headers, the other form fields) on top of the file itself.
MULTIPART_OVERHEAD_BYTES = 1024 * 1024


class _BodyTooLarge(Exception):
    pass


class BodySizeLimit:
    """Pure ASGI middleware: a request whose ``Content-Length`` exceeds ``max_bytes`` is answered 413 without
    reading a byte of its body; a body without one (chunked) is counted as it arrives and refused as soon as it
    passes the cap. Whatever the application answered meanwhile is replaced by the 413."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, limit_mb: float) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.limit_mb = limit_mb

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(send, declared)
            return

        received = 0
        refused = False
        response_started = False

        async def limited_receive() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    refused = True
                    raise _BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if refused:
                return  # the application's answer to a body it could not finish reading; ours replaces it
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            # The framework may re-shape the interruption (e.g. into a 400 "error parsing the body"); only a
            # refusal of ours is swallowed here.
            if not refused:
                raise
        if refused and not response_started:
            await self._refuse(send, None)

    async def _refuse(self, send: Send, declared: int | None) -> None:
        size = f" ({declared / 1048576:.1f} MB)" if declared is not None else ""
        error = FileTooLargeError(
            f"The request body{size} is larger than the {self.limit_mb:g} MB upload limit "
            "(CHUNKBENCH_MAX_UPLOAD_MB); split the file or raise the limit.",
            limit_bytes=self.max_bytes,
        )
        body = json.dumps(error.to_dict()).encode()
        headers: list[tuple[bytes, bytes]] = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            # The unread body makes the connection unusable for another request.
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": error.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    headers: Any = scope.get("headers") or []
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
