"""One strategy's run on a planned document: chunk → embed → upsert through ``index_documents``, and its outcome
(completed with its counts and diagnostics, or failed with the error, its partial points dropped).

Separate from ``indexing.processing`` (the run of a whole plan: claim, leases, recording, finishing, recovery)
because this is the work itself, shared with a corpus job (``indexing.corpus_job``) which indexes many documents
per strategy at once and builds the same outcomes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection

from chunkbench.chunking.base import BoundaryEmbedder, ChunkingInput, StrategyParams, strategy_class
from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.embedding.registry import EmbeddingModelSpec
from chunkbench.errors import ChunkbenchError
from chunkbench.guard.injection import InjectionDetector
from chunkbench.indexing.contextual import make_prefixer
from chunkbench.indexing.pipeline import IndexedDocument, IndexedRun, IndexingPlan, index_documents
from chunkbench.indexing.processing_plan import ProcessPlan
from chunkbench.indexing.schemas import StrategyOutcome
from chunkbench.models import DocumentState, StrategyName
from chunkbench.progress import Progress
from chunkbench.storage.db import Database
from chunkbench.storage.index_state import mark_not_indexed
from chunkbench.storage.points import collection_name
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.vectors import VectorStore

logger = logging.getLogger(__name__)


def boundary_embedder(
    settings: Settings, spec: EmbeddingModelSpec | None, threshold: float | None
) -> BoundaryEmbedder | ChunkbenchError | None:
    """The run's Boundary embedder, or the error that fails the strategies needing it (not the others)."""
    if spec is None:
        return None
    assert threshold is not None  # the plans resolve a threshold with every Boundary model
    try:
        return roles.boundary_embedder(spec, threshold, settings)
    except ChunkbenchError as exc:
        return exc


def run_strategy(
    database: Database,
    settings: Settings,
    store: VectorStore,
    process_plan: ProcessPlan,
    document: ChunkingInput,
    name: StrategyName,
    params: StrategyParams,
    boundary: BoundaryEmbedder | ChunkbenchError | None,
    step: Progress,
) -> StrategyOutcome:
    started = time.perf_counter()
    corpus = process_plan.corpus
    collection = collection_name(name, corpus.id)
    writing = False  # points of this document may have been replaced, in part, from here on

    def stage(name_: str, done: int, total: int) -> None:
        nonlocal writing
        writing = writing or name_ == "index"
        if name_ == "chunk" and done == 0:
            step(0.0, "chunking")
        elif name_ == "embed" and done == 0:
            enter_embedding(database, process_plan.tenant_id, [process_plan.document_id])
            step(0.3, f"embedding {total} chunks")
        elif name_ == "index" and done == 0:
            step(0.8, "indexing")

    try:
        cls = strategy_class(name)
        if cls.needs_boundary and isinstance(boundary, ChunkbenchError):
            raise boundary
        usable = None if isinstance(boundary, ChunkbenchError) else boundary  # an error was raised just above
        strategy = cls(params, boundary=usable if cls.needs_boundary else None, prefixer=make_prefixer(settings))
        plan = IndexingPlan(
            process_plan.tenant_id, strategy, corpus, detector=InjectionDetector(settings.injection_threshold)
        )
        run = index_documents(settings, store, plan, [document], progress=stage)
    except ChunkbenchError as exc:
        if writing:
            drop_partial_points(database, store, process_plan, name, exc)
        return failed_outcome(name, params, collection, exc, elapsed_ms(started))
    (indexed,) = run.documents
    return completed_outcome(name, params, run, indexed, elapsed_ms(started))


def drop_partial_points(
    database: Database, store: VectorStore, process_plan: ProcessPlan, name: StrategyName, exc: ChunkbenchError
) -> None:
    """After a failed upsert the document's points in the collection are part old run, part new: mark its earlier
    runs not indexed and commit, then delete those points (a query then answers 409, never a mixed index)."""
    collection = collection_name(name, process_plan.corpus.id)
    with database.session() as session:
        mark_not_indexed(
            session,
            collection=collection,
            reason=f"writing its points failed: {exc.message}",
            tenant_id=process_plan.tenant_id,
            document_ids=[process_plan.document_id],
        )
    try:
        store.delete_document_strategy(name, process_plan.corpus.id, process_plan.tenant_id, process_plan.document_id)
    except ChunkbenchError as cleanup:  # the runs are marked already: `chunkbench doctor --repair` finishes this
        logger.warning("partial %s points of %s left: %s", name.value, process_plan.document_id, cleanup.message)


def failed_outcome(
    name: StrategyName, params: StrategyParams, collection: str, exc: ChunkbenchError, duration_ms: int
) -> StrategyOutcome:
    return StrategyOutcome(
        strategy=name,
        status="failed",
        params=params.model_dump(),
        error=exc.code,
        message=exc.message,
        collection=collection,
        duration_ms=duration_ms,
    )


def completed_outcome(
    name: StrategyName, params: StrategyParams, run: IndexedRun, indexed: IndexedDocument, duration_ms: int
) -> StrategyOutcome:
    """One document's outcome in ``run`` (which may have indexed several documents together)."""
    details = dict(run.details)
    if "injection_flagged_chunks" in details:
        details["injection_flagged_chunks"] = indexed.flagged  # this document's, not the batch's
    return StrategyOutcome(
        strategy=name,
        status="completed",
        chunk_count=len(indexed.searchable),
        collection=run.collection,
        params=params.model_dump(),
        details=details,
        diagnostics=indexed.diagnostics(),
        duration_ms=duration_ms,
    )


def elapsed_ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def enter_embedding(database: Database, tenant_id: str, document_ids: Collection[str]) -> None:
    """Move the documents still ``chunking`` to ``embedding``."""
    with database.session() as session:
        repository = DocumentRepository(session, tenant_id)
        for document_id in document_ids:
            row = repository.get_optional(document_id)
            if row is not None and row.status == DocumentState.CHUNKING.value:
                DocumentRepository.transition(row, DocumentState.EMBEDDING)
