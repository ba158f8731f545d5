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
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.chunking.base import BoundaryEmbedder, ChunkingInput, StrategyParams, strategy_class
from chunkbench.config import Settings
from chunkbench.errors import ChunkbenchError, DocumentNotFoundError, InvalidRequestError, JobCancelledError
from chunkbench.guard.injection import InjectionDetector
from chunkbench.indexing import processing, role_models
from chunkbench.indexing.contextual import make_prefixer
from chunkbench.indexing.pipeline import (
    STAGES,
    IndexedDocument,
    IndexingPlan,
    StageProgress,
    chunk_document,
    store_documents,
)
from chunkbench.indexing.processing_plan import ProcessPlan, ValidatedRequest, validate_request
from chunkbench.indexing.schemas import (
    CorpusDocumentOutcome,
    CorpusProcessOut,
    CorpusStrategyOut,
    LanguageWarningOut,
    ProcessIn,
    SizeWarningOut,
    StrategyOutcome,
)
from chunkbench.indexing.strategy_run import (
    boundary_embedder,
    completed_outcome,
    elapsed_ms,
    enter_embedding,
    failed_outcome,
)
from chunkbench.models import StrategyName
from chunkbench.progress import Progress, StopCheck, never_stop
from chunkbench.storage.db import Database
from chunkbench.storage.ownership import Heartbeat
from chunkbench.storage.points import collection_name
from chunkbench.storage.repositories import CorpusRepository
from chunkbench.storage.schema import DocumentRow, StrategyRunRow
from chunkbench.storage.vectors import VectorStore

# Processing a corpus as a background job: batches of documents × strategies as tasks (``job_kinds``).
JOB_KIND = "process_corpus"
# The share of a document's work its cutting counts for in progress (the rest: embedding and writing).
_CUT_SHARE = 0.1


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


@dataclass
class _Claimed:
    """A document of the current batch: claimed by this process, its chunks per strategy, its outcomes."""

    plan: ProcessPlan
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

    def __init__(self, corpus_plan: CorpusPlan, progress: Progress, counts_in_message: bool = True) -> None:
        self.counts_in_message = counts_in_message
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

    def report(self, stage: str, documents_done: int = 0, *, in_flight: float = 0.0) -> None:
        """Progress: the documents finished, plus ``in_flight`` documents' worth of the batch in hand (cut, and the
        share embedded so far), so the fraction moves while a batch is cut and embedded, not only when it is
        written. A task of a fanned-out job reports the stage alone (its job counts documents over all tasks)."""
        self.done += documents_done
        fraction = min(1.0, (self.done + in_flight) / self.total) if self.total else 1.0
        counts = f"{self.done}/{self.total} documents · {self.chunks} chunks · " if self.counts_in_message else ""
        self._progress(fraction, counts + stage)

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
        return _corpus_out(corpus_plan, strategies, self.total, elapsed_ms(started))


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
    tally = _Tally(corpus_plan, progress, counts_in_message)
    queue = deque(_pending(database, corpus_plan, tally))
    request = corpus_plan.request
    boundary = boundary_embedder(settings, request.boundary, request.boundary_threshold)
    targets = {name: _indexing_plan(settings, corpus_plan, name, p, boundary) for name, p in request.strategies}
    leases = _Leases()
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
                    _index_batch(database, settings, store, targets, batch, tally, stop)
                except JobCancelledError:
                    cancelled = True  # between two embedding steps: what the batch finished is recorded below
                _finish_batch(database, store, batch, tally, leases)
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
        usable = None if isinstance(boundary, ChunkbenchError) else boundary  # an error was returned just above
        strategy = cls(params, boundary=usable if cls.needs_boundary else None, prefixer=make_prefixer(settings))
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
                document = processing.claim(session, settings, document_plan)
        except ChunkbenchError as exc:  # deleted (404), or another live process is processing it (409)
            tally.add_failure(names, document_id, exc)
            tally.report(f"{tally.filenames.get(document_id, document_id)} refused", documents_done=1)
            continue
        leases.add(document_id)
        claimed = _Claimed(document_plan, document)
        batch.append(claimed)
        tally.report(f"chunking {document.document_name}", in_flight=_CUT_SHARE * (len(batch) - 1))
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


def _index_batch(
    database: Database,
    settings: Settings,
    store: VectorStore,
    targets: dict[StrategyName, IndexingPlan | ChunkbenchError],
    batch: list[_Claimed],
    tally: _Tally,
    stop: StopCheck,
) -> None:
    """Per strategy, embed the batch's chunks together and write each document's points; JobCancelledError once
    ``stop`` says so between two embedding steps (the strategies written before keep their outcomes)."""
    names = [name for name in tally.names if any(name in claimed.cut for claimed in batch)]
    for position, name in enumerate(names):
        members = [claimed for claimed in batch if name in claimed.cut]
        target = targets[name]
        assert isinstance(target, IndexingPlan)  # a failed target cut nothing
        enter_embedding(database, target.tenant_id, [claimed.plan.document_id for claimed in members])
        chunks = sum(len(c.cut[name][0].searchable) for c in members)

        def advanced(stage: str, done: int, total: int, position: int = position, name: StrategyName = name) -> None:
            if stage == "embed" and total:
                share = _CUT_SHARE + (1 - _CUT_SHARE) * (position + done / total) / len(names)
                tally.report(f"{name.value}: embedded {done}/{total} chunks", in_flight=len(batch) * share)

        share = _CUT_SHARE + (1 - _CUT_SHARE) * position / len(names)
        tally.report(f"{name.value}: embedding {chunks} chunks", in_flight=len(batch) * share)
        _store_together(settings, store, target, name, members, tally, advanced, stop)


def _store_together(
    settings: Settings,
    store: VectorStore,
    target: IndexingPlan,
    name: StrategyName,
    members: list[_Claimed],
    tally: _Tally,
    advanced: StageProgress,
    stop: StopCheck,
) -> None:
    params = dict(members[0].plan.strategies)[name]
    try:
        run = store_documents(
            settings, store, target, [claimed.cut[name][0] for claimed in members], progress=advanced, stop=stop
        )
    except JobCancelledError:
        raise
    except ChunkbenchError as exc:
        if len(members) > 1:
            # One document's chunks may be what fails (e.g. a text the model refuses): each alone, so only it fails.
            for claimed in members:
                _store_together(settings, store, target, name, [claimed], tally, advanced, stop)
            return
        (claimed,) = members
        collection = collection_name(name, target.corpus.id)
        claimed.outcomes.append(failed_outcome(name, params, collection, exc, 0))
        return
    for stage in ("embed", "index"):
        tally.timings[name][stage] += run.timings[stage]
    shared_s = run.timings["embed"] + run.timings["index"]
    chunks = max(1, len(run.chunks))
    for claimed, indexed in zip(members, run.documents, strict=True):
        # A document's time: its own cutting plus its share (by chunks) of the batch's embedding and writes.
        seconds = claimed.cut[name][1] + shared_s * len(indexed.searchable) / chunks
        claimed.outcomes.append(completed_outcome(name, params, run, indexed, int(seconds * 1000)))


def _finish_batch(
    database: Database, store: VectorStore, batch: list[_Claimed], tally: _Tally, leases: _Leases
) -> None:
    """Record each document's runs (in the request's strategy order) and move it to indexed or failed; a document
    cancelled before any of its strategies was written is given back as it was. Only a document every strategy
    has an outcome for counts as done."""
    for claimed in batch:
        document_id = claimed.plan.document_id
        order = [name for name, _ in claimed.plan.strategies]
        if not claimed.outcomes:
            processing.release_unwritten(database, claimed.plan)
            leases.remove(document_id)
            continue
        claimed.outcomes.sort(key=lambda outcome: order.index(outcome.strategy))
        for outcome in claimed.outcomes:
            processing.record(database, claimed.plan, outcome)
        try:
            processing.finish(database, store, claimed.plan, claimed.outcomes)
        except DocumentNotFoundError:
            tally.add_failure(order, document_id, _gone(document_id))
        else:
            for outcome in claimed.outcomes:
                tally.add_outcome(document_id, outcome)
        leases.remove(document_id)
        complete = len(claimed.outcomes) == len(order)
        tally.report(f"{claimed.document.document_name} done", documents_done=int(complete))


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
