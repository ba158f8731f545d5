"""What every ``chunkbench`` command shares: the two consoles, ``--json``, errors as exit codes, and opening
the database and the vector store. The command modules (``cli.py`` and each package's sub-app) import it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from chunkbench.config import Settings, get_settings
from chunkbench.errors import ChunkbenchError, InvalidRequestError

out = Console()
err = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")]


def print_json(data: Any) -> None:
    out.print_json(json.dumps(data, ensure_ascii=False, default=str))


def num_cell(value: float | None) -> str:
    """A number in a table cell: blank when there is none, else as short as it reads (``g``)."""
    return "" if value is None else f"{value:g}"


def fail(exc: ChunkbenchError, as_json: bool, code: int = 1) -> typer.Exit:
    """Print a domain error (as JSON with ``--json``, with every listed problem otherwise) and exit ``code``."""
    if as_json:
        print_json(exc.to_dict())
    else:
        err.print(f"[red]error:[/red] {exc.message}", markup=True, highlight=False)
        for problem in exc.details.get("problems", [])[1:]:
            err.print(f"  {problem['where']}: {problem['message']}", markup=False, highlight=False)
    return typer.Exit(code=code)


# What ``open_database`` runs before a command's own work: the recovery of dead owners' work
# (``chunkbench.recovery.recover_dead_owners``), installed by cli.py. A hook, not an import: every package's
# commands import this module, and the recovery imports those packages.
_recovery: Callable[[Any, Settings], Any] | None = None


def install_recovery(recover: Callable[[Any, Settings], Any]) -> None:
    global _recovery
    _recovery = recover


def open_database():
    """The settings and the migrated metadata store of this process's data directory, after the recovery of
    work that dead processes left (a killed ``process`` leaves nothing the next command cannot redo)."""
    from chunkbench.storage.db import Database

    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        database = Database.from_settings(settings)
        if _recovery is not None and (line := _recovery(database, settings).summary()):
            err.print(f"[yellow]recovered the work of a stopped process:[/yellow] {line}", highlight=False)
    except ChunkbenchError as exc:  # e.g. the PostgreSQL server is unreachable: its host named, no traceback
        raise fail(exc, as_json=False) from exc
    return settings, database


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
def job_progress(label: str, total: int = 100) -> Iterator[Callable[[float, str], None]]:
    """A progress bar on stderr (of ``total`` steps: percent, or documents) and the ``(fraction, message)``
    callback that jobs report through."""
    with progress_bar() as progress:
        task = progress.add_task(label, total=total)

        def report(fraction: float, message: str) -> None:
            progress.update(task, completed=round(fraction * total), description=message)

        yield report


def split_pairs(items: Sequence[str], *, option: str, syntax: str, example: str) -> list[tuple[str, str]]:
    """``KEY=VALUE`` items as ``(key, value)`` pairs, split at the first ``=`` (a value may hold more), the key
    stripped: the one splitter of every such option (``--param``, ``--fail-under``, ``--max-drop``), each reading its
    keys and values on top. An item without ``=`` or without a key is an ``InvalidRequestError`` naming the option,
    the item, the option's ``syntax`` (``METRIC=VALUE``) and an ``example``."""
    pairs: list[tuple[str, str]] = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidRequestError(
                f"{option} {item!r} is not {syntax} (e.g. {option} {example}).", option=option, item=item
            )
        pairs.append((key.strip(), value))
    return pairs


STRATEGY_PARAM = "[STRATEGY.]KEY=VALUE"


def strategy_params(
    items: Sequence[str], strategies: Sequence[str], *, option: str = "--param"
) -> dict[str, dict[str, Any]]:
    """``[STRATEGY.]KEY=VALUE`` items by strategy, the one syntax of strategy parameters; values read as JSON when
    they parse (256, 0.4, true, ["\\n\\n", " "]), else kept as text.

    With one strategy in ``strategies`` (``strategies add``, ``eval spans``, ``process`` running one) the prefix may
    be left out and, if given, must name it; with several (``process``) it is required, and whether it names one
    being run is the service's to say. A bad item is a ``typer.BadParameter`` naming the option, the item and an
    example.
    """
    only = strategies[0] if len(strategies) == 1 else None
    example = f"chunk_size=256 or {only}.chunk_size=256" if only else "fixed_size.chunk_size=256"
    params: dict[str, dict[str, Any]] = {}
    try:
        pairs = split_pairs(items, option=option, syntax=STRATEGY_PARAM, example=example)
    except InvalidRequestError as exc:
        raise typer.BadParameter(exc.message) from None
    for item, (target, raw) in zip(items, pairs, strict=True):
        prefix, dot, key = target.partition(".")
        if not dot:
            prefix, key = "", target
        if dot and (not prefix or not key):
            raise typer.BadParameter(f"{option} {item!r} is not {STRATEGY_PARAM} (e.g. {option} {example}).")
        if not dot and only is None:
            raise typer.BadParameter(
                f"{option} {item!r} names no strategy: with several strategies give STRATEGY.KEY=VALUE "
                f"(e.g. {option} {example})."
            )
        if dot and only is not None and prefix != only:
            raise typer.BadParameter(
                f"{option} {item!r} is for {prefix}, but the strategy here is {only} (e.g. {option} {example})."
            )
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        params.setdefault(prefix or only or "", {})[key] = value
    return params
