"""`chunkbench ingest` and `chunkbench documents list|show|delete`: thin wrappers over the documents service.
``ingest`` is a top-level command (cli.py registers it); the ``documents`` group reads what it stored."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from chunkbench.console import (
    JsonOption,
    err,
    fail,
    open_database,
    out,
    print_json,
    progress_bar,
)
from chunkbench.errors import ChunkbenchError
from chunkbench.models import DocumentState
from chunkbench.storage.schema import DEFAULT_TENANT

if TYPE_CHECKING:
    from chunkbench.documents.schemas import IngestOut

documents_app = typer.Typer(help="List, show and delete ingested documents; set their language.", no_args_is_help=True)


@documents_app.command("list")
def list_documents(
    status: Annotated[DocumentState | None, typer.Option(help="Only documents in this state")] = None,
    corpus: Annotated[str | None, typer.Option(help="Only the members of this corpus")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 100,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    as_json: JsonOption = False,
) -> None:
    """List documents, newest first."""
    from chunkbench.documents import library
    from chunkbench.documents.schemas import DocumentSummary

    _settings, database = open_database()
    try:
        with database.session() as session:
            rows, total = library.get_all(
                session, tenant_id=DEFAULT_TENANT, status=status, corpus=corpus, limit=limit, offset=offset
            )
            items = [DocumentSummary.of(row) for row in rows]
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json({"items": [i.model_dump(mode="json") for i in items], "total": total})
        return
    table = Table("id", "source key", "state", "type", "pages", "headings", "language", "created")
    for i in items:
        table.add_row(
            i.id, i.source_key, i.status, i.mime_type.rsplit("/", 1)[-1], str(i.page_count or "–"),
            str(i.heading_count), i.language or "–", i.created_at.strftime("%Y-%m-%d %H:%M"),
        )  # fmt: skip
    out.print(table)
    out.print(f"{len(items)} of {total} documents")


@documents_app.command("show")
def show_document(
    document_id: Annotated[str, typer.Argument(help="Document id, source key or unique filename")],
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the whole markdown")] = False,
    as_json: JsonOption = False,
) -> None:
    """Show a document's metadata, corpora, headings and markdown preview."""
    from chunkbench.documents import library
    from chunkbench.documents.schemas import DocumentDetail

    _settings, database = open_database()
    try:
        with database.session() as session:
            row = library.resolve(session, document_id, tenant_id=DEFAULT_TENANT)
            corpora = library.corpora_of(session, row.id, tenant_id=DEFAULT_TENANT)
            detail = DocumentDetail.of_row(row, 0 if markdown else 1500, corpora)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(detail.model_dump(mode="json"))
        return
    out.print(f"[bold]{detail.source_key}[/bold]  {detail.id}")
    out.print(
        f"state {detail.status} · {detail.mime_type} · {detail.file_size} bytes"
        f" · pages {detail.page_count or '–'}"
        f" · language {_language(detail)} · {detail.paragraph_count} paragraphs"
        f" · headings from {detail.heading_source or '–'}"
        + (f" · OCR on pages {', '.join(map(str, detail.ocr_pages or []))}" if detail.ocr else "")
    )
    out.print(f"corpora: {', '.join(detail.corpora) or '–'}", markup=False, highlight=False)
    kind = f"code ({detail.code_language or 'unknown language'})" if detail.kind == "code" else detail.kind
    out.print(f"kind: {kind}", markup=False, highlight=False)
    for heading in detail.headings:
        out.print(f"{'  ' * (heading.level - 1)}{'#' * min(heading.level, 6)} {heading.heading}", markup=False)
    out.rule("markdown")
    out.print(detail.markdown_preview, markup=False, highlight=False)
    if detail.markdown_truncated:
        out.print(f"… ({detail.markdown_chars} characters in all; --markdown shows everything)")


@documents_app.command("delete")
def delete_document(
    document_id: Annotated[str, typer.Argument(help="Document id, source key or unique filename")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation")] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete a document, its queries and experiments, and a mail's attachments (it leaves its corpora)."""
    from chunkbench.documents import library

    if not yes:
        if as_json:
            raise fail(ChunkbenchError("Add --yes to delete without a confirmation prompt."), as_json)
        typer.confirm(f"Delete document {document_id} and everything derived from it?", abort=True)
    settings, database = open_database()
    try:
        with database.session() as session:
            document_id = library.resolve(session, document_id, tenant_id=DEFAULT_TENANT).id
        row = library.delete(database, settings, document_id, tenant_id=DEFAULT_TENANT)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json({"deleted": row.id, "filename": row.filename, "source_key": row.source_key})
    else:
        out.print(f"deleted {row.source_key} ({row.id})")


def _language(document) -> str:
    """``de (detected, 0.98)``; ``–`` when none is recorded."""
    if not document.language:
        return "–"
    confidence = f", {document.language_confidence:.2f}" if document.language_confidence is not None else ""
    return f"{document.language} ({document.language_source or 'detected'}{confidence})"


def print_language_change(change, as_json: bool) -> None:
    """What ``set-language`` did: the documents set, and the warnings of models that cannot read the language."""
    if as_json:
        print_json(change.model_dump(mode="json"))
        return
    where = f" (every member of {change.corpus})" if change.corpus else ""
    out.print(f"language {change.language} set on {len(change.documents)} documents{where}", highlight=False)
    for document in change.documents:
        out.print(f"  {document.source_key}  {document.id}", markup=False, highlight=False)
    for warning in change.warnings:
        out.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)


@documents_app.command("set-language")
def set_language(
    document_id: Annotated[str, typer.Argument(help="Document id, source key or unique filename")],
    code: Annotated[str, typer.Argument(help="ISO 639-1 code (de, fr, fa, …; en-US is read as en) or und")],
    as_json: JsonOption = False,
) -> None:
    """Set a document's language (source user); warns when a model that processed it does not cover it."""
    from chunkbench.documents import library
    from chunkbench.documents.schemas import LanguageChangeOut

    _settings, database = open_database()
    try:
        with database.session() as session:
            row = library.resolve(session, document_id, tenant_id=DEFAULT_TENANT)
            change = LanguageChangeOut.of(library.set_language(session, [row.id], code, tenant_id=DEFAULT_TENANT))
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    finally:
        database.dispose()
    print_language_change(change, as_json)


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories (searched recursively)")],
    corpus: Annotated[str | None, typer.Option(help="Every file ingested joins this corpus (made if missing)")] = None,
    verbatim: Annotated[
        bool,
        typer.Option(help="Text and markdown files as they are (no normalising, no headings): offsets stay valid"),
    ] = False,
    as_json: JsonOption = False,
    with_summary: Annotated[
        bool,
        typer.Option(
            "--with-summary",
            help='With --json: print {"results": [...], "summary": {...}} instead of the bare list of results',
        ),
    ] = False,
) -> None:
    """Parse files into documents; each file succeeds or fails on its own, and every file of a folder that is not
    read (hidden, unsupported type, empty, too large, not a regular file, unreadable) is listed with its reason.

    A file found in a folder is keyed by its path below that folder, a file named directly by its filename.
    """
    from chunkbench.documents.discovery import discover_files
    from chunkbench.documents.ingest import ingest_paths
    from chunkbench.documents.ingest_results import IngestResult, IngestSummary
    from chunkbench.documents.schemas import IngestOut

    settings, database = open_database()
    found = list(discover_files(paths, settings))
    ingested: list[IngestResult] = []
    try:
        ingesting = ingest_paths(database, settings, found, tenant_id=DEFAULT_TENANT, corpus=corpus, verbatim=verbatim)
    except ChunkbenchError as exc:  # a bad corpus name: nothing was read
        database.dispose()
        raise fail(exc, as_json) from exc
    with progress_bar() as progress:
        task = progress.add_task("ingesting", total=len(found))
        for source, result in zip(found, ingesting, strict=True):
            progress.update(task, advance=1, description=f"ingesting {source.source_key}")
            ingested.append(result)
    database.dispose()

    summary = IngestSummary.of(ingested)
    results = [IngestOut.of(result) for result in ingested]
    if as_json:
        listed = [r.model_dump(mode="json") for r in results]
        # The bare list stays the default: scripts read it; the summary is one flag away, and on stderr for people.
        print_json({"results": listed, "summary": summary.model_dump(mode="json")} if with_summary else listed)
        err.print(summary.line, markup=False, highlight=False, soft_wrap=True)
    else:
        out.print(_ingest_table(results))
        for r in results:  # what parsing and language detection noticed (a declared language the text contradicts)
            for warning in r.warnings:
                out.print(f"[yellow]warning:[/yellow] {escape(r.source_key)}: {escape(warning)}", highlight=False)
        out.print(summary.line, markup=False, highlight=False, soft_wrap=True)
        attachments = [a for r in results for a in _nested_attachments(r)]
        if attachments:  # counted apart: a failed attachment never fails its mail (nor the exit code)
            refused = sum(a.error is not None for a in attachments)
            out.print(f"attachments: {len(attachments) - refused} ingested, {refused} refused", highlight=False)
    if summary.refused:
        raise typer.Exit(code=1)


def _ingest_table(results: list[IngestOut]) -> Table:
    """Every file with its outcome: the document's figures, the refusal's error or the skip's reason; a mail's
    attachments indented under it."""
    table = Table("file", "state", "pages", "headings", "language", "id / reason")  # file: its source key
    for r in results:
        _ingest_rows(table, r, 0)
    return table


def _nested_attachments(result: IngestOut) -> list[IngestOut]:
    return [nested for a in result.attachments for nested in (a, *_nested_attachments(a))]


def _ingest_rows(table: Table, r: IngestOut, depth: int) -> None:
    """One row for a file, then its attachments' rows, indented by depth."""
    name = f"{'  ' * depth}{'↳ ' if depth else ''}{r.source_key}"
    if r.skip_reason is not None:
        reason = r.skip_reason
        name = f"{name}/ ({reason.files:,} files)" if reason.details.get("folder") else name
        table.add_row(
            escape(name), f"[yellow]skipped[/yellow] ({reason.code.value})", "", "", "", escape(reason.message)
        )
    elif r.error is not None:
        table.add_row(escape(name), "[red]refused[/red]", "", "", "", f"[red]{escape(r.error.message)}[/red]")
    else:
        doc = r.document
        assert doc is not None  # neither skipped nor refused: stored
        state = f"{doc.status} ({r.outcome.value})"
        if r.duplicate_of:
            state += f", same content as {r.duplicate_of}"
        table.add_row(
            escape(name), state, str(doc.page_count or "–"), str(doc.heading_count), doc.language or "–", doc.id
        )
    for attachment in r.attachments:
        _ingest_rows(table, attachment, depth + 1)
