"""Processing a corpus as one job: every member document with the request's strategies.

``plan`` validates the corpus (it exists and has documents) and the request exactly as single-document
processing does, so a bad request is a 4xx before any job. ``run`` skips each (document, strategy) whose latest
completed run is current — same validated parameters, Corpus model, Boundary model and threshold, content hash,
and its points still there — and processes the rest in batches. Documents are claimed one at a time (each keeps
its own lifecycle, lease and ``processing_run``, as in ``processing.run``) and cut by every strategy they need,
until one strategy's chunks reach ``Settings.corpus_batch_chunks``; then each strategy embeds the batch's chunks
in one call and writes each document's points, and every document of the batch records its runs and finishes.
A kill at any point leaves each document done or recoverable (``processing.fail_interrupted``), and re-running
skips what is done. A document that fails (its claim refused, chunking, embedding, …) is recorded failed with
its message; the others go on.

The per-document work of a batch once it is cut (embedding, writing, finishing) is ``indexing.corpus_batches``;
the tally of outcomes and progress ``indexing.corpus_tally``.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.chunking.base import BoundaryEmbedder, StrategyParams, strategy_class
from chunkbench.config import Settings
from chunkbench.errors import ChunkbenchError, InvalidRequestError, JobCancelledError
from chunkbench.guard.injection import InjectionDetector
from chunkbench.indexing import processing, role_models
from chunkbench.indexing.contextual import make_prefixer
from chunkbench.indexing.corpus_batches import CUT_SHARE, Claimed, Leases, finish_batch, gone, index_batch
from chunkbench.indexing.corpus_tally import Tally
from chunkbench.indexing.pipeline import STAGES, IndexingPlan, chunk_document
from chunkbench.indexing.processing_plan import ProcessPlan, ValidatedRequest, validate_request
from chunkbench.indexing.schemas import (
    CorpusProcessOut,
    CorpusStrategyOut,
    LanguageWarningOut,
    ProcessIn,
    SizeWarningOut,
)
from chunkbench.indexing.strategy_run import boundary_embedder, elapsed_ms, failed_outcome
from chunkbench.models import StrategyName
from chunkbench.progress import Progress, StopCheck, never_stop, no_progress
from chunkbench.storage.db import Database
from chunkbench.storage.ownership import Heartbeat
from chunkbench.storage.points import collection_name
from chunkbench.storage.repositories import CorpusRepository
from chunkbench.storage.schema import DocumentRow, StrategyRunRow
from chunkbench.storage.vectors import VectorStore

# Processing a corpus as a background job: batches of documents × strategies as tasks (``job_kinds``).
JOB_KIND = "process_corpus"


@dataclass(frozen=True)
class CorpusPlan:
    """A validated corpus processing request: the member documents at plan time and the model snapshots."""

    tenant_id: str
    corpus_id: str
    corpus_name: str
    document_ids: tuple[str, ...]
    request: ValidatedRequest
    # Member id → source key and detected language, at plan time: what the request's models were chosen for.
    names: dict[str, str] = field(default_factory=dict)
    languages: dict[str, str | None] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        request = self.request
        return {
            "corpus_id": self.corpus_id,
            "corpus_name": self.corpus_name,
            "documents": len(self.document_ids),
            "strategies": [name.value for name, _ in request.strategies],
            "params": {name.value: params.model_dump() for name, params in request.strategies},
            "corpus_model_id": request.corpus.id,
            "boundary_model_id": request.boundary.id if request.boundary else None,
            **({"notes": list(request.notes)} if request.notes else {}),
        }

    def document_plan(self, document_id: str, strategies: Iterable[StrategyName]) -> ProcessPlan:
        """The single-document plan of one member with the strategies it needs."""
        wanted = set(strategies)
        request = self.request
        return ProcessPlan(
            self.tenant_id,
            document_id,
            tuple((name, params) for name, params in request.strategies if name in wanted),
            request.corpus,
            request.boundary,
            request.boundary_threshold,
            self.languages.get(document_id),
            warnings=request.warnings_about(self.names.get(document_id, document_id)),
        )


def plan(session: Session, settings: Settings, corpus_name: str, request: ProcessIn, *, tenant_id: str) -> CorpusPlan:
    """Validate a corpus processing request completely; 404 (no such corpus), 400 (empty, bad request)."""
    repository = CorpusRepository(session, tenant_id)
    corpus = repository.get(corpus_name)
    document_ids = repository.document_ids(corpus)
    if not document_ids:
        raise InvalidRequestError(
            f"The corpus '{corpus.name}' has no documents. Add some with POST /corpora/{corpus.name}/documents "
            f"or `chunkbench corpora add {corpus.name} …`, then process it.",
            corpus=corpus.name,
        )
    members = role_models.evidence(session, tenant_id, document_ids)
    # One Corpus model for the whole corpus, chosen for every member's language and share of the text
    # (``indexing.role_models``).
    valid = validate_request(session, settings, request, list(members.values()))
    return CorpusPlan(
        tenant_id, corpus.id, corpus.name, tuple(document_ids), valid,
        {i: m.name for i, m in members.items()}, {i: m.language for i, m in members.items()},
    )  # fmt: skip


def _corpus_out(
    corpus_plan: CorpusPlan, strategies: list[CorpusStrategyOut], documents: int, duration_ms: int
) -> CorpusProcessOut:
    """A corpus job's result from its strategies' outcomes: a document counts failed when a strategy failed on it,
    processed when one processed it and none failed, skipped when every strategy skipped it."""
    by_document: dict[str, set[str]] = {}
    for out in strategies:
        for outcome in out.documents:
            by_document.setdefault(outcome.document_id, set()).add(outcome.status)
    request = corpus_plan.request
    return CorpusProcessOut(
        corpus_id=corpus_plan.corpus_id,
        corpus_name=corpus_plan.corpus_name,
        corpus_model_id=request.corpus.id,
        boundary_model_id=request.boundary.id if request.boundary else None,
        documents=documents,
        failed=sum("failed" in statuses for statuses in by_document.values()),
        processed=sum("processed" in statuses and "failed" not in statuses for statuses in by_document.values()),
        skipped=sum(statuses == {"skipped"} for statuses in by_document.values()),
        chunks=sum(out.chunks for out in strategies),
        duration_ms=duration_ms,
        timings={stage: sum(out.timings.get(stage, 0.0) for out in strategies) for stage in STAGES},
        strategies=strategies,
        notes=list(request.notes),
        warnings=[LanguageWarningOut(**w.to_dict()) for w in request.warnings],
        size_warnings=[SizeWarningOut(**w.to_dict()) for w in request.size_warnings],
    )


def process(
    database: Database,
    settings: Settings,
    store: VectorStore,
    corpus_name: str,
    request: ProcessIn,
    *,
    tenant_id: str,
    progress: Progress = no_progress,
    stop: StopCheck = never_stop,
) -> CorpusProcessOut:
    """Plan and run in this process: the one way to process a corpus and wait for it (the Python API). A face that
    shows the plan first (its size warnings, its documents) plans, then runs the plan: the CLI with a progress bar,
    the corpus evaluation, a route now or as a job (``jobs.routes.run_or_submit``)."""
    with database.session() as session:
        corpus_plan = plan(session, settings, corpus_name, request, tenant_id=tenant_id)
    return run(database, settings, store, corpus_plan, progress, stop)


def run(
    database: Database,
    settings: Settings,
    store: VectorStore,
    corpus_plan: CorpusPlan,
    progress: Progress,
    stop: StopCheck = never_stop,
    *,
    counts_in_message: bool = True,
) -> CorpusProcessOut:
    """Process every member document that is not current with the plan's strategies (see the module docstring).

    Once ``stop`` says so (its job was cancelled), no further document is claimed: the batch in hand is finished
    and JobCancelledError says how far it got (running the job again skips the finished documents)."""
    started = time.perf_counter()
    names = [name for name, _ in corpus_plan.request.strategies]
    tally = Tally(names, len(corpus_plan.document_ids), progress, counts_in_message)
    queue = deque(_pending(database, corpus_plan, tally))
    request = corpus_plan.request
    boundary = boundary_embedder(settings, request.boundary, request.boundary_threshold)
    targets = {name: _indexing_plan(settings, corpus_plan, name, p, boundary) for name, p in request.strategies}
    leases = Leases()
    heartbeat = Heartbeat(
        lambda: processing.renew_leases(database, settings, corpus_plan.tenant_id, leases.ids),
        settings.processing_lease_s / 3,
    )
    tally.report("starting")
    cancelled = False
    with heartbeat:
        try:
            while queue and not stop():
                batch = _fill_batch(database, settings, targets, corpus_plan, queue, tally, leases, stop)
                try:
                    index_batch(database, settings, store, targets, batch, tally, stop)
                except JobCancelledError:
                    cancelled = True  # between two embedding steps: what the batch finished is recorded below
                finish_batch(database, store, batch, tally, leases)
                if cancelled:
                    break
        except Exception as exc:
            # A bug must not leave the batch's documents "chunking" forever: they fail, with the reason.
            for document_id in leases.ids:
                reason = f"Processing stopped unexpectedly: {exc}"
                processing.fail_document(database, corpus_plan.document_plan(document_id, ()), reason)
            raise
    if queue or cancelled:
        raise JobCancelledError(
            f"Cancelled after {tally.done} of {tally.total} documents ({tally.chunks} chunks indexed); the finished "
            f"documents are kept. Process the corpus again to do the other {tally.total - tally.done}: the finished "
            "ones are skipped.",
            documents_done=tally.done,
            documents_total=tally.total,
            chunks_indexed=tally.chunks,
        )
    tally.report("done")
    return _corpus_out(corpus_plan, tally.strategies(), tally.total, elapsed_ms(started))


def _indexing_plan(
    settings: Settings,
    corpus_plan: CorpusPlan,
    name: StrategyName,
    params: StrategyParams,
    boundary: BoundaryEmbedder | ChunkbenchError | None,
) -> IndexingPlan | ChunkbenchError:
    """One strategy's plan for the whole job, or the error that fails it on every document (no Boundary model)."""
    cls = strategy_class(name)
    if cls.needs_boundary and isinstance(boundary, ChunkbenchError):
        return boundary
    try:
        usable = None if isinstance(boundary, ChunkbenchError) else boundary  # an error was returned just above
        strategy = cls(params, boundary=usable if cls.needs_boundary else None, prefixer=make_prefixer(settings))
    except ChunkbenchError as exc:
        return exc
    detector = InjectionDetector(settings.injection_threshold)
    return IndexingPlan(corpus_plan.tenant_id, strategy, corpus_plan.request.corpus, detector=detector)


def _pending(database: Database, corpus_plan: CorpusPlan, tally: Tally) -> list[tuple[str, list[StrategyName]]]:
    """Each member document with the strategies it needs; the current ones are tallied as skipped."""
    request = corpus_plan.request
    ids = list(corpus_plan.document_ids)
    with database.session() as session:
        rows = {
            row.id: row
            for row in session.scalars(
                select(DocumentRow).where(DocumentRow.tenant_id == corpus_plan.tenant_id, DocumentRow.id.in_(ids))
            )
        }
        latest: dict[tuple[str, str], StrategyRunRow] = {}
        for run in session.scalars(
            select(StrategyRunRow)
            .where(
                StrategyRunRow.tenant_id == corpus_plan.tenant_id,
                StrategyRunRow.document_id.in_(ids),
                StrategyRunRow.corpus_model_id == request.corpus.id,
                StrategyRunRow.status == "completed",
            )
            .order_by(StrategyRunRow.created_at.desc())
        ):
            latest.setdefault((run.document_id, run.strategy_name), run)
        pending: list[tuple[str, list[StrategyName]]] = []
        for document_id in ids:
            row = rows.get(document_id)
            if row is None:  # deleted since the plan
                tally.add_failure(tally.names, document_id, gone(document_id))
                tally.done += 1
                continue
            tally.filenames[document_id] = row.filename
            needed = []
            for name, params in request.strategies:
                current = latest.get((document_id, name.value))
                if current is not None and _is_current(current, row, name, params, request):
                    tally.add(name, document_id, "skipped", current.chunk_count)
                else:
                    needed.append(name)
            if needed:
                pending.append((document_id, needed))
            else:
                tally.done += 1
    return pending


def _is_current(
    run: StrategyRunRow,
    row: DocumentRow,
    name: StrategyName,
    params: StrategyParams,
    request: ValidatedRequest,
) -> bool:
    """Whether a completed run (of the request's Corpus model) is what processing now would produce."""
    if run.params != params.model_dump(mode="json") or run.details.get("content_hash") != row.content_hash:
        return False
    # Recovery of a later, interrupted run removes the strategy's points and its chunk count: not current then.
    if (row.chunk_counts or {}).get(name.value) != run.chunk_count:
        return False
    if strategy_class(name).needs_boundary:
        assert request.boundary is not None  # validate_request resolves it whenever a strategy needs it
        threshold = getattr(params, "threshold", None)
        expected = threshold if threshold is not None else request.boundary_threshold
        return run.boundary_model_id == request.boundary.id and run.details.get("threshold_used") == expected
    return True


def _fill_batch(
    database: Database,
    settings: Settings,
    targets: dict[StrategyName, IndexingPlan | ChunkbenchError],
    corpus_plan: CorpusPlan,
    queue: deque[tuple[str, list[StrategyName]]],
    tally: Tally,
    leases: Leases,
    stop: StopCheck,
) -> list[Claimed]:
    """Claim and cut documents until one strategy's chunks reach the batch bound, none are left, or ``stop``."""
    batch: list[Claimed] = []
    sizes: Counter[StrategyName] = Counter()
    while queue and max(sizes.values(), default=0) < settings.corpus_batch_chunks and not stop():
        document_id, names = queue.popleft()
        document_plan = corpus_plan.document_plan(document_id, names)
        try:
            with database.session() as session:
                document = processing.claim(session, settings, document_plan)
        except ChunkbenchError as exc:  # deleted (404), or another live process is processing it (409)
            tally.add_failure(names, document_id, exc)
            tally.report(f"{tally.filenames.get(document_id, document_id)} refused", documents_done=1)
            continue
        leases.add(document_id)
        claimed = Claimed(document_plan, document)
        batch.append(claimed)
        tally.report(f"chunking {document.document_name}", in_flight=CUT_SHARE * (len(batch) - 1))
        for name, params in document_plan.strategies:
            target = targets[name]
            cutting = time.perf_counter()
            try:
                if isinstance(target, ChunkbenchError):
                    raise target
                indexed = chunk_document(target, document)
            except ChunkbenchError as exc:
                collection = collection_name(name, corpus_plan.request.corpus.id)
                claimed.outcomes.append(failed_outcome(name, params, collection, exc, 0))
                continue
            seconds = time.perf_counter() - cutting
            claimed.cut[name] = (indexed, seconds)
            tally.timings[name]["chunk"] += seconds
            sizes[name] += len(indexed.searchable)
    return batch


def narrowed(corpus_plan: CorpusPlan, document_ids: Iterable[str], strategy: StrategyName) -> CorpusPlan:
    """The part of a corpus plan one task of a fanned-out job runs: some of its documents, one of its strategies
    (the models, chosen for the whole corpus, stay)."""
    request = corpus_plan.request
    one = tuple((name, params) for name, params in request.strategies if name == strategy)
    if not one:
        raise InvalidRequestError(f"The strategy '{strategy.value}' is not part of this corpus job.")
    return replace(corpus_plan, document_ids=tuple(document_ids), request=replace(request, strategies=one))


def merged(corpus_plan: CorpusPlan, parts: Iterable[CorpusProcessOut], duration_ms: int) -> CorpusProcessOut:
    """The result of a corpus job run as tasks (batches of documents × strategies): what one ``run`` of the whole
    plan reports, from each task's own, with the documents in plan order."""
    order = {document_id: position for position, document_id in enumerate(corpus_plan.document_ids)}
    by_strategy: dict[StrategyName, list[CorpusStrategyOut]] = {}
    for part in parts:
        for out in part.strategies:
            by_strategy.setdefault(out.strategy, []).append(out)
    strategies = []
    for name, _ in corpus_plan.request.strategies:
        outs = by_strategy.get(name, [])
        documents = sorted((d for out in outs for d in out.documents), key=lambda d: order.get(d.document_id, 0))
        strategies.append(
            CorpusStrategyOut(
                strategy=name,
                processed=sum(out.processed for out in outs),
                skipped=sum(out.skipped for out in outs),
                failed=sum(out.failed for out in outs),
                chunks=sum(out.chunks for out in outs),
                duration_ms=sum(out.duration_ms for out in outs),
                timings={stage: sum(out.timings.get(stage, 0.0) for out in outs) for stage in STAGES},
                documents=documents,
            )
        )
    return _corpus_out(corpus_plan, strategies, len(corpus_plan.document_ids), duration_ms)
