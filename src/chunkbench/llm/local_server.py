"""llama.cpp's OpenAI-compatible server in this process (xllamacpp, the ``llm`` extra), for offline LLM features.

Separate from ``client.py``: the client speaks to any server by URL; this module only starts and stops one on this
machine (``chunkbench llm serve``, or ``chunkbench serve`` with CHUNKBENCH_LLM_MODEL_PATH). It listens on 127.0.0.1:
it serves its own machine only, so workers on other machines must be given one server's URL (docs/llm.md).

``serve_in_child`` runs ``chunkbench llm serve`` as a child process instead, for callers that must not load llama.cpp
themselves (the tests, a bench that measures a server from outside).

The model file is checked before llama.cpp sees it (a missing or unreadable file, a file without the GGUF magic):
llama.cpp itself only says "Failed to init server". ``xllamacpp`` is imported when a server starts, never at import.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkbench.config import Settings
from chunkbench.errors import LlmError, LlmModelFileError, LocalLlmUnavailableError, NotGgufError

logger = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"
HOST = "127.0.0.1"
_READY_TIMEOUT_S = 60.0


def check_model_file(path: Path) -> Path:
    """``path`` resolved, once it is a readable file that starts with ``GGUF``; else a typed error naming the fix."""
    resolved = path.expanduser().resolve()
    if not resolved.exists():
        raise LlmModelFileError(
            f"The model file {resolved} does not exist. Give the path of a GGUF file "
            "(CHUNKBENCH_LLM_MODEL_PATH or `chunkbench llm serve MODEL.gguf`).",
            path=str(resolved),
        )
    if not resolved.is_file():
        raise LlmModelFileError(f"The model path {resolved} is not a file: give a GGUF file.", path=str(resolved))
    try:
        with resolved.open("rb") as file:
            magic = file.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise LlmModelFileError(
            f"The model file {resolved} cannot be read ({exc.strerror or exc}): check its permissions.",
            path=str(resolved),
        ) from exc
    if magic != GGUF_MAGIC:
        raise NotGgufError(
            f"{resolved} is not a GGUF file (it starts with {magic!r}, not b'GGUF'). llama.cpp serves GGUF models "
            "only: convert the model or download its .gguf build.",
            path=str(resolved),
        )
    return resolved


@dataclass(frozen=True)
class ServerOptions:
    """What the in-process server is started with (the CHUNKBENCH_LLM_* settings, or the command's options)."""

    model_path: Path
    ctx_size: int = 4096
    threads: int | None = None
    parallel: int = 1
    gpu_layers: int = 0
    port: int = 0  # 0 = a free port

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        model_path: Path,
        *,
        ctx_size: int | None = None,
        threads: int | None = None,
        parallel: int | None = None,
        gpu_layers: int | None = None,
        port: int = 0,
    ) -> ServerOptions:
        """The CHUNKBENCH_LLM_* settings, each option given (not None) winning: ``llm serve``'s flags over them."""
        return cls(
            model_path=model_path,
            ctx_size=settings.llm_ctx_size if ctx_size is None else ctx_size,
            threads=settings.llm_threads if threads is None else threads,
            parallel=settings.llm_parallel if parallel is None else parallel,
            gpu_layers=settings.llm_gpu_layers if gpu_layers is None else gpu_layers,
            port=port,
        )


def _xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise LocalLlmUnavailableError(
            "Serving a GGUF model in process needs xllamacpp: pip install 'chunkbench[llm]' "
            "(or point CHUNKBENCH_LLM_BASE_URL at any OpenAI-compatible server instead).",
            extra="llm",
        ) from exc
    return xllamacpp


class LocalLlmServer:
    """One llama.cpp server in this process; ``start()`` loads the model and listens, ``stop()`` ends it."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.model_path = check_model_file(options.model_path)
        # The name clients send as ``model`` (and /v1/models lists): the file's stem.
        self.model = self.model_path.stem
        self.url = ""
        self._server: Any = None

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (CHUNKBENCH_LLM_BASE_URL)."""
        return f"{self.url}/v1"

    def params(self) -> Any:
        """llama.cpp's ``CommonParams`` for these options (xllamacpp imported here)."""
        options = self.options
        params = _xllamacpp().CommonParams()
        params.model.path = str(self.model_path)
        params.model_alias = {self.model}
        params.hostnames = [HOST]
        params.port = options.port
        # llama.cpp divides its context between the parallel slots: each request gets ctx_size tokens.
        params.n_ctx = options.ctx_size * options.parallel
        params.n_parallel = options.parallel
        params.n_gpu_layers = options.gpu_layers
        if options.threads is not None:
            params.cpuparams.n_threads = options.threads
            params.cpuparams_batch.n_threads = options.threads
        params.endpoint_slots = True
        params.endpoint_props = True
        return params

    def start(self) -> LocalLlmServer:
        params = self.params()
        try:
            self._server = _xllamacpp().Server(params)
        except RuntimeError as exc:
            raise LlmError(
                f"llama.cpp could not serve {self.model_path} ({exc}). The file may be truncated or of a newer GGUF "
                "version, or CHUNKBENCH_LLM_CTX_SIZE / CHUNKBENCH_LLM_GPU_LAYERS ask for more memory than there is.",
                path=str(self.model_path),
            ) from exc
        self.url = str(self._server.listening_address).rstrip("/")
        self._wait_ready()
        logger.info("llama.cpp serves %s at %s", self.model, self.base_url)
        return self

    def _wait_ready(self) -> None:
        """Until the server's loop answers: GET /slots is served by the loop itself (not only the HTTP thread), and a
        stop before the loop runs was seen to hang llama.cpp's shutdown."""
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/slots", timeout=5):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise LlmError(
                        f"llama.cpp at {self.url} did not answer within {_READY_TIMEOUT_S:g} s of loading "
                        f"{self.model_path}.",
                        path=str(self.model_path),
                    ) from None
                time.sleep(0.05)

    def stop(self) -> None:
        """End the server (its destructor stops the loop and frees the model); idempotent."""
        server, self._server = self._server, None
        if server is not None:
            del server
            logger.info("llama.cpp server at %s stopped", self.url)

    def __enter__(self) -> LocalLlmServer:
        return self.start() if self._server is None else self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def point_settings(self, settings: Settings) -> None:
        """Point ``settings``' LLM at this server (the object the app and its clients read)."""
        settings.llm_base_url = self.base_url
        settings.llm_model = self.model


def start_for_app(settings: Settings) -> LocalLlmServer | None:
    """``chunkbench serve``'s LLM: the model of CHUNKBENCH_LLM_MODEL_PATH started and the settings pointed at it;
    None when no model path is set, or when CHUNKBENCH_LLM_BASE_URL names a server (which then wins)."""
    if settings.llm_model_path is None:
        return None
    if settings.llm_base_url:
        logger.warning(
            "CHUNKBENCH_LLM_BASE_URL is set: CHUNKBENCH_LLM_MODEL_PATH (%s) is not served", settings.llm_model_path
        )
        return None
    server = LocalLlmServer(ServerOptions.from_settings(settings, settings.llm_model_path)).start()
    server.point_settings(settings)
    return server


@dataclass(frozen=True)
class ChildServer:
    """A ``chunkbench llm serve`` running as a child process: the settings it printed."""

    base_url: str  # CHUNKBENCH_LLM_BASE_URL, ending in /v1
    model: str  # CHUNKBENCH_LLM_MODEL

    @property
    def url(self) -> str:
        """The server's root URL (its /health, /slots, /props)."""
        return self.base_url.removesuffix("/v1")


def child_command(model_path: Path, *options: str) -> list[str]:
    """The command line of ``chunkbench llm serve MODEL OPTIONS`` under this Python."""
    return [sys.executable, "-m", "chunkbench", "llm", "serve", str(model_path), *options]


@contextmanager
def serve_in_child(model_path: Path, *options: str, env: Mapping[str, str] | None = None) -> Iterator[ChildServer]:
    """``chunkbench llm serve MODEL OPTIONS`` in a child process (``env`` added to this one's), stopped with Ctrl-C on
    exit. Why a child: xllamacpp's Cython types cannot share a process with uharfbuzz's (which fpdf2 loads), and a
    bench measures a server best from outside it. A child that ends before printing its settings is an LlmError
    carrying its last words (the typed error it printed, or llama.cpp's)."""
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen(
            child_command(model_path, *options), stdout=subprocess.PIPE, stderr=errors, text=True,
            env={**os.environ, **(env or {})},
        )  # fmt: skip
        assert process.stdout is not None
        try:
            exports: dict[str, str] = {}
            while len(exports) < 2 and (line := process.stdout.readline()):  # a banner line, then the two exports
                if line.startswith("export "):
                    name, value = line.removeprefix("export ").strip().split("=", 1)
                    exports[name] = value
            if len(exports) < 2:
                process.wait()
                errors.seek(0)
                said = " ".join(errors.read().split())[-1000:]  # its last words, unwrapped from the console's width
                raise LlmError(
                    f"chunkbench llm serve {model_path} ended (exit code {process.returncode}) before serving: "
                    + (said or "it printed nothing."),
                    path=str(model_path),
                )
            yield ChildServer(exports["CHUNKBENCH_LLM_BASE_URL"], exports["CHUNKBENCH_LLM_MODEL"])
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
