"""A corpus job's batch once its documents are claimed and cut: per strategy the batch's chunks embedded together
and each document's points written, then each document's runs recorded and the document finished.

Separate from ``indexing.corpus_job`` (the plan, what is pending, claiming and cutting, the run's loop) because
this is the per-document work of a batch, which needs none of the plan: what it handles is the claimed documents
(``Claimed``), their leases and the tally.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chunkbench.chunking.base import ChunkingInput
from chunkbench.config import Settings
from chunkbench.errors import ChunkbenchError, DocumentNotFoundError, JobCancelledError
from chunkbench.indexing import processing
from chunkbench.indexing.corpus_tally import Tally
from chunkbench.indexing.pipeline import IndexedDocument, IndexingPlan, StageProgress, store_documents
from chunkbench.indexing.processing_plan import ProcessPlan
from chunkbench.indexing.schemas import StrategyOutcome
from chunkbench.indexing.strategy_run import completed_outcome, enter_embedding, failed_outcome
from chunkbench.models import StrategyName
from chunkbench.progress import StopCheck
from chunkbench.storage.db import Database
from chunkbench.storage.points import collection_name
from chunkbench.storage.vectors import VectorStore

# The share of a document's work its cutting counts for in progress (the rest: embedding and writing).
CUT_SHARE = 0.1


@dataclass
class Claimed:
    """A document of the current batch: claimed by this process, its chunks per strategy, its outcomes."""

    plan: ProcessPlan
    document: ChunkingInput
    cut: dict[StrategyName, tuple[IndexedDocument, float]] = field(default_factory=dict)  # chunks, seconds cutting
    outcomes: list[StrategyOutcome] = field(default_factory=list)


class Leases:
    """The documents whose lease this job renews; ``ids`` is replaced, never mutated (the heartbeat reads it)."""

    def __init__(self) -> None:
        self.ids: tuple[str, ...] = ()

    def add(self, document_id: str) -> None:
        self.ids = (*self.ids, document_id)

    def remove(self, document_id: str) -> None:
        self.ids = tuple(i for i in self.ids if i != document_id)


def gone(document_id: str) -> DocumentNotFoundError:
    return DocumentNotFoundError(
        f"The document '{document_id}' was deleted while the corpus was being processed.", document_id=document_id
    )


def index_batch(
    database: Database,
    settings: Settings,
    store: VectorStore,
    targets: dict[StrategyName, IndexingPlan | ChunkbenchError],
    batch: list[Claimed],
    tally: Tally,
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
                share = CUT_SHARE + (1 - CUT_SHARE) * (position + done / total) / len(names)
                tally.report(f"{name.value}: embedded {done}/{total} chunks", in_flight=len(batch) * share)

        share = CUT_SHARE + (1 - CUT_SHARE) * position / len(names)
        tally.report(f"{name.value}: embedding {chunks} chunks", in_flight=len(batch) * share)
        _store_together(settings, store, target, name, members, tally, advanced, stop)


def _store_together(
    settings: Settings,
    store: VectorStore,
    target: IndexingPlan,
    name: StrategyName,
    members: list[Claimed],
    tally: Tally,
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


def finish_batch(database: Database, store: VectorStore, batch: list[Claimed], tally: Tally, leases: Leases) -> None:
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
            tally.add_failure(order, document_id, gone(document_id))
        else:
            for outcome in claimed.outcomes:
                tally.add_outcome(document_id, outcome)
        leases.remove(document_id)
        complete = len(claimed.outcomes) == len(order)
        tally.report(f"{claimed.document.document_name} done", documents_done=int(complete))
