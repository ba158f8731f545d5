"""The ``chunkbench`` command line: the same services as the API, with tables or ``--json``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from chunkbench.admin.commands import cache_app, collections_app, doctor, models_app
from chunkbench.benchmarking.commands import bench_app, check_command, report_command, sweep_app
from chunkbench.benchmarking.eval_commands import chroma_command, spans_command
from chunkbench.chunking.commands import strategies_app
from chunkbench.config import get_settings
from chunkbench.console import (
    JsonOption,
    err,
    fail,
    install_recovery,
    job_progress,
    open_database,
    out,
    print_json,
    progress_bar,
    vector_store,
)
from chunkbench.corpora.commands import corpora_app
from chunkbench.documents.commands import documents_app
from chunkbench.errors import ChunkbenchError
from chunkbench.evaluation.commands import eval_app
from chunkbench.evaluation.question_commands import questions_app
from chunkbench.guard.commands import pii_app
from chunkbench.limits import MAX_TOP_K
from chunkbench.models import StrategyName
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.tenants.commands import admin_app

if TYPE_CHECKING:
    from chunkbench.documents.schemas import IngestOut
    from chunkbench.indexing.schemas import ProcessIn


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


@app.command()
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


def _parse_params(items: list[str]) -> dict[str, dict[str, Any]]:
    """``strategy.key=value`` pairs (values read as JSON when they parse: 256, 0.4, true)."""
    params: dict[str, dict[str, Any]] = {}
    for item in items:
        target, sep, raw = item.partition("=")
        strategy, dot, key = target.partition(".")
        if not sep or not dot or not strategy or not key:
            raise typer.BadParameter(f"'{item}' is not strategy.key=value (e.g. fixed_size.chunk_size=256)")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        params.setdefault(strategy, {})[key] = value
    return params


@app.command()
def process(
    document: Annotated[str | None, typer.Argument(help="Document id or filename (or --corpus)")] = None,
    corpus: Annotated[str | None, typer.Option(help="Process every document of this corpus as one job")] = None,
    strategies: Annotated[str, typer.Option(help="Comma-separated strategies, or 'all' (all but variants)")] = "all",
    corpus_model: Annotated[str | None, typer.Option(help="Corpus model id (default: the Admin role)")] = None,
    boundary_model: Annotated[str | None, typer.Option(help="Boundary model id (default: the Admin role)")] = None,
    param: Annotated[
        list[str] | None, typer.Option(help="Strategy parameter, e.g. fixed_size.chunk_size=256 (repeatable)")
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
            params=_parse_params(param or []), allow_language_mismatch=allow_language_mismatch,
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
                _num(tokens.get("median")), _num(tokens.get("p95")),
                _pct(outcome.diagnostics.get("tiny_share")), _pct(outcome.diagnostics.get("mid_sentence_share")),
                _pct(outcome.diagnostics.get("window", {}).get("chunk_share")),
                f"{outcome.duration_ms / 1000:.1f}s", outcome.message or "",
            )  # fmt: skip
        out.print(table)
        _print_language(result.notes, result.warnings)
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
        _print_language(result.notes, result.warnings)
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


def _print_language(notes: list[str], warnings: list[Any]) -> None:
    """Why a model replaced the default, and what the models could not read (``indexing.role_models``)."""
    for note in notes:
        out.print(f"[cyan]{escape(note)}[/cyan]")
    for warning in warnings:
        out.print(f"[yellow]warning: {escape(warning.message)}[/yellow]")


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


@app.command()
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
    from chunkbench.documents import library

    settings, database = open_database()
    try:
        with database.session() as session:
            document_id = library.resolve(session, document, tenant_id=DEFAULT_TENANT).id
            preview = operations.chunk_preview(
                session, settings, vector_store(settings), document_id, strategy, tenant_id=DEFAULT_TENANT,
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
    _print_language([], preview.warnings)
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


@app.command()
def query(
    document: Annotated[str, typer.Argument(help="Document id or filename")],
    question: Annotated[str, typer.Argument(help="The question")],
    strategy: Annotated[
        StrategyName, typer.Option(parser=StrategyName, help="Strategy whose index to search")
    ] = StrategyName.RECURSIVE,
    retriever: Annotated[str, typer.Option(help="dense, bm25 or hybrid")] = "dense",
    top_k: Annotated[int | None, typer.Option(min=1, max=MAX_TOP_K, help="Hits (default CHUNKBENCH_TOP_K)")] = None,
    prev: Annotated[int | None, typer.Option(min=0, max=5, help="Neighbours before each hit (fixed_size)")] = None,
    next_: Annotated[
        int | None, typer.Option("--next", min=0, max=5, help="Neighbours after each hit (fixed_size)")
    ] = None,
    rerank: Annotated[str, typer.Option(help="none, cross_encoder or llm")] = "none",
    corpus_model: Annotated[str | None, typer.Option(help="Corpus model id (default: the one used to process)")] = None,
    as_json: JsonOption = False,
) -> None:
    """Ask a processed document a question: answer, sources, Expansion Tree, latency breakdown."""
    from pydantic import ValidationError

    from chunkbench.documents import library
    from chunkbench.retrieval import queries
    from chunkbench.retrieval.schemas import QueryIn

    settings, database = open_database()
    try:
        with database.session() as session:
            document_id = library.resolve(session, document, tenant_id=DEFAULT_TENANT).id
        request = QueryIn(
            document_id=document_id, strategy=strategy, question=question, top_k=top_k, neighbor_prev=prev,
            neighbor_next=next_, retriever=retriever, rerank=rerank, corpus_model_id=corpus_model,
        )  # fmt: skip
        result = queries.run_query(database, settings, vector_store(settings), request, tenant_id=DEFAULT_TENANT)
    except ValidationError as exc:
        raise typer.BadParameter(str(exc)) from exc
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    out.rule(f"answer ({result.answer_mode})")
    out.print(result.answer, markup=False, highlight=False)
    sources = Table("n", "chunk", "role", "score", "headings", "text", title="sources")
    for source in result.sources:
        excerpt = " ".join(source.text.split())
        sources.add_row(
            str(source.number), str(source.chunk_index), source.role, _num(source.score and round(source.score, 4)),
            " > ".join(source.heading_path), excerpt[:70] + ("…" if len(excerpt) > 70 else ""),
        )  # fmt: skip
    out.print(sources)
    out.rule("Expansion Tree")
    for node in result.expansion_tree:
        out.print(f"hit #{node['chunk_index']} rank {node['rank']} score {node['score']:.4f}", highlight=False)
        for side in ("neighbors_prev", "neighbors_next"):
            for neighbour in node.get(side, []):
                also = f" (hit, rank {neighbour['rank']})" if neighbour["role"] == "hit" else ""
                out.print(f"    {side.removeprefix('neighbors_')} #{neighbour['chunk_index']}{also}", highlight=False)
    latency = " · ".join(f"{stage} {ms:.0f} ms" for stage, ms in result.latency_breakdown.items())
    tokens = result.token_usage
    out.print(
        f"latency: {latency}\ntokens: prompt {tokens['prompt_tokens']} · completion {tokens['completion_tokens']}"
        f" · context {tokens['context_tokens']}",
        highlight=False,
    )


# Defined with the benchmarks; a top-level command after the others in --help.
app.command("report")(report_command)
app.command("doctor")(doctor)
app.command("check")(check_command)
# The span evaluations run the corpus benchmark, so they are defined with the benchmarks (evaluation cannot import
# them: benchmarking imports evaluation's metrics), and join the eval group here.
eval_app.command("spans")(spans_command)
eval_app.command("chroma")(chroma_command)
