"""Benchmark Sweeps (docs/benchmarks.md): one Experiment per level of one knob, the rest held fixed.

``neighbors`` steps fixed_size's Neighbor Expansion (0,0)…(3,3); ``chunk_grid`` re-processes the document at
each chunk size × overlap point and benchmarks it, then restores the parameters the strategy had before.
A sweep over runs a wipe marked not indexed answers 409 ``not_indexed`` before any level runs, as a query does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chunkbench.benchmarking import benchmarks
from chunkbench.benchmarking.model import Experiment
from chunkbench.benchmarking.schemas import BenchmarkIn
from chunkbench.chunking.base import capabilities, strategy_class
from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.errors import BenchmarkError
from chunkbench.indexing import processing
from chunkbench.indexing.schemas import ProcessIn
from chunkbench.limits import MAX_NEIGHBORS
from chunkbench.models import StrategyName
from chunkbench.progress import Progress
from chunkbench.storage.db import Database
from chunkbench.storage.index_state import require_indexed
from chunkbench.storage.repositories import CorpusRepository, DocumentRepository
from chunkbench.storage.schema import DocumentRow, ExperimentRow
from chunkbench.storage.vectors import VectorStore


def _level(label: str, row: ExperimentRow) -> dict[str, Any]:
    """One sweep level: its Experiment and the primary metric of its (single) configuration."""
    experiment = Experiment.from_row(row)
    metric = experiment.config.primary_metric
    key, aggregate = next(iter(experiment.aggregate.items()))
    summary = aggregate["metrics"][metric]
    return {
        "level": label, "experiment_id": row.id, "config_key": key, "metric": metric, "mean": summary["mean"],
        "ci_low": summary["ci_low"], "ci_high": summary["ci_high"],
        "tok_at_k": aggregate["metrics"]["tok_at_k"]["mean"],
    }  # fmt: skip


def _scaled(progress: Progress | None, index: int, total: int) -> Progress:
    """Level ``index`` of ``total`` reported as its share of the whole sweep."""

    def report(fraction: float, message: str) -> None:
        if progress is not None:
            progress((index + fraction) / total, f"level {index + 1}/{total}: {message}")

    return report


def neighbors(
    database: Database,
    settings: Settings,
    store: VectorStore,
    request: BenchmarkIn,
    *,
    levels: Sequence[int] = (0, 1, 2, 3),
    tenant_id: str,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """The strategies that expand neighbours (fixed_size) at Neighbor Expansion (n, n) for each level n: one
    Experiment per level (of the request's strategies, those that expand; none given: every such strategy)."""
    if not levels or any(not 0 <= level <= MAX_NEIGHBORS for level in levels):
        raise BenchmarkError(f"Neighbor levels must be between 0 and {MAX_NEIGHBORS}, e.g. 0,1,2,3.")
    strategies = _expanding(database, request, tenant_id=tenant_id)
    if not strategies:
        raise BenchmarkError(
            "A neighbor sweep needs a strategy whose chunks are windows (Neighbor Expansion applies to it), "
            "such as fixed_size."
        )
    # Before level 0: a wiped run is named with its fix once, not found again by each level's planning.
    with database.session() as session:
        documents = _documents(session, request, tenant_id=tenant_id)
        last = {d.last_corpus_embedding_model_id for d in documents} - {None}
        # The Corpus models the benchmark planning picks: those asked for, else the documents' last one.
        model_ids: Sequence[str | None] = request.corpus_models or [
            request.corpus_model_id or (last.pop() if len(last) == 1 else None)
        ]
        for model_id in model_ids:
            model = roles.resolve_corpus_model(session, model_id)
            for strategy in strategies:
                require_indexed(session, tenant_id, strategy.value, model.id, [d.id for d in documents])
    results = []
    for index, level in enumerate(levels):
        level_request = request.model_copy(
            update={
                "strategies": strategies, "neighbor_prev": level, "neighbor_next": level,
                "name": request.name or f"neighbor sweep ±{level}", "top_k": request.top_k[:1],
            }
        )  # fmt: skip
        row = benchmarks.run(
            database, settings, store, level_request, tenant_id=tenant_id,
            progress=_scaled(progress, index, len(levels)),
        )  # fmt: skip
        results.append(_level(f"±{level}", row))
    return results


def _expanding(database: Database, request: BenchmarkIn, *, tenant_id: str) -> list[StrategyName]:
    """The request's strategies that expand neighbours; none named: those every document (the one, or each of
    the corpus's) was processed with."""
    names = list(request.strategies or [])
    if not names:
        with database.session() as session:
            documents = _documents(session, request, tenant_id=tenant_id)
            processed = set.intersection(*(set(d.chunk_counts or {}) for d in documents)) if documents else set()
        names = [name for name in StrategyName if name.value in processed] or list(StrategyName)
    return [name for name in names if capabilities(name).expands_neighbours]


def _documents(session, request: BenchmarkIn, *, tenant_id: str) -> list[DocumentRow]:
    """The request's document, or its corpus's documents (404 when either is not the tenant's)."""
    if request.corpus is not None:
        corpora = CorpusRepository(session, tenant_id)
        return list(corpora.documents(corpora.get(request.corpus)))
    return [DocumentRepository(session, tenant_id).get(str(request.document_id))]


def chunk_grid(
    database: Database,
    settings: Settings,
    store: VectorStore,
    request: BenchmarkIn,
    *,
    strategy: StrategyName,
    sizes: Sequence[int],
    overlaps: Sequence[int],
    tenant_id: str,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Re-process ``strategy`` at every chunk_size × chunk_overlap point (overlap < size) and benchmark each."""
    if request.document_id is None:
        raise BenchmarkError(
            "A chunk-size sweep re-processes one document at every grid point: give a document, not a corpus."
        )
    document_id = request.document_id
    fields = strategy_class(strategy).params_model.model_fields
    if "chunk_size" not in fields or ("chunk_overlap" not in fields and any(overlaps)):
        raise BenchmarkError(f"{strategy.value} has no chunk_size/chunk_overlap to sweep; use fixed_size or recursive.")
    points = [(size, overlap) for size in sizes for overlap in overlaps if overlap < size]
    if not points:
        raise BenchmarkError("No grid point has an overlap smaller than its chunk size.")
    with database.session() as session:
        document = DocumentRepository(session, tenant_id).get(document_id)
        corpus = roles.resolve_corpus_model(session, request.corpus_model_id or document.last_corpus_embedding_model_id)
        # A run a wipe marked not indexed has no completed run to restore after the grid: 409 with the fix, not a
        # sweep that leaves the document chunked at its last grid point.
        require_indexed(session, tenant_id, strategy.value, corpus.id, [document.id])
        before = processing.latest_run(session, document.id, strategy, corpus.id, tenant_id=tenant_id)
    original = dict(before.params) if before is not None else None
    results = []
    try:
        for index, (size, overlap) in enumerate(points):
            params = {"chunk_size": size} | ({"chunk_overlap": overlap} if "chunk_overlap" in fields else {})
            _process(database, settings, store, document_id, strategy, params, corpus.id, tenant_id)
            point_request = request.model_copy(
                update={"strategies": [strategy], "name": request.name or f"{strategy.value} {size}/{overlap}",
                        "corpus_model_id": corpus.id}
            )  # fmt: skip
            row = benchmarks.run(
                database, settings, store, point_request, tenant_id=tenant_id,
                progress=_scaled(progress, index, len(points)),
            )  # fmt: skip
            results.append(_level(f"{size}/{overlap}", row))
    finally:
        # The sweep must not leave the document chunked at its last grid point.
        if original is not None:
            _process(database, settings, store, document_id, strategy, original, corpus.id, tenant_id)
    return results


def _process(
    database: Database,
    settings: Settings,
    store: VectorStore,
    document_id: str,
    strategy: StrategyName,
    params: dict[str, Any],
    corpus_model_id: str,
    tenant_id: str,
) -> None:
    request = ProcessIn(strategies=[strategy], corpus_model_id=corpus_model_id, params={strategy: params})
    outcome = processing.process(database, settings, store, document_id, request, tenant_id=tenant_id)
    if outcome.failed:
        raise BenchmarkError(f"Processing {strategy.value} with {params} failed: {outcome.failed[0]}")
