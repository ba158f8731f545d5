"""The indexing pipeline: chunk → injection check → embed (the one embedding cache) → upsert, per strategy.

Document processing, the chatbot's ``/api/index`` (through processing) and corpus evaluation all index through
:func:`index_documents`. The chunks of every document given are embedded in one batch, so a corpus pays the
model's batch throughput, not one call per document; each document's points are then written (new points
first, stale ones deleted after: a crash never leaves a document with missing chunks). What was indexed comes
back as an :class:`IndexedRun` for the caller to record (processing writes it as a ``strategy_runs`` row).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from chunkbench.chunking.base import Chunk, ChunkingInput, ChunkingStrategy
from chunkbench.chunking.diagnostics import diagnose
from chunkbench.config import Settings
from chunkbench.embedding.cache import EMBEDDINGS, EmbeddingCache
from chunkbench.embedding.registry import EmbeddingModelSpec
from chunkbench.embedding.sparse import Bm25Encoder
from chunkbench.embedding.window import WindowReport, window_report
from chunkbench.errors import ChunkingError, JobCancelledError
from chunkbench.faults import fault_point
from chunkbench.guard.injection import InjectionDetector
from chunkbench.metrics import INJECTIONS_FLAGGED_CHUNKS
from chunkbench.storage.points import collection_name
from chunkbench.storage.vectors import VectorStore

STAGES = ("chunk", "embed", "index")
# ``progress(stage, done, total)``: called as each stage starts and advances.
StageProgress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class IndexingPlan:
    """One strategy (configured: parameters, Boundary embedder, prefixer) indexed with one Corpus model."""

    tenant_id: str
    strategy: ChunkingStrategy
    corpus: EmbeddingModelSpec
    # The prompt-injection screen of every chunk (verdict into the payload); None skips it (evaluation).
    detector: InjectionDetector | None = None
    # Parent chunks are stored (for the context) unless the caller only searches: evaluation drops them.
    keep_parents: bool = True


@dataclass
class IndexedDocument:
    """One document's chunks as indexed."""

    document: ChunkingInput
    chunks: list[Chunk]  # parents included when the plan keeps them
    flagged: int  # chunks flagged as possible prompt injection
    # The searchable chunks against the Corpus model's input window (None: the model's window is unknown).
    window: WindowReport | None = None

    @property
    def searchable(self) -> list[Chunk]:
        return [chunk for chunk in self.chunks if not chunk.is_parent]

    def diagnostics(self) -> dict[str, Any]:
        diagnostics = diagnose(self.chunks, self.document.markdown)
        if self.window is not None:
            diagnostics["window"] = self.window.summary()
        return diagnostics


@dataclass
class IndexedRun:
    """What one :func:`index_documents` call indexed, the strategy's decisions and the seconds of each stage."""

    collection: str
    documents: list[IndexedDocument]
    details: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def chunks(self) -> list[Chunk]:
        return [chunk for document in self.documents for chunk in document.searchable]


def index_documents(
    settings: Settings,
    store: VectorStore,
    plan: IndexingPlan,
    documents: Sequence[ChunkingInput],
    *,
    cache: EmbeddingCache = EMBEDDINGS,
    progress: StageProgress | None = None,
) -> IndexedRun:
    """Chunk, screen, embed and upsert ``documents`` with ``plan``; raises the first domain error it meets."""
    report = progress or (lambda stage, done, total: None)
    started = time.perf_counter()
    report("chunk", 0, len(documents))
    indexed: list[IndexedDocument] = []
    for done, document in enumerate(documents, start=1):
        indexed.append(chunk_document(plan, document))
        report("chunk", done, len(documents))
    chunked = time.perf_counter() - started
    run = store_documents(settings, store, plan, indexed, cache=cache, progress=progress)
    run.timings["chunk"] = chunked
    return run


def chunk_document(plan: IndexingPlan, document: ChunkingInput) -> IndexedDocument:
    """Cut one document with the plan's strategy and screen its chunks; ChunkingError when nothing is cut."""
    chunks = plan.strategy.chunk(document)
    if not chunks:
        raise ChunkingError(
            f"The '{plan.strategy.name.value}' strategy cut no chunks from '{document.document_name}': "
            "the document has no text to index."
        )
    if not plan.keep_parents:
        chunks = [chunk for chunk in chunks if not chunk.is_parent]
    flagged = screen_chunks(chunks, plan.detector) if plan.detector is not None else 0
    return IndexedDocument(document, chunks, flagged)


def store_documents(
    settings: Settings,
    store: VectorStore,
    plan: IndexingPlan,
    indexed: Sequence[IndexedDocument],
    *,
    cache: EmbeddingCache = EMBEDDINGS,
    progress: StageProgress | None = None,
    stop: Callable[[], bool] | None = None,
) -> IndexedRun:
    """Embed the chunks of every chunked document as one batch, then write each document's points.

    The batch is embedded ``Settings.embedding_step_chunks`` at a time: progress moves between steps, and once
    ``stop`` says so (a cancelled job) JobCancelledError is raised there, before any point of the batch is written."""
    report = progress or (lambda stage, done, total: None)
    timings = dict.fromkeys(STAGES, 0.0)
    corpus, strategy = plan.corpus, plan.strategy
    started = time.perf_counter()
    texts = [chunk.embedding_text for item in indexed for chunk in item.searchable]
    report("embed", 0, len(texts))
    step = settings.embedding_step_chunks
    parts = []
    for begin in range(0, len(texts), step):
        if stop is not None and stop():
            raise JobCancelledError(
                f"Cancelled while embedding {strategy.name.value} chunks ({begin} of {len(texts)} embedded); "
                "nothing of this batch was written."
            )
        parts.append(cache.embed(corpus, texts[begin : begin + step], "document", settings))
        report("embed", min(begin + step, len(texts)), len(texts))
    dense = np.concatenate(parts) if parts else np.zeros((0, corpus.dimension), dtype=np.float32)
    sparse = Bm25Encoder().encode_documents(texts)
    _attach_windows(indexed, window_report(corpus, texts, settings))
    timings["embed"] = time.perf_counter() - started

    started = time.perf_counter()
    report("index", 0, len(indexed))
    row = 0
    for done, item in enumerate(indexed, start=1):
        count = len(item.searchable)
        store.replace_document_chunks(
            strategy.name.value,
            corpus.id,
            corpus.dimension,
            tenant_id=plan.tenant_id,
            chunks=item.chunks,
            dense=dense[row : row + count],
            sparse=sparse[row : row + count],
        )
        fault_point("after_upsert")  # a test hook (chunkbench.faults): the points are written, no run recorded yet
        row += count
        report("index", done, len(indexed))
    timings["index"] = time.perf_counter() - started
    flagged = sum(item.flagged for item in indexed)
    details = {**strategy.run_details(), **({"injection_flagged_chunks": flagged} if plan.detector else {})}
    return IndexedRun(collection_name(strategy.name, corpus.id), list(indexed), details, timings)


def _attach_windows(indexed: Sequence[IndexedDocument], report: WindowReport | None) -> None:
    """Each document's slice of the window report (the texts were embedded in document order)."""
    if report is None:
        return
    row = 0
    for item in indexed:
        count = len(item.searchable)
        item.window = replace(report, token_counts=report.token_counts[row : row + count])
        row += count


def screen_chunks(chunks: list[Chunk], detector: InjectionDetector) -> int:
    """Give every chunk (parents too: they reach the context) its injection verdict; the number flagged.

    The verdict travels in the chunk's point payload, so the context builder reads it without re-checking;
    flagged chunks are counted in ``INJECTIONS_FLAGGED_CHUNKS``.
    """
    flagged = 0
    for chunk in chunks:
        verdict = detector.check(chunk.text)
        chunk.injection_risk = verdict.risk
        chunk.injection_reasons = verdict.reasons
        flagged += verdict.flagged
    if flagged:
        INJECTIONS_FLAGGED_CHUNKS.inc(flagged)
    return flagged
