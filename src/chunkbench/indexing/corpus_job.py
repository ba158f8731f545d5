"""Processing a corpus as one job: every member document with the request's strategies.

``plan`` validates the corpus (it exists and has documents) and the request exactly as single-document
processing does, so a bad request is a 4xx before any job. ``run`` skips each (document, strategy) whose latest
completed run is current — same validated parameters, Corpus model, Boundary model and threshold, content hash,
and its points still there — and processes the rest in batches. Documents are claimed one at a time (each keeps
its own lifecycle, lease and ``processing_run``, as in ``service.run``) and cut by every strategy they need,
until one strategy's chunks reach ``Settings.corpus_batch_chunks``; then each strategy embeds the batch's chunks
in one call and writes each document's points, and every document of the batch records its runs and finishes.
A kill at any point leaves each document done or recoverable (``service.fail_interrupted``), and re-running
skips what is done. A document that fails (its claim refused, chunking, embedding, …) is recorded failed with
its message; the others go on.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.chunking.base import BoundaryEmbedder, ChunkingInput, StrategyParams, strategy_class
from chunkbench.config import Settings
from chunkbench.errors import ChunkbenchError, DocumentNotFoundError, InvalidRequestError, JobCancelledError
from chunkbench.guard.injection import InjectionDetector
from chunkbench.indexing import languages, service
from chunkbench.indexing.contextual import make_prefixer
from chunkbench.indexing.pipeline import STAGES, IndexedDocument, IndexingPlan, chunk_document, store_documents
from chunkbench.indexing.schemas import (
    CorpusDocumentOutcome,
    CorpusProcessOut,
    CorpusStrategyOut,
    LanguageWarningOut,
    ProcessIn,
    SizeWarningOut,
    StrategyOutcome,
)
from chunkbench.jobs.service import Progress, StopCheck, never_stop
from chunkbench.models import StrategyName
from chunkbench.storage.db import Database
from chunkbench.storage.ownership import Heartbeat
from chunkbench.storage.points import collection_name
from chunkbench.storage.repositories import CorpusRepository
from chunkbench.storage.schema import DocumentRow, StrategyRunRow
from chunkbench.storage.vectors import VectorStore


@dataclass(frozen=True)
class CorpusPlan:
    """A validated corpus processing request: the member documents at plan time and the model snapshots."""

    tenant_id: str
    corpus_id: str
    corpus_name: str
    document_ids: tuple[str, ...]
    request: service.ValidatedRequest
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

    def document_plan(self, document_id: str, strategies: Iterable[StrategyName]) -> service.ProcessPlan:
        """The single-document plan of one member with the strategies it needs."""
        wanted = set(strategies)
        request = self.request
        return service.ProcessPlan(
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
    members = languages.evidence(session, tenant_id, document_ids)
    # One Corpus model for the whole corpus, chosen for every member's language and share of the text
    # (``indexing.languages``).
    valid = service.validate_request(session, settings, request, list(members.values()))
    return CorpusPlan(
        tenant_id, corpus.id, corpus.name, tuple(document_ids), valid,
        {i: m.name for i, m in members.items()}, {i: m.language for i, m in members.items()},
    )  # fmt: skip


@dataclass
class _Claimed:
    """A document of the current batch: claimed by this process, its chunks per strategy, its outcomes."""

    plan: service.ProcessPlan
    document: ChunkingInput
    cut: dict[StrategyName, tuple[IndexedDocument, float]] = field(default_factory=dict)  # chunks, seconds cutting
    outcomes: list[StrategyOutcome] = field(default_factory=list)


class _Leases:
    """The documents whose lease this job renews; ``ids`` is replaced, never mutated (the heartbeat reads it)."""

    def __init__(self) -> None:
        self.ids: tuple[str, ...] = ()

    def add(self, document_id: str) -> None:
        self.ids = (*self.ids, document_id)

    def remove(self, document_id: str) -> None:
        self.ids = tuple(i for i in self.ids if i != document_id)


class _Tally:
    """What the job did so far: per strategy and document, totals, and the progress it reports."""

    def __init__(self, corpus_plan: CorpusPlan, progress: Progress) -> None:
        self.names = [name for name, _ in corpus_plan.request.strategies]
        self.total = len(corpus_plan.document_ids)
        self.filenames: dict[str, str] = {}
        self.outcomes: dict[StrategyName, list[CorpusDocumentOutcome]] = {name: [] for name in self.names}
        self.timings: dict[StrategyName, dict[str, float]] = {name: dict.fromkeys(STAGES, 0.0) for name in self.names}
        self.done = 0
        self.chunks = 0
        self._progress = progress

    def add(self, name: StrategyName, document_id: str, status: str, chunk_count: int = 0, **error: Any) -> None:
        filename = self.filenames.get(document_id)
        outcome = CorpusDocumentOutcome(
            document_id=document_id, filename=filename, status=status, chunk_count=chunk_count, **error
        )
        self.outcomes[name].append(outcome)
        if status == "processed":
            self.chunks += chunk_count

    def add_outcome(self, document_id: str, outcome: StrategyOutcome) -> None:
        if outcome.status == "completed":
            self.add(outcome.strategy, document_id, "processed", outcome.chunk_count)
        else:
            self.add(outcome.strategy, document_id, "failed", error=outcome.error, message=outcome.message)

    def add_failure(self, names: Iterable[StrategyName], document_id: str, exc: ChunkbenchError) -> None:
        for name in names:
            self.add(name, document_id, "failed", error=exc.code, message=exc.message)

    def report(self, stage: str, documents_done: int = 0) -> None:
        self.done += documents_done
        fraction = self.done / self.total if self.total else 1.0
        self._progress(fraction, f"{self.done}/{self.total} documents · {self.chunks} chunks · {stage}")

    def result(self, corpus_plan: CorpusPlan, started: float) -> CorpusProcessOut:
        strategies = []
        for name in self.names:
            outcomes, timings = self.outcomes[name], self.timings[name]
            count = Counter(outcome.status for outcome in outcomes)
            strategies.append(
                CorpusStrategyOut(
                    strategy=name,
                    processed=count["processed"],
                    skipped=count["skipped"],
                    failed=count["failed"],
                    chunks=sum(o.chunk_count for o in outcomes if o.status == "processed"),
                    duration_ms=int(sum(timings.values()) * 1000),
                    timings=timings,
                    documents=outcomes,
                )
            )
        by_document: dict[str, set[str]] = {}
        for outcomes in self.outcomes.values():
            for outcome in outcomes:
                by_document.setdefault(outcome.document_id, set()).add(outcome.status)
        request = corpus_plan.request
        return CorpusProcessOut(
            corpus_id=corpus_plan.corpus_id,
            corpus_name=corpus_plan.corpus_name,
            corpus_model_id=request.corpus.id,
            boundary_model_id=request.boundary.id if request.boundary else None,
            documents=self.total,
            failed=sum("failed" in statuses for statuses in by_document.values()),
            processed=sum("processed" in statuses and "failed" not in statuses for statuses in by_document.values()),
            skipped=sum(statuses == {"skipped"} for statuses in by_document.values()),
            chunks=self.chunks,
            duration_ms=service.elapsed_ms(started),
            timings={stage: sum(t[stage] for t in self.timings.values()) for stage in STAGES},
            strategies=strategies,
            notes=list(request.notes),
            warnings=[LanguageWarningOut(**w.to_dict()) for w in request.warnings],
            size_warnings=[SizeWarningOut(**w.to_dict()) for w in request.size_warnings],
        )


def run(
    database: Database,
    settings: Settings,
    store: VectorStore,
    corpus_plan: CorpusPlan,
    progress: Progress,
    stop: StopCheck = never_stop,
) -> CorpusProcessOut:
    """Process every member document that is not current with the plan's strategies (see the module docstring).

    Once ``stop`` says so (its job was cancelled), no further document is claimed: the batch in hand is finished
    and JobCancelledError says how far it got (running the job again skips the finished documents)."""
    started = time.perf_counter()
    tally = _Tally(corpus_plan, progress)
    queue = deque(_pending(database, corpus_plan, tally))
    request = corpus_plan.request
    boundary = service.boundary_embedder(settings, request.boundary, request.boundary_threshold)
    targets = {name: _indexing_plan(settings, corpus_plan, name, p, boundary) for name, p in request.strategies}
    leases = _Leases()
    heartbeat = Heartbeat(
        lambda: service.renew_leases(database, settings, corpus_plan.tenant_id, leases.ids),
        settings.processing_lease_s / 3,
    )
    tally.report("starting")
    with heartbeat:
        try:
            while queue and not stop():
                batch = _fill_batch(database, settings, targets, corpus_plan, queue, tally, leases, stop)
                _index_batch(database, settings, store, targets, batch, tally)
                _finish_batch(database, store, batch, tally, leases)
        except Exception as exc:
            # A bug must not leave the batch's documents "chunking" forever: they fail, with the reason.
            for document_id in leases.ids:
                reason = f"Processing stopped unexpectedly: {exc}"
                service.fail_document(database, corpus_plan.document_plan(document_id, ()), reason)
            raise
    if queue:
        raise JobCancelledError(
            f"Cancelled after {tally.done} of {tally.total} documents ({tally.chunks} chunks indexed); the finished "
            f"documents are kept. Process the corpus again to do the other {len(queue)}: the finished ones are "
            "skipped.",
            documents_done=tally.done,
            documents_total=tally.total,
        )
    tally.report("done")
    return tally.result(corpus_plan, started)


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
        strategy = cls(params, boundary=boundary if cls.needs_boundary else None, prefixer=make_prefixer(settings))
    except ChunkbenchError as exc:
        return exc
    detector = InjectionDetector(settings.injection_threshold)
    return IndexingPlan(corpus_plan.tenant_id, strategy, corpus_plan.request.corpus, detector=detector)


def _pending(database: Database, corpus_plan: CorpusPlan, tally: _Tally) -> list[tuple[str, list[StrategyName]]]:
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
                tally.add_failure(tally.names, document_id, _gone(document_id))
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
    run: StrategyRunRow, row: DocumentRow, name: StrategyName, params: StrategyParams, request: service.ValidatedRequest
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


def _gone(document_id: str) -> DocumentNotFoundError:
    return DocumentNotFoundError(
        f"The document '{document_id}' was deleted while the corpus was being processed.", document_id=document_id
    )


def _fill_batch(
    database: Database,
    settings: Settings,
    targets: dict[StrategyName, IndexingPlan | ChunkbenchError],
    corpus_plan: CorpusPlan,
    queue: deque[tuple[str, list[StrategyName]]],
    tally: _Tally,
    leases: _Leases,
    stop: StopCheck,
) -> list[_Claimed]:
    """Claim and cut documents until one strategy's chunks reach the batch bound, none are left, or ``stop``."""
    batch: list[_Claimed] = []
    sizes: Counter[StrategyName] = Counter()
    while queue and max(sizes.values(), default=0) < settings.corpus_batch_chunks and not stop():
        document_id, names = queue.popleft()
        document_plan = corpus_plan.document_plan(document_id, names)
        try:
            with database.session() as session:
                document = service.claim(session, settings, document_plan)
        except ChunkbenchError as exc:  # deleted (404), or another live process is processing it (409)
            tally.add_failure(names, document_id, exc)
            tally.report(f"{tally.filenames.get(document_id, document_id)} refused", documents_done=1)
            continue
        leases.add(document_id)
        claimed = _Claimed(document_plan, document)
        batch.append(claimed)
        tally.report(f"chunking {document.document_name}")
        for name, params in document_plan.strategies:
            target = targets[name]
            cutting = time.perf_counter()
            try:
                if isinstance(target, ChunkbenchError):
                    raise target
                indexed = chunk_document(target, document)
            except ChunkbenchError as exc:
                collection = collection_name(name, corpus_plan.request.corpus.id)
                claimed.outcomes.append(service.failed_outcome(name, params, collection, exc, 0))
                continue
            seconds = time.perf_counter() - cutting
            claimed.cut[name] = (indexed, seconds)
            tally.timings[name]["chunk"] += seconds
            sizes[name] += len(indexed.searchable)
    return batch


def _index_batch(
    database: Database,
    settings: Settings,
    store: VectorStore,
    targets: dict[StrategyName, IndexingPlan | ChunkbenchError],
    batch: list[_Claimed],
    tally: _Tally,
) -> None:
    """Per strategy, embed the batch's chunks together and write each document's points."""
    for name in tally.names:
        members = [claimed for claimed in batch if name in claimed.cut]
        if not members:
            continue
        target = targets[name]
        assert isinstance(target, IndexingPlan)  # a failed target cut nothing
        service.enter_embedding(database, target.tenant_id, [claimed.plan.document_id for claimed in members])
        tally.report(f"{name.value}: embedding {sum(len(c.cut[name][0].searchable) for c in members)} chunks")
        _store_together(settings, store, target, name, members, tally)


def _store_together(
    settings: Settings,
    store: VectorStore,
    target: IndexingPlan,
    name: StrategyName,
    members: list[_Claimed],
    tally: _Tally,
) -> None:
    params = dict(members[0].plan.strategies)[name]
    try:
        run = store_documents(settings, store, target, [claimed.cut[name][0] for claimed in members])
    except ChunkbenchError as exc:
        if len(members) > 1:
            # One document's chunks may be what fails (e.g. a text the model refuses): each alone, so only it fails.
            for claimed in members:
                _store_together(settings, store, target, name, [claimed], tally)
            return
        (claimed,) = members
        collection = collection_name(name, target.corpus.id)
        claimed.outcomes.append(service.failed_outcome(name, params, collection, exc, 0))
        return
    for stage in ("embed", "index"):
        tally.timings[name][stage] += run.timings[stage]
    shared_s = run.timings["embed"] + run.timings["index"]
    chunks = max(1, len(run.chunks))
    for claimed, indexed in zip(members, run.documents, strict=True):
        # A document's time: its own cutting plus its share (by chunks) of the batch's embedding and writes.
        seconds = claimed.cut[name][1] + shared_s * len(indexed.searchable) / chunks
        claimed.outcomes.append(service.completed_outcome(name, params, run, indexed, int(seconds * 1000)))


def _finish_batch(
    database: Database, store: VectorStore, batch: list[_Claimed], tally: _Tally, leases: _Leases
) -> None:
    """Record each document's runs (in the request's strategy order) and move it to indexed or failed."""
    for claimed in batch:
        document_id = claimed.plan.document_id
        order = [name for name, _ in claimed.plan.strategies]
        claimed.outcomes.sort(key=lambda outcome: order.index(outcome.strategy))
        for outcome in claimed.outcomes:
            service.record(database, claimed.plan, outcome)
        try:
            service.finish(database, store, claimed.plan, claimed.outcomes)
        except DocumentNotFoundError:
            tally.add_failure(order, document_id, _gone(document_id))
        else:
            for outcome in claimed.outcomes:
                tally.add_outcome(document_id, outcome)
        leases.remove(document_id)
        tally.report(f"{claimed.document.document_name} done", documents_done=1)
