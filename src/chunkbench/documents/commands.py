"""`chunkbench documents list|show|delete`: thin wrappers over the documents service."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from chunkbench.console import (
    JsonOption,
    fail,
    open_database,
    out,
    print_json,
)
from chunkbench.errors import ChunkbenchError
from chunkbench.models import DocumentState
from chunkbench.storage.schema import DEFAULT_TENANT

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
