"""A local OpenAI-compatible HTTP server for tests: scripted chat replies, models, embeddings, recorded requests.

Use ``with running_fake_openai() as server:`` or the ``fake_openai`` fixture (``from fake_openai import
fake_openai`` in a test module); point a client at ``server.url`` (which ends in ``/v1``).
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import numpy as np
import pytest

from netutil import LoopbackHttp, send


@dataclass
class Reply:
    """One scripted answer to ``POST /v1/chat/completions``.

    ``status`` other than 200 sends an OpenAI-style error body with ``error_message``; ``delay_s`` sleeps
    before answering (longer than the client's timeout = a timeout); ``usage=None`` omits the usage block.
    """

    content: str | None = "fake answer"
    status: int = 200
    error_message: str = "fake server error"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    usage: tuple[int, int] | None = (11, 7)
    model: str | None = None


@dataclass
class RecordedRequest:
    method: str
    path: str
    body: dict[str, Any] | None
    headers: dict[str, str]
    # When the server read the request (time.monotonic()): how far apart a client's retries came.
    received_at: float = field(default_factory=time.monotonic)


def fake_vector(text: str, dimension: int) -> list[float]:
    """A deterministic vector for ``text`` (same text, same vector)."""
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    return [float(x) for x in rng.normal(size=dimension)]


class FakeOpenAI:
    """The server: ``replies`` is a queue consumed in order, then ``responder`` (or a default reply) answers."""

    def __init__(
        self,
        *,
        models: Sequence[str] = ("fake-model",),
        dimension: int = 8,
        responder: Callable[[dict[str, Any]], Reply] | None = None,
    ) -> None:
        self.models = list(models)
        self.models_status = 200
        self.dimension = dimension
        self.responder = responder
        self.replies: deque[Reply] = deque()
        self.requests: list[RecordedRequest] = []
        # Embedding requests after the first ``hold_embeddings_after`` are held (``embeddings_held`` is set)
        # until ``release_embeddings`` is set: a client caught mid-embedding, for as long as a test needs.
        self.hold_embeddings_after: int | None = None
        self.embeddings_held = threading.Event()
        self.release_embeddings = threading.Event()
        self._embedding_calls = 0
        self._lock = threading.Lock()
        self._http = LoopbackHttp(self._handler_class())
        self.url = f"{self._http.url}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next chat requests, in order."""
        with self._lock:
            self.replies.extend(replies)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def start(self) -> None:
        self._http.start()

    def stop(self) -> None:
        self.release_embeddings.set()
        self._http.stop()

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self.replies:
                return self.replies.popleft()
        return self.responder(body) if self.responder else Reply()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server._record(RecordedRequest("GET", self.path, None, self._headers()))
                if self.path.rstrip("/") != "/v1/models":
                    self._error(404, f"no route {self.path}", "not_found")
                elif server.models_status != 200:
                    self._error(server.models_status, "models listing failed", "server_error")
                else:
                    data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in server.models]
                    self._send(200, {"object": "list", "data": data})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server._record(RecordedRequest("POST", self.path, body, self._headers()))
                if self.path == "/v1/chat/completions":
                    self._chat(body)
                elif self.path == "/v1/embeddings":
                    self._embeddings(body)
                else:
                    self._error(404, f"no route {self.path}", "not_found")

            def _chat(self, body: dict[str, Any]) -> None:
                reply = server._next_reply(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status != 200:
                    self._error(reply.status, reply.error_message, "fake_error", reply.headers)
                    return
                payload: dict[str, Any] = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": reply.model or body.get("model", "fake-model"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply.content},
                            "finish_reason": "stop",
                        }
                    ],
                }
                if reply.usage is not None:
                    prompt, completion = reply.usage
                    payload["usage"] = {
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "total_tokens": prompt + completion,
                    }
                self._send(200, payload, reply.headers)

            def _embeddings(self, body: dict[str, Any]) -> None:
                with server._lock:
                    server._embedding_calls += 1
                    hold = (
                        server.hold_embeddings_after is not None
                        and server._embedding_calls > server.hold_embeddings_after
                    )
                if hold:
                    server.embeddings_held.set()
                    server.release_embeddings.wait(timeout=300)
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [
                    {"object": "embedding", "index": i, "embedding": fake_vector(text, server.dimension)}
                    for i, text in enumerate(inputs)
                ]
                tokens = sum(len(str(text).split()) for text in inputs)
                usage = {"prompt_tokens": tokens, "total_tokens": tokens}
                self._send(200, {"object": "list", "data": data, "model": body.get("model"), "usage": usage})

            def _headers(self) -> dict[str, str]:
                return {k.lower(): v for k, v in self.headers.items()}

            def _error(self, status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> None:
                self._send(status, {"error": {"message": message, "type": kind, "code": None}}, headers)

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                send(self, status, json.dumps(payload).encode(), headers=headers)

            def log_message(self, *args: object) -> None:
                pass

        return Handler


@contextmanager
def running_fake_openai(
    *,
    models: Sequence[str] = ("fake-model",),
    dimension: int = 8,
    responder: Callable[[dict[str, Any]], Reply] | None = None,
) -> Iterator[FakeOpenAI]:
    """A started FakeOpenAI on 127.0.0.1 (a free port), stopped on exit."""
    server = FakeOpenAI(models=models, dimension=dimension, responder=responder)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running FakeOpenAI serving the model ``fake-model``."""
    with running_fake_openai() as server:
        yield server
