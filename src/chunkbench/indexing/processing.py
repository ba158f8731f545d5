"""Processing (docs/strategies.md): chunk a document with strategies, embed, index, record the runs.

``plan`` validates everything a request names (document, strategies, parameters, models) before any
work starts, so a bad request is a 4xx and never a failed job. ``run`` then does the work; one strategy
failing never stops the others, and every write is ordered so a crash leaves nothing half-visible:
vectors are written first, the document's SQL state flips last. What the validation resolves lives in
``indexing.processing_plan``; one strategy's run (chunk, embed, upsert, its outcome) in ``indexing.strategy_run``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from chunkbench.chunking.base import ChunkingInput
from chunkbench.config import Settings
from chunkbench.embedding.languages import LanguageEvidence
from chunkbench.errors import ChunkbenchError, DocumentNotFoundError, JobCancelledError
from chunkbench.indexing.processing_plan import ProcessPlan, validate_request
from chunkbench.indexing.schemas import LanguageWarningOut, ProcessIn, ProcessOut, SizeWarningOut, StrategyOutcome
from chunkbench.indexing.strategy_run import boundary_embedder, run_strategy
from chunkbench.models import DocumentState, DocumentTree, StrategyName
from chunkbench.progress import Progress, StopCheck, never_stop, no_progress
from chunkbench.storage import corpus_generation
from chunkbench.storage.db import Database
from chunkbench.storage.index_state import mark_not_indexed
from chunkbench.storage.ownership import Heartbeat, lease_until, owner_gone, this_process
from chunkbench.storage.points import collection_name
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.schema import DocumentRow, StrategyRunRow
from chunkbench.storage.vectors import VectorStore, get_vector_store

logger = logging.getLogger(__name__)
# Processing one document as a background job (``job_kinds``: re-planned from its payload by whichever worker runs it).
JOB_KIND = "process"


def plan(session: Session, settings: Settings, document_id: str, request: ProcessIn, *, tenant_id: str) -> ProcessPlan:
    """Validate a request completely; raises 404/400 with what to fix."""
    row = DocumentRepository(session, tenant_id).get(document_id)
    alone = LanguageEvidence(row.source_key, row.language, row.language_confidence, row.language_source)
    valid = validate_request(session, settings, request, [alone])
    return ProcessPlan(
        tenant_id, document_id, valid.strategies, valid.corpus, valid.boundary, valid.boundary_threshold,
        row.language, valid.notes, valid.warnings, valid.size_warnings,
    )  # fmt: skip


def process(
    database: Database,
    settings: Settings,
    store: VectorStore,
    document_id: str,
    request: ProcessIn,
    *,
    tenant_id: str,
    progress: Progress = no_progress,
    stop: StopCheck = never_stop,
) -> ProcessOut:
    """Plan and run in this process: the one way to process a document and wait for it (the Python API, the chatbot,
    a sweep, a repair, the job's worker). A face that shows the plan first (its size warnings) plans, then runs the
    plan: the CLI with a progress bar, a route now or as a job (``jobs.routes.run_or_submit``)."""
    with database.session() as session:
        process_plan = plan(session, settings, document_id, request, tenant_id=tenant_id)
    return run(database, settings, store, process_plan, progress, stop)


def run(
    database: Database,
    settings: Settings,
    store: VectorStore,
    process_plan: ProcessPlan,
    progress: Progress,
    stop: StopCheck = never_stop,
) -> ProcessOut:
    """Run a plan: every strategy is attempted; the document ends ``indexed`` if any succeeded.

    Once ``stop`` says so (its job was cancelled), no further strategy starts: the document keeps the ones done
    (and its earlier runs of the others) and JobCancelledError names them."""
    names = [name.value for name, _ in process_plan.strategies]
    if stop():  # cancelled while queued: the document is left as it was
        raise JobCancelledError(f"Cancelled before processing started; nothing changed. Run {', '.join(names)} again.")
    with database.session() as session:
        document = claim(session, settings, process_plan)

    boundary = boundary_embedder(settings, process_plan.boundary, process_plan.boundary_threshold)
    outcomes: list[StrategyOutcome] = []
    total = len(process_plan.strategies)
    heartbeat = Heartbeat(
        lambda: renew_leases(database, settings, process_plan.tenant_id, [process_plan.document_id]),
        settings.processing_lease_s / 3,
    )
    try:
        heartbeat.start()
        for position, (name, params) in enumerate(process_plan.strategies):
            if position and stop():  # the first one runs: the document was just claimed for it
                break

            def step(fraction: float, message: str, position: int = position, name: StrategyName = name) -> None:
                progress((position + fraction) / total, f"{name.value}: {message}")

            outcome = run_strategy(database, settings, store, process_plan, document, name, params, boundary, step)
            outcomes.append(outcome)
            record(database, process_plan, outcome)
    except Exception as exc:
        # A bug must not leave the document "chunking" forever: it fails, with the reason.
        fail_document(database, process_plan, f"Processing stopped unexpectedly: {exc}")
        raise
    finally:
        heartbeat.stop()
    progress(1.0, "saving")
    finished = finish(database, store, process_plan, outcomes)
    if len(outcomes) < total:
        done, left = names[: len(outcomes)], names[len(outcomes) :]
        raise JobCancelledError(
            f"Cancelled after {len(outcomes)} of {total} strategies ({', '.join(done)} done; the document is "
            f"{finished.status}). Process it with {', '.join(left)} to finish.",
            done=done,
            left=left,
        )
    return finished


def claim(session: Session, settings: Settings, process_plan: ProcessPlan) -> ChunkingInput:
    """Move the document to ``chunking`` as this process's work (locked row, lease, what the run will write);
    404 when it is gone, 409 when another process is processing it. Returns what the strategies chunk."""
    # Locked: of two replicas asked to process the same document at once, the second waits, then sees it
    # ``chunking`` and gets a 409, instead of both running and interleaving their vector writes.
    row = DocumentRepository(session, process_plan.tenant_id).get(process_plan.document_id, for_update=True)
    previous = row.status, row.error_message
    DocumentRepository.transition(row, DocumentState.CHUNKING)
    me = this_process()
    row.owner_host, row.owner_pid, row.owner_token = me.host, me.pid, me.token
    row.lease_expires_at = lease_until(settings.processing_lease_s)
    row.processing_run = {
        # What a cancelled run that wrote nothing gives the document back (``release_unwritten``).
        "previous_status": previous[0],
        "previous_error": previous[1],
        "strategies": [name.value for name, _ in process_plan.strategies],
        "corpus_model_id": process_plan.corpus.id,
        # The text this run chunks: its runs record it, so a later corpus job knows whether they are current.
        "content_hash": row.content_hash,
        "strategy_run_ids": [],
    }
    tree = DocumentTree.from_dict(row.document_tree)
    return ChunkingInput(
        document_id=row.id,
        document_name=row.filename,
        markdown=row.parsed_text,
        tree=tree,
        title=tree.root.heading,
        code_language=row.code_language,
    )


def _release(row: DocumentRow) -> None:
    row.owner_host = row.owner_pid = row.owner_token = row.lease_expires_at = row.processing_run = None


def renew_leases(database: Database, settings: Settings, tenant_id: str, document_ids: Collection[str]) -> None:
    """Extend the lease of the documents this process is processing."""
    if not document_ids:
        return
    with database.session() as session:
        session.execute(
            update(DocumentRow)
            .where(
                DocumentRow.tenant_id == tenant_id,
                DocumentRow.id.in_(list(document_ids)),
                DocumentRow.owner_token == this_process().token,
            )
            # A renewal is not a change of the document: updated_at stays.
            .values(lease_expires_at=lease_until(settings.processing_lease_s), updated_at=DocumentRow.updated_at)
        )


def release_unwritten(database: Database, process_plan: ProcessPlan) -> None:
    """End a claimed document's run that wrote nothing (cancelled before its points): it is given back in the state
    it was claimed in (parsed, indexed with its earlier runs, or failed with its earlier error), released."""
    with database.session() as session:
        row = DocumentRepository(session, process_plan.tenant_id).get_optional(process_plan.document_id)
        if row is None or row.status not in (DocumentState.CHUNKING.value, DocumentState.EMBEDDING.value):
            return
        run = row.processing_run or {}
        previous = DocumentState(run.get("previous_status") or DocumentState.PARSED.value)
        if previous not in (DocumentState.PARSED, DocumentState.INDEXED, DocumentState.FAILED):
            previous = DocumentState.PARSED
        DocumentRepository.transition(row, previous, error=run.get("previous_error"))
        row.attempts = max(0, row.attempts - 1)  # the claim counted an attempt that did not happen
        _release(row)


def fail_document(database: Database, process_plan: ProcessPlan, reason: str) -> None:
    """End a document's processing as failed (a bug stopped it), releasing it."""
    with database.session() as session:
        row = DocumentRepository(session, process_plan.tenant_id).get_optional(process_plan.document_id)
        if row is not None and row.status in (DocumentState.CHUNKING.value, DocumentState.EMBEDDING.value):
            DocumentRepository.transition(row, DocumentState.FAILED, error=reason)
            _release(row)
        # Vectors may have been replaced before the failure: answers cached before are stale.
        corpus_generation.bump(session, process_plan.tenant_id)


def record(database: Database, process_plan: ProcessPlan, outcome: StrategyOutcome) -> None:
    """Write an outcome as a ``strategy_runs`` row, named in the document's ``processing_run`` (for recovery)."""
    with database.session() as session:
        document = DocumentRepository(session, process_plan.tenant_id).get_optional(process_plan.document_id)
        if document is None:
            return  # deleted while processing: ``finish`` cleans up its vectors
        run_id = uuid.uuid4().hex
        warnings = process_plan.warnings_of(outcome.strategy) if outcome.status == "completed" else []
        if document.processing_run is not None:
            # Reassigned, not mutated: the JSON column only notices a new value.
            recorded = document.processing_run.get("strategy_run_ids", [])
            document.processing_run = {**document.processing_run, "strategy_run_ids": [*recorded, run_id]}
        session.add(
            StrategyRunRow(
                id=run_id,
                tenant_id=process_plan.tenant_id,
                document_id=process_plan.document_id,
                strategy_name=outcome.strategy.value,
                status=outcome.status,
                params=outcome.params,
                details={
                    **outcome.details,
                    "content_hash": (document.processing_run or {}).get("content_hash"),
                    # Accepted with allow_language_mismatch: the run says what its models could not read.
                    **({"language_warnings": [w.to_dict() for w in warnings]} if warnings else {}),
                },
                corpus_model_id=process_plan.corpus.id,
                boundary_model_id=process_plan.boundary.id if process_plan.boundary else None,
                collection=outcome.collection,
                chunk_count=outcome.chunk_count,
                diagnostics=outcome.diagnostics,
                error_message=outcome.message,
                duration_ms=outcome.duration_ms,
            )
        )


def finish(
    database: Database, store: VectorStore, process_plan: ProcessPlan, outcomes: list[StrategyOutcome]
) -> ProcessOut:
    """Record the document's chunk counts and models, move it to ``indexed`` (any strategy completed) or
    ``failed``, release it; a document deleted meanwhile loses the vectors just written (404)."""
    completed = [o for o in outcomes if o.status == "completed"]
    failed = [o for o in outcomes if o.status == "failed"]
    try:
        with database.session() as session:
            row = DocumentRepository(session, process_plan.tenant_id).get(process_plan.document_id)
            counts = dict(row.chunk_counts or {})
            counts.update({o.strategy.value: o.chunk_count for o in completed})
            row.chunk_counts = counts
            row.last_corpus_embedding_model_id = process_plan.corpus.id
            if process_plan.boundary is not None:
                row.last_boundary_embedding_model_id = process_plan.boundary.id
            if completed:
                if row.status == DocumentState.CHUNKING.value:
                    DocumentRepository.transition(row, DocumentState.EMBEDDING)
                DocumentRepository.transition(row, DocumentState.INDEXED)
            else:
                reasons = "; ".join(f"{o.strategy.value}: {o.message}" for o in failed)
                DocumentRepository.transition(row, DocumentState.FAILED, error=reasons)
            _release(row)
            status = row.status
            # The tenant's searchable corpus changed (new, replaced or stale vectors): cached answers are stale.
            corpus_generation.bump(session, process_plan.tenant_id)
    except DocumentNotFoundError:
        # Deleted while processing: its fresh vectors must not outlive it.
        store.delete_document(process_plan.tenant_id, process_plan.document_id)
        with database.session() as session:
            corpus_generation.bump(session, process_plan.tenant_id)
        raise
    return ProcessOut(
        document_id=process_plan.document_id,
        status=status,
        corpus_model_id=process_plan.corpus.id,
        boundary_model_id=process_plan.boundary.id if process_plan.boundary else None,
        completed=completed,
        failed=failed,
        chunk_counts=counts,
        language=process_plan.language,
        notes=list(process_plan.notes),
        warnings=[LanguageWarningOut(**w.to_dict()) for w in process_plan.warnings],
        size_warnings=[SizeWarningOut(**w.to_dict()) for w in process_plan.size_warnings],
    )


def latest_run(
    session: Session, document_id: str, strategy: StrategyName, corpus_model_id: str, *, tenant_id: str
) -> StrategyRunRow | None:
    """The most recent completed run of a strategy on a document with a Corpus model."""
    return session.scalar(
        select(StrategyRunRow)
        .where(
            StrategyRunRow.tenant_id == tenant_id,
            StrategyRunRow.document_id == document_id,
            StrategyRunRow.strategy_name == strategy.value,
            StrategyRunRow.corpus_model_id == corpus_model_id,
            StrategyRunRow.status == "completed",
        )
        .order_by(StrategyRunRow.created_at.desc())
        .limit(1)
    )


def runs(session: Session, document_id: str, *, tenant_id: str) -> list[StrategyRunRow]:
    """Every strategy run on a document, newest first."""
    DocumentRepository(session, tenant_id).get(document_id)
    return list(
        session.scalars(
            select(StrategyRunRow)
            .where(StrategyRunRow.document_id == document_id, StrategyRunRow.tenant_id == tenant_id)
            .order_by(StrategyRunRow.created_at.desc())
        )
    )


INTERRUPTED_MESSAGE = (
    "Processing was interrupted: the process doing it stopped before it finished (killed, crashed or "
    "restarted). What that run had indexed was removed; process the document again."
)


def fail_interrupted(database: Database, settings: Settings, *, owner_token: str | None = None) -> int:
    """Recover documents left ``chunking``/``embedding`` by a process that is gone: mark them failed
    (resumable: process them again) and remove what the interrupted run wrote, so no orphan vectors remain.

    Only work whose owner is dead (same host, process gone) or whose lease ran out is taken over: another
    replica's live work on a shared database is left alone. ``owner_token``: the work of that one process, known to
    be gone (a task queue worker whose heartbeat stopped), whatever its lease says. Returns how many documents were
    recovered.
    """
    with database.session() as session:
        rows = session.scalars(
            select(DocumentRow).where(
                DocumentRow.status.in_([DocumentState.CHUNKING.value, DocumentState.EMBEDDING.value])
            )
        ).all()
        if owner_token is not None:
            stale = [row for row in rows if row.owner_token == owner_token]
        else:
            stale = [
                row for row in rows if owner_gone(row.owner_host, row.owner_pid, row.owner_token, row.lease_expires_at)
            ]
        runs = [(row.tenant_id, row.id, dict(row.processing_run or {})) for row in stale]
    if not stale:
        return 0
    # A re-processing replaces the points of the document's earlier completed runs: those runs are marked not
    # indexed (committed) before any point goes, so none of them reads "completed" without its points.
    with database.session() as session:
        for tenant_id, document_id, run in runs:
            for strategy in run.get("strategies", []):
                mark_not_indexed(
                    session, collection=collection_name(strategy, run["corpus_model_id"]), tenant_id=tenant_id,
                    document_ids=[document_id], reason="its re-processing was interrupted; process it again",
                )  # fmt: skip
    # Vectors first, SQL state last (as in processing): a failure here leaves the rows to the next start.
    store: VectorStore | None = None
    for tenant_id, document_id, run in runs:
        for strategy in run.get("strategies", []):
            if store is None:
                try:
                    store = get_vector_store(settings)
                except ChunkbenchError as exc:
                    # E.g. the embedded store is another live process's (a server): the next entry point recovers.
                    logger.warning("interrupted processing left for later: %s", exc.message)
                    return 0
            try:
                store.delete_document_strategy(strategy, run["corpus_model_id"], tenant_id, document_id)
            except ChunkbenchError:
                # Re-processing replaces these points anyway; the document is still marked failed.
                logger.warning("could not remove the interrupted run's %s points of %s", strategy, document_id)
    with database.session() as session:
        for _tenant_id, document_id, run in runs:
            row = session.get(DocumentRow, document_id)
            if row is None or row.status not in (DocumentState.CHUNKING.value, DocumentState.EMBEDDING.value):
                continue
            if run_ids := run.get("strategy_run_ids"):
                session.execute(delete(StrategyRunRow).where(StrategyRunRow.id.in_(run_ids)))
            strategies = set(run.get("strategies", []))
            row.chunk_counts = {k: v for k, v in (row.chunk_counts or {}).items() if k not in strategies}
            DocumentRepository.transition(row, DocumentState.FAILED, error=INTERRUPTED_MESSAGE)
            _release(row)
            corpus_generation.bump(session, row.tenant_id)  # its points are gone: cached answers are stale
    return len(runs)
