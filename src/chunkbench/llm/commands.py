"""``chunkbench llm``: serve a GGUF model in process (llama.cpp through xllamacpp) and check the configured LLM."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated, Any

import typer

from chunkbench.console import JsonOption, fail, out, print_json
from chunkbench.errors import ChunkbenchError, LlmNotConfiguredError

llm_app = typer.Typer(
    help="A local LLM: serve a GGUF model in process, check the configured server.", no_args_is_help=True
)

# `llm check`'s one request: short, and long enough an answer to time the generation.
_CHECK_MESSAGES = [{"role": "user", "content": "Count from 1 to 20, separated by spaces."}]
_CHECK_MAX_TOKENS = 64


@llm_app.command("serve")
def serve_command(
    model: Annotated[Path, typer.Argument(help="The GGUF model file")],
    ctx_size: Annotated[
        int | None, typer.Option(help="Context window of one request in tokens (default: CHUNKBENCH_LLM_CTX_SIZE)")
    ] = None,
    threads: Annotated[int | None, typer.Option(help="CPU threads (default: CHUNKBENCH_LLM_THREADS)")] = None,
    parallel: Annotated[
        int | None, typer.Option(help="Requests served at once (default: CHUNKBENCH_LLM_PARALLEL)")
    ] = None,
    gpu_layers: Annotated[
        int | None, typer.Option(help="Layers offloaded to a GPU, -1 = all (default: CHUNKBENCH_LLM_GPU_LAYERS)")
    ] = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (default: a free one)")] = 0,
) -> None:
    """Serve MODEL with llama.cpp's OpenAI-compatible server on 127.0.0.1 until Ctrl-C; prints the settings that
    point chunkbench at it. It serves this machine only: workers elsewhere need one server's URL (docs/llm.md)."""
    from chunkbench.config import get_settings
    from chunkbench.llm.local_server import LocalLlmServer, ServerOptions

    settings = get_settings()
    stopped = threading.Event()
    # Ctrl-C and SIGTERM (a service manager, a test) stop it, while the model loads too: the handlers only set
    # `stopped`, so no KeyboardInterrupt lands inside the start (a server freed before its loop runs hangs llama.cpp's
    # shutdown). llama.cpp's load cannot be interrupted: a signal during it stops the server as soon as it is up.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    try:
        options = ServerOptions.from_settings(
            settings, model, ctx_size=ctx_size, threads=threads, parallel=parallel, gpu_layers=gpu_layers, port=port
        )
        server = LocalLlmServer(options).start()
    except ChunkbenchError as exc:
        raise fail(exc, False) from exc
    try:
        if not stopped.is_set():  # stopped while loading: no settings to point at a server that is going away
            window = f"{options.ctx_size}-token" if options.ctx_size else "the model's trained"
            print(
                f"llama.cpp serves {server.model} at {server.base_url} ({window} context per request, "
                f"{options.parallel} slot{'s' if options.parallel != 1 else ''}); Ctrl-C stops it.\n"
                f"export CHUNKBENCH_LLM_BASE_URL={server.base_url}\n"
                f"export CHUNKBENCH_LLM_MODEL={server.model}",
                flush=True,
            )
        while not stopped.wait(0.5):
            pass
    finally:
        server.stop()
    print("stopped", flush=True)


def check_llm(settings: Any) -> dict[str, Any]:
    """One request to the configured server: the model that answered, its context window and tokens per second."""
    from chunkbench.llm.client import get_llm_client

    client = get_llm_client(settings)
    if client is None:
        raise LlmNotConfiguredError(
            "No LLM is configured: set CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL (`chunkbench llm serve "
            "MODEL.gguf` prints both)."
        )
    result = client.chat(_CHECK_MESSAGES, temperature=0, max_tokens=_CHECK_MAX_TOKENS)
    seconds = result.latency_ms / 1000
    return {
        "base_url": client.base_url,
        "model": result.model,
        "context_window": client.context_window(),
        "llama_cpp": bool(client.props()),
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "latency_ms": round(result.latency_ms, 1),
        # The whole request (prompt included) over the tokens generated: what a caller waits per token.
        "tokens_per_s": round(result.completion_tokens / seconds, 1) if seconds > 0 else None,
        "reply": result.text,
    }


@llm_app.command("check")
def check_command(as_json: JsonOption = False) -> None:
    """Send one request to the configured LLM server; report the model, its context window and tokens per second."""
    from chunkbench.config import get_settings

    try:
        report = check_llm(get_settings())
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(report)
        return
    window = report["context_window"]
    out.print(f"server          {report['base_url']}" + (" (llama.cpp)" if report["llama_cpp"] else ""))
    out.print(f"model           {report['model']}")
    out.print(f"context window  {f'{window} tokens' if window else 'not reported by the server'}")
    out.print(
        f"tokens/s        {report['tokens_per_s']} ({report['completion_tokens']} tokens in {report['latency_ms']} ms)"
    )
