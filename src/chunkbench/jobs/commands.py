"""``chunkbench worker``: run the jobs of the PostgreSQL task queue on this machine (``cli.py`` declares the command
and hands over the job kinds: this package sits below them)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from chunkbench.console import err, fail, open_database
from chunkbench.errors import InvalidRequestError

# The exit status of a worker that stopped because the database was out of reach (a supervisor restarts it).
EXIT_DATABASE_LOST = 3

if TYPE_CHECKING:
    from chunkbench.jobs.queue import Recover


def run_worker(
    concurrency: int,
    queue: list[str] | None,
    once: bool,
    name: str | None,
    *,
    register: Callable[[], None],
    recover: Recover,
) -> None:
    """Run jobs (processing, corpus processing, benchmarks) from the task queue until stopped (Ctrl-C, SIGTERM).

    Needs CHUNKBENCH_DATABASE_URL on PostgreSQL and, for several machines, CHUNKBENCH_QDRANT_URL (a Qdrant server:
    the embedded store is one process's). Run it with the same strategies (packages, plugins folder, variants file)
    as the API: a job planned with others is refused."""
    from chunkbench.jobs.queue import Worker

    settings, database = open_database()
    if database.engine.dialect.name != "postgresql":
        raise fail(
            InvalidRequestError(
                "`chunkbench worker` runs the PostgreSQL task queue: set CHUNKBENCH_DATABASE_URL to a "
                "postgresql+psycopg:// URL. With SQLite, `chunkbench serve` runs the jobs itself."
            ),
            as_json=False,
            code=2,
        )
    register()
    running = Worker(
        database, settings, concurrency=concurrency, name=name, queues=queue, once=once,
        recover=recover,
    )  # fmt: skip
    if once:
        running.run()
    else:
        stopped = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stopped.set())
        running.start()
        err.print(f"worker {running.name} running (concurrency {concurrency}); Ctrl-C stops it after the jobs in hand")
        while not stopped.wait(0.5):
            if running.error is not None or not running.alive:
                break
        running.stop(wait=True)
    database.dispose()
    if running.lost is not None:
        err.print(f"[red]{running.lost.message}[/red]")
        raise typer.Exit(EXIT_DATABASE_LOST)
    if running.error is not None:
        raise typer.Exit(1)
