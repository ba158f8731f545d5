"""The tests' real LLM: llama.cpp's OpenAI server (``chunkbench llm serve``) serving SmolLM2-135M-Instruct, and a
recording proxy in front of it.

The server runs in a ``chunkbench`` child process, never in pytest's: xllamacpp's Cython types and uharfbuzz's (which
the tests that make PDFs load through fpdf2) cannot share a process ("Shared Cython type cython_function_or_method has
the wrong size"); the product itself never loads uharfbuzz (docs/llm.md).

The proxy forwards every request to the server unchanged and records what chunkbench sent and what the model
answered, so a test asserts the prompt chunkbench built and the bookkeeping of the real reply (its text, its usage)
without scripting either. The scripted fake (``fake_openai``) is for failure injection only.

The model is far too small to judge or answer well: tests assert the protocol and the bookkeeping, never the
model's judgement.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from chunkbench.llm.local_server import ChildServer, child_command, serve_in_child
from fake_openai import RecordedRequest
from netutil import LoopbackHttp, send

# Every slot's context window, in tokens: room for a RAG prompt of a few chunks and a judge prompt.
CTX_SIZE = 2048
SRC = Path(__file__).resolve().parents[1] / "src"  # the chunkbench under test, for the `chunkbench` subprocess


def llm_serve(gguf: Path, data_dir: Path, *options: str) -> subprocess.Popen[str]:
    """``chunkbench llm serve GGUF OPTIONS`` as a bare child process, for a test that signals it mid-start."""
    env = {**os.environ, **_child_env(data_dir)}
    command = child_command(gguf, *options)
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)


def _child_env(data_dir: Path) -> dict[str, str]:
    return {"CHUNKBENCH_DATA_DIR": str(data_dir), "PYTHONPATH": str(SRC)}


@contextmanager
def serving(gguf: Path, data_dir: Path) -> Iterator[ChildServer]:
    """A server with two slots of CTX_SIZE tokens each, on two threads, stopped (Ctrl-C) on exit."""
    options = ("--ctx-size", str(CTX_SIZE), "--threads", "2", "--parallel", "2")
    with serve_in_child(gguf, *options, env=_child_env(data_dir)) as served:
        yield served


@dataclass
class Exchange:
    """One request as chunkbench sent it and the server's answer to it (status and JSON body)."""

    request: RecordedRequest
    status: int
    response: Any

    @property
    def content(self) -> str:
        """The text of a chat completion's first choice."""
        return str(self.response["choices"][0]["message"]["content"])

    @property
    def usage(self) -> tuple[int, int]:
        """(prompt tokens, completion tokens) the server counted."""
        usage = self.response["usage"]
        return int(usage["prompt_tokens"]), int(usage["completion_tokens"])


@dataclass
class RecordingProxy:
    """Forwards to ``upstream`` (a ChildServer) and records each exchange; ``url`` is its OpenAI base URL."""

    upstream: ChildServer
    exchanges: list[Exchange] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._http = LoopbackHttp(self._handler_class())
        self.url = f"{self._http.url}/v1"

    @property
    def model(self) -> str:
        return self.upstream.model

    @property
    def requests(self) -> list[RecordedRequest]:
        return [exchange.request for exchange in self.exchanges]

    @property
    def chats(self) -> list[Exchange]:
        """The chat completions that reached the model, in the order they were sent."""
        return [e for e in self.exchanges if e.request.path.endswith("/chat/completions")]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [exchange.request for exchange in self.chats]

    def start(self) -> None:
        self._http.start()

    def stop(self) -> None:
        self._http.stop()

    def _forward(self, request: RecordedRequest, data: bytes | None) -> tuple[int, bytes, str]:
        headers = {"Content-Type": "application/json"} if data is not None else {}
        if "authorization" in request.headers:
            headers["Authorization"] = request.headers["authorization"]
        forwarded = urllib.request.Request(
            self.upstream.url + request.path, data=data, headers=headers, method=request.method
        )
        try:
            with urllib.request.urlopen(forwarded, timeout=300) as reply:
                return reply.status, reply.read(), reply.headers.get("Content-Type", "application/json")
        except urllib.error.HTTPError as error:
            return error.code, error.read(), error.headers.get("Content-Type", "application/json")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._exchange(None)

            def do_POST(self) -> None:
                self._exchange(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _exchange(self, data: bytes | None) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                body = json.loads(data) if data else None
                request = RecordedRequest(self.command, self.path, body, headers)
                status, payload, content_type = proxy._forward(request, data)
                try:
                    response = json.loads(payload)
                except ValueError:
                    response = payload.decode(errors="replace")
                with proxy._lock:
                    proxy.exchanges.append(Exchange(request, status, response))
                send(self, status, payload, content_type)

            def log_message(self, *args: object) -> None:
                pass

        return Handler


@contextmanager
def recording(upstream: ChildServer) -> Iterator[RecordingProxy]:
    proxy = RecordingProxy(upstream)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
