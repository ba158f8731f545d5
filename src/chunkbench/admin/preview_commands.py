"""`chunkbench chunks`: the Chunk Preview (a strategy's chunks as indexed, with exact offsets, and the run's
diagnostics). Beside ``admin/commands.py`` because what it shows is ``admin.operations.chunk_preview``, the service
behind the API's preview route: a command module in chunking or indexing would import admin, which imports them. A
top-level command: cli.py registers it."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from chunkbench.console import JsonOption, fail, out, print_json
from chunkbench.documents.lookup_commands import open_document
from chunkbench.errors import ChunkbenchError
from chunkbench.indexing.commands import print_language
from chunkbench.models import StrategyName
from chunkbench.storage.schema import DEFAULT_TENANT


def chunks(
    document: Annotated[str, typer.Argument(help="Document id or filename")],
    strategy: Annotated[StrategyName, typer.Option(parser=StrategyName, help="Strategy whose chunks to show")],
    corpus_model: Annotated[str | None, typer.Option(help="Corpus model id (default: last used)")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10000)] = 20,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    as_json: JsonOption = False,
) -> None:
    """Chunk Preview: a strategy's chunks with exact offsets, and the run's diagnostics."""
    from chunkbench.admin import operations

    settings, database, store, document_id = open_document(document, as_json)
    try:
        with database.session() as session:
            preview = operations.chunk_preview(
                session, settings, store, document_id, strategy, tenant_id=DEFAULT_TENANT,
                corpus_model_id=corpus_model, offset=offset, limit=limit,
            )  # fmt: skip
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(preview.model_dump(mode="json"))
        return
    diagnostics = preview.diagnostics
    tokens = diagnostics.get("tokens", {})
    out.print(
        f"[bold]{preview.strategy.value}[/bold] on {preview.document_id} · corpus {preview.corpus_model_id} · "
        f"{diagnostics.get('chunk_count', preview.total)} chunks"
        + (f" + {diagnostics['parent_count']} parents" if diagnostics.get("parent_count") else "")
    )
    if tokens:
        out.print(
            f"tokens min {tokens['min']} · median {tokens['median']:g} · p95 {tokens['p95']:g} · max {tokens['max']}"
            f" · tiny {diagnostics['tiny_share']:.0%} · mid-sentence {diagnostics['mid_sentence_share']:.0%}"
        )
    print_language([], preview.warnings)
    if window := diagnostics.get("window"):
        out.print(
            f"beyond {window['model_id']}'s {window['window_tokens']}-token window: {window['chunk_share']:.0%} of the "
            f"chunks, {window['token_share']:.0%} of their tokens (embedded from their first window only)"
        )
    if preview.prefix_mode:
        out.print(f"context prefixes: {preview.prefix_mode} (each chunk is embedded behind its prefix)")
    table = Table("#", "start–end", "tokens", "model tok", "headings", "text")
    for chunk in preview.chunks:
        label = f"p{chunk.chunk_index}" if chunk.is_parent else str(chunk.chunk_index)
        excerpt = " ".join(chunk.text.split())
        model = "" if chunk.model_tokens is None else str(chunk.model_tokens)
        table.add_row(
            label, f"{chunk.start_index}–{chunk.end_index}", str(chunk.token_count),
            f"[yellow]{model} > window[/yellow]" if chunk.beyond_window else model,
            " > ".join(chunk.heading_path), excerpt[:80] + ("…" if len(excerpt) > 80 else ""),
        )  # fmt: skip
    out.print(table)
    # "#" is the chunk index (from 0, as in chunk ids); the footer counts rows, so it says so rather than a range.
    out.print(f"{len(preview.chunks)} of {preview.total} chunks, from offset {offset}")
