"""The ``chunkbench`` command line: the same services as the API, with tables or ``--json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from chunkbench.config import get_settings
from chunkbench.errors import ChunkbenchError
from chunkbench.models import DocumentState
from chunkbench.storage.schema import DEFAULT_TENANT

app = typer.Typer(
    help="chunkbench: benchmark RAG chunking strategies on your documents.", no_args_is_help=True
)
documents_app = typer.Typer(help="List, show and delete ingested documents.", no_args_is_help=True)
app.add_typer(documents_app, name="documents")

out = Console()
err = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")]


def _print_json(data: Any) -> None:
    out.print_json(json.dumps(data, ensure_ascii=False, default=str))


def _fail(exc: ChunkbenchError, as_json: bool) -> typer.Exit:
    if as_json:
        _print_json(exc.to_dict())
    else:
        err.print(f"[red]error:[/red] {exc.message}")
    return typer.Exit(code=1)


def _database():
    from chunkbench.storage.db import Database

    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return settings, Database.from_settings(settings)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default: CHUNKBENCH_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: CHUNKBENCH_PORT)")] = None,
) -> None:
    """Start the API server (OpenAPI docs at /docs)."""
    import uvicorn

    from chunkbench.app import create_app

    settings = get_settings()
    uvicorn.run(create_app(settings), host=host or settings.host, port=port or settings.port)


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories (searched recursively)")],
    as_json: JsonOption = False,
) -> None:
    """Parse files into documents; each file succeeds or fails on its own."""
    from chunkbench.documents import service
    from chunkbench.documents.schemas import IngestOut

    settings, database = _database()
    files = list(service.discover_files(paths))
    results: list[IngestOut] = []
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
    )
    with progress:
        task = progress.add_task("ingesting", total=len(files))
        for path, result in zip(
            files, service.ingest_paths(database, settings, files, tenant_id=DEFAULT_TENANT), strict=True
        ):
            progress.update(task, advance=1, description=f"ingesting {path.name}")
            results.append(IngestOut.of(result))
    database.dispose()

    failed = [r for r in results if r.error is not None]
    if as_json:
        _print_json([r.model_dump(mode="json") for r in results])
    else:
        table = Table("file", "state", "pages", "headings", "language", "id / error")
        for r in results:
            if r.error is not None:
                table.add_row(r.filename, "[red]failed[/red]", "", "", "", f"[red]{r.error.message}[/red]")
                continue
            doc = r.document
            state = f"{doc.status} ({r.outcome.value})"
            if r.duplicate_of:
                state += f", same content as {r.duplicate_of}"
            table.add_row(
                r.filename,
                state,
                str(doc.page_count or "–"),
                str(doc.heading_count),
                doc.language or "–",
                doc.id,
            )
        out.print(table)
        out.print(f"{len(results) - len(failed)} ingested, {len(failed)} failed")
    if failed:
        raise typer.Exit(code=1)


@documents_app.command("list")
def list_documents(
    status: Annotated[DocumentState | None, typer.Option(help="Only documents in this state")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 100,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    as_json: JsonOption = False,
) -> None:
    """List documents, newest first."""
    from chunkbench.documents import service
    from chunkbench.documents.schemas import DocumentSummary

    _settings, database = _database()
    with database.session() as session:
        rows, total = service.get_all(
            session, tenant_id=DEFAULT_TENANT, status=status, limit=limit, offset=offset
        )
        items = [DocumentSummary.of(row) for row in rows]
    if as_json:
        _print_json({"items": [i.model_dump(mode="json") for i in items], "total": total})
        return
    table = Table("id", "filename", "state", "type", "pages", "headings", "language", "created")
    for i in items:
        table.add_row(
            i.id, i.filename, i.status, i.mime_type.rsplit("/", 1)[-1], str(i.page_count or "–"),
            str(i.heading_count), i.language or "–", i.created_at.strftime("%Y-%m-%d %H:%M"),
        )  # fmt: skip
    out.print(table)
    out.print(f"{len(items)} of {total} documents")


@documents_app.command("show")
def show_document(
    document_id: str,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the whole markdown")] = False,
    as_json: JsonOption = False,
) -> None:
    """Show a document's metadata, headings and markdown preview."""
    from chunkbench.documents import service
    from chunkbench.documents.schemas import DocumentDetail

    _settings, database = _database()
    try:
        with database.session() as session:
            detail = DocumentDetail.of_row(
                service.get(session, document_id, tenant_id=DEFAULT_TENANT), 0 if markdown else 1500
            )
    except ChunkbenchError as exc:
        raise _fail(exc, as_json) from exc
    if as_json:
        _print_json(detail.model_dump(mode="json"))
        return
    out.print(f"[bold]{detail.filename}[/bold]  {detail.id}")
    out.print(
        f"state {detail.status} · {detail.mime_type} · {detail.file_size} bytes"
        f" · pages {detail.page_count or '–'}"
        f" · language {detail.language or '–'} · {detail.paragraph_count} paragraphs"
        f" · headings from {detail.heading_source or '–'}"
    )
    for heading in detail.headings:
        out.print(
            f"{'  ' * (heading.level - 1)}{'#' * min(heading.level, 6)} {heading.heading}", markup=False
        )
    out.rule("markdown")
    out.print(detail.markdown_preview, markup=False, highlight=False)
    if detail.markdown_truncated:
        out.print(f"… ({detail.markdown_chars} characters in all; --markdown shows everything)")


@documents_app.command("delete")
def delete_document(
    document_id: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation")] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete a document and its queries and experiments."""
    from chunkbench.documents import service

    if not yes:
        if as_json:
            raise _fail(ChunkbenchError("Add --yes to delete without a confirmation prompt."), as_json)
        typer.confirm(f"Delete document {document_id} and everything derived from it?", abort=True)
    _settings, database = _database()
    try:
        with database.session() as session:
            row = service.delete(session, document_id, tenant_id=DEFAULT_TENANT)
    except ChunkbenchError as exc:
        raise _fail(exc, as_json) from exc
    if as_json:
        _print_json({"deleted": row.id, "filename": row.filename})
    else:
        out.print(f"deleted {row.filename} ({row.id})")
