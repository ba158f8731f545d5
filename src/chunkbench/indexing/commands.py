"""`chunkbench process`: chunk, embed and index a document or a corpus (the indexing service's one write path),
with a table per strategy or ``--json``. A top-level command: cli.py registers it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from chunkbench.console import (
    JsonOption,
    fail,
    job_progress,
    num_cell,
    open_database,
    out,
    print_json,
    strategy_params,
    vector_store,
)
from chunkbench.errors import ChunkbenchError
from chunkbench.storage.schema import DEFAULT_TENANT

if TYPE_CHECKING:
    from chunkbench.indexing.schemas import ProcessIn


def process(
    document: Annotated[str | None, typer.Argument(help="Document id or filename (or --corpus)")] = None,
    corpus: Annotated[str | None, typer.Option(help="Process every document of this corpus as one job")] = None,
    strategies: Annotated[str, typer.Option(help="Comma-separated strategies, or 'all' (all but variants)")] = "all",
    corpus_model: Annotated[str | None, typer.Option(help="Corpus model id (default: the Admin role)")] = None,
    boundary_model: Annotated[str | None, typer.Option(help="Boundary model id (default: the Admin role)")] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(
            help="Strategy parameter [STRATEGY.]KEY=VALUE, e.g. fixed_size.chunk_size=256 (repeatable); the "
            "STRATEGY. prefix may be left out when one strategy runs"
        ),
    ] = None,
    allow_language_mismatch: Annotated[
        bool, typer.Option(help="Process documents in a language the model does not cover (recorded as a warning)")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Chunk, embed and index a document, or every document of a corpus, with one or more strategies."""
    from chunkbench.chunking.base import default_strategies
    from chunkbench.indexing.schemas import ProcessIn

    if (document is None) == (corpus is None):
        raise typer.BadParameter("give a document or --corpus NAME (exactly one of them)")
    names = default_strategies() if strategies.strip() == "all" else [s.strip() for s in strategies.split(",")]
    try:
        request = ProcessIn(
            strategies=names, corpus_model_id=corpus_model, boundary_model_id=boundary_model,
            params=strategy_params(param or [], names), allow_language_mismatch=allow_language_mismatch,
        )  # fmt: skip
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if corpus is not None:
        _process_corpus(corpus, request, as_json)
    else:
        _process_document(document or "", request, as_json)


def _process_document(document: str, request: ProcessIn, as_json: bool) -> None:
    from chunkbench.documents import library
    from chunkbench.indexing import processing

    settings, database = open_database()
    try:
        with database.session() as session:
            document_id = library.resolve(session, document, tenant_id=DEFAULT_TENANT).id
            plan = processing.plan(session, settings, document_id, request, tenant_id=DEFAULT_TENANT)
        _print_sizes(plan.size_warnings, as_json)
        store = vector_store(settings)
        with job_progress("processing") as report:
            result = processing.run(database, settings, store, plan, report)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        table = Table(
            "strategy", "status", "chunks", "median tok", "p95 tok", "tiny", "mid-sentence", "> window", "time", "error"
        )
        for outcome in [*result.completed, *result.failed]:
            tokens = outcome.diagnostics.get("tokens", {})
            table.add_row(
                outcome.strategy.value,
                outcome.status if outcome.status == "completed" else f"[red]{outcome.status}[/red]",
                str(outcome.chunk_count) if outcome.status == "completed" else "",
                num_cell(tokens.get("median")), num_cell(tokens.get("p95")),
                _pct(outcome.diagnostics.get("tiny_share")), _pct(outcome.diagnostics.get("mid_sentence_share")),
                _pct(outcome.diagnostics.get("window", {}).get("chunk_share")),
                f"{outcome.duration_ms / 1000:.1f}s", outcome.message or "",
            )  # fmt: skip
        out.print(table)
        print_language(result.notes, result.warnings)
        out.print(f"document {result.document_id}: {result.status} (corpus {result.corpus_model_id})")
    if result.failed:
        raise typer.Exit(code=1)


def _process_corpus(name: str, request: ProcessIn, as_json: bool) -> None:
    from chunkbench.indexing import corpus_job

    settings, database = open_database()
    try:
        with database.session() as session:
            plan = corpus_job.plan(session, settings, name, request, tenant_id=DEFAULT_TENANT)
        _print_sizes(plan.request.size_warnings, as_json)
        store = vector_store(settings)
        with job_progress(f"processing corpus {plan.corpus_name}", total=len(plan.document_ids)) as report:
            result = corpus_job.run(database, settings, store, plan, report)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        table = Table("strategy", "processed", "skipped", "failed", "chunks", "time")
        for row in result.strategies:
            failed = f"[red]{row.failed}[/red]" if row.failed else "0"
            table.add_row(row.strategy.value, str(row.processed), str(row.skipped), failed, str(row.chunks),
                          f"{row.duration_ms / 1000:.1f}s")  # fmt: skip
        out.print(table)
        failures = [(row.strategy, o) for row in result.strategies for o in row.documents if o.status == "failed"]
        if failures:
            reasons = Table("document", "strategy", "reason", title="failed documents")
            for strategy, outcome in failures:
                reasons.add_row(outcome.filename or outcome.document_id, strategy.value, outcome.message or "")
            out.print(reasons)
        print_language(result.notes, result.warnings)
        out.print(
            f"corpus {result.corpus_name}: {result.documents} documents — {result.processed} processed, "
            f"{result.skipped} skipped, {result.failed} failed; {result.chunks} chunks indexed in "
            f"{result.duration_ms / 1000:.1f}s (corpus model {result.corpus_model_id})"
        )
    if result.failed:
        raise typer.Exit(code=1)


def _print_sizes(warnings: Sequence[Any], as_json: bool) -> None:
    """Sizes beyond what the Corpus model reads whole, told before the work starts (on stderr with --json)."""
    for warning in warnings:
        text = f"warning: {warning.message}"
        if as_json:
            typer.echo(text, err=True)
        else:
            out.print(f"[yellow]{escape(text)}[/yellow]")


def print_language(notes: list[str], warnings: list[Any]) -> None:
    """Why a model replaced the default, and what the models could not read (``indexing.role_models``)."""
    for note in notes:
        out.print(f"[cyan]{escape(note)}[/cyan]")
    for warning in warnings:
        out.print(f"[yellow]warning: {escape(warning.message)}[/yellow]")


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"
