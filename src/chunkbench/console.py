"""What every ``chunkbench`` command shares: the two consoles, ``--json``, errors as exit codes, and opening
the database and the vector store. The command modules (``cli.py`` and each package's sub-app) import it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from chunkbench.config import Settings, get_settings
from chunkbench.errors import ChunkbenchError

out = Console()
err = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")]


def print_json(data: Any) -> None:
    out.print_json(json.dumps(data, ensure_ascii=False, default=str))


def fail(exc: ChunkbenchError, as_json: bool, code: int = 1) -> typer.Exit:
    """Print a domain error (as JSON with ``--json``, with every listed problem otherwise) and exit ``code``."""
    if as_json:
        print_json(exc.to_dict())
    else:
        err.print(f"[red]error:[/red] {exc.message}", markup=True, highlight=False)
        for problem in exc.details.get("problems", [])[1:]:
            err.print(f"  {problem['where']}: {problem['message']}", markup=False, highlight=False)
    return typer.Exit(code=code)


def open_database():
    """The settings and the migrated metadata store of this process's data directory."""
    from chunkbench.storage.db import Database

    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        return settings, Database.from_settings(settings)
    except ChunkbenchError as exc:  # e.g. the PostgreSQL server is unreachable: its host named, no traceback
        raise fail(exc, as_json=False) from exc


def vector_store(settings: Settings):
    """The process's vector store; old embedded data found on the way is migrated to Qdrant Edge under a bar."""
    from chunkbench.storage.migration import legacy_pending
    from chunkbench.storage.vectors import get_vector_store

    if settings.qdrant_url or not legacy_pending(settings):
        return get_vector_store(settings)
    with progress_bar() as progress:
        task = progress.add_task(f"migrating {settings.qdrant_legacy_path} to Qdrant Edge", total=None)

        def report(done: int, total: int, collection: str) -> None:
            progress.update(task, completed=done, total=total, description=f"migrating {collection}")

        return get_vector_store(settings, progress=report)


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
    )


@contextmanager
def job_progress(label: str) -> Iterator[Callable[[float, str], None]]:
    """A progress bar on stderr and the ``(fraction, message)`` callback that jobs report through."""
    with progress_bar() as progress:
        task = progress.add_task(label, total=100)

        def report(fraction: float, message: str) -> None:
            progress.update(task, completed=round(fraction * 100), description=message)

        yield report
