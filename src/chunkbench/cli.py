"""The ``chunkbench`` command line: the same services as the API, with tables or ``--json``."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from chunkbench.admin.commands import cache_app, collections_app, doctor, models_app
from chunkbench.admin.preview_commands import chunks
from chunkbench.benchmarking.commands import bench_app, check_command, report_command, sweep_app
from chunkbench.benchmarking.eval_commands import eval_app
from chunkbench.chunking.commands import strategies_app
from chunkbench.config import get_settings
from chunkbench.console import fail, install_recovery
from chunkbench.corpora.commands import corpora_app
from chunkbench.documents.commands import documents_app, ingest
from chunkbench.errors import ChunkbenchError
from chunkbench.evaluation.question_commands import questions_app
from chunkbench.guard.commands import pii_app
from chunkbench.indexing.commands import process
from chunkbench.llm.commands import llm_app
from chunkbench.retrieval.commands import query
from chunkbench.tenants.commands import admin_app


class LogFormat(StrEnum):
    """``chunkbench serve --log-format``."""

    auto = "auto"
    text = "text"
    json = "json"


app = typer.Typer(help="chunkbench: benchmark RAG chunking strategies on your documents.", no_args_is_help=True)


def start() -> None:
    """The app callback, before any command parses its options: library warnings to the log, then the plugins
    and the strategy variants."""
    from chunkbench.observability.logs import route_warnings_to_log

    route_warnings_to_log()
    load_extensions()


def load_extensions() -> None:
    """Import CHUNKBENCH_PLUGINS_DIR's plugins, then register the strategy variants of the variants file (a
    variant's name is then a valid --strategy).

    A broken plugin, entry point or variants file prints its error (the file or package named) and exits 1.
    """
    from chunkbench.errors import ChunkingError, PluginError
    from chunkbench.extensions import load_extensions as load

    try:
        load(get_settings())
    except (PluginError, ChunkingError) as exc:
        raise fail(exc, as_json=False) from None


def recover(database: Any, settings: Any) -> Any:
    """Every command's first step (through ``open_database``): recover the work of dead processes."""
    from chunkbench.recovery import recover_dead_owners  # imports the services: only when a command runs

    return recover_dead_owners(database, settings)


install_recovery(recover)
app.callback()(start)
app.add_typer(documents_app, name="documents")
app.add_typer(corpora_app, name="corpora")
app.add_typer(models_app, name="models")
app.add_typer(collections_app, name="collections")
app.add_typer(cache_app, name="cache")
app.add_typer(questions_app, name="questions")
app.add_typer(strategies_app, name="strategies")
app.add_typer(eval_app, name="eval")
app.add_typer(bench_app, name="bench")
app.add_typer(sweep_app, name="sweep")
app.add_typer(admin_app, name="admin")
app.add_typer(pii_app, name="pii")
app.add_typer(llm_app, name="llm")


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default: CHUNKBENCH_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: CHUNKBENCH_PORT)")] = None,
    log_format: Annotated[
        LogFormat | None,
        typer.Option(help="Logs as text or one JSON object per line (default: CHUNKBENCH_LOG_FORMAT, auto)"),
    ] = None,
    allow_insecure_bind: Annotated[
        bool, typer.Option(help="Listen beyond loopback with authentication off (CHUNKBENCH_ALLOW_INSECURE_BIND)")
    ] = False,
    worker: Annotated[
        bool,
        typer.Option(help="On PostgreSQL, also run queued jobs here; --no-worker only enqueues (CHUNKBENCH_WORKER)"),
    ] = True,
) -> None:
    """Start the API server (OpenAPI docs at /docs)."""
    import uvicorn

    from chunkbench.app import create_app
    from chunkbench.observability.logs import configure_logging
    from chunkbench.tenants.auth import check_bind

    settings = get_settings()
    if not worker:
        settings.worker = False
    try:
        check_bind(host or settings.host, settings, allow_insecure=allow_insecure_bind)
    except ChunkbenchError as exc:
        raise fail(exc, False, code=2) from None
    configure_logging(settings.log_level, log_format.value if log_format else settings.log_format)
    # chunkbench writes the access log itself (with request id and route), so uvicorn's is off, and
    # log_config=None keeps uvicorn from replacing the handlers just configured.
    uvicorn.run(
        create_app(settings),
        host=host or settings.host,
        port=port or settings.port,
        log_config=None,
        access_log=False,
    )


@app.command()
def worker(
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="Jobs run at once (each in its own thread)")] = 1,
    queue: Annotated[list[str] | None, typer.Option(help="Queues to take jobs from (default: chunkbench)")] = None,
    once: Annotated[bool, typer.Option(help="Run what is queued now, then exit (batch use)")] = False,
    name: Annotated[str | None, typer.Option(help="The worker's name in job histories (default: host:pid)")] = None,
) -> None:
    """Run jobs from the PostgreSQL task queue on this machine until stopped (see `jobs/commands.py`)."""
    from chunkbench import job_kinds
    from chunkbench.jobs.commands import run_worker

    run_worker(concurrency, queue, once, name, register=job_kinds.register_all, recover=job_kinds.recover_worker)


# Each defined with its package's commands, top-level all the same (`chunkbench ingest …`), in this --help order.
app.command()(ingest)
app.command()(process)
app.command()(chunks)
app.command()(query)
# Defined with the benchmarks; a top-level command after the others in --help.
app.command("report")(report_command)
app.command("doctor")(doctor)
app.command("check")(check_command)
