"""Corpus-level span evaluation: chunk every document, index them together, retrieve per question, score."""

# Chroma's general evaluation through chunkbench's own pipeline: a registered strategy cuts each document
# (offsets come from the strategy), the Corpus model embeds the chunks, one throwaway Qdrant collection in a
# temporary data directory holds every document, and a registered retriever returns ``n`` chunks per
# question. The search spans the whole index by default because Chroma's ``collection.query`` does, and its
# published figures count the chunks of other documents so; ``scope="document"`` searches the question's own.

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from chunkbench.chunking.base import (
    ChunkingInput,
    ChunkingStrategy,
    StrategyParams,
    defaults_from_settings,
    strategy_class,
    validate_params,
)
from chunkbench.config import Settings, get_settings
from chunkbench.embedding.cache import EMBEDDINGS, EmbeddingCache
from chunkbench.embedding.registry import DEFAULT_MODEL_ID, EmbeddingModelSpec, get_spec
from chunkbench.embedding.service import boundary_embedder
from chunkbench.errors import EvaluationError
from chunkbench.evaluation.corpus_inputs import placed_questions
from chunkbench.evaluation.corpus_scores import ProgressCallback, SpanEvaluation, score_questions
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.evaluation.ranking import ChunkRef
from chunkbench.indexing.contextual import make_prefixer
from chunkbench.indexing.pipeline import IndexingPlan, index_documents
from chunkbench.limits import MAX_CANDIDATE_K
from chunkbench.models import DocumentTree, NodeType, StrategyName, TreeNode
from chunkbench.retrieval import pipeline
from chunkbench.retrieval.search import RetrieverName, get_retriever
from chunkbench.storage.vectors import VectorStore

EVAL_TENANT = "eval"
STAGES = ("chunk", "embed", "index", "retrieve", "score")


class Scope(StrEnum):
    """Where a question's chunks are searched."""

    CORPUS = "corpus"
    DOCUMENT = "document"


def _strategy(
    strategy: StrategyName, params: StrategyParams, settings: Settings, spec: EmbeddingModelSpec
) -> ChunkingStrategy:
    """The strategy with validated params; the semantic ones use the Corpus model as their Boundary model, at
    its default threshold."""
    cls = strategy_class(strategy)
    boundary = boundary_embedder(spec, spec.default_semantic_threshold, settings) if cls.needs_boundary else None
    return cls(params, boundary=boundary, prefixer=make_prefixer(settings))


def _inputs(documents: dict[str, str]) -> list[ChunkingInput]:
    # Evidence offsets point into the raw text: chunk it as is, with a tree of one root node (the heading-aware
    # strategies then find ``#`` heading lines in the text themselves).
    return [
        ChunkingInput(
            document_id=document_id,
            document_name=document_id,
            markdown=text,
            tree=DocumentTree(root=TreeNode(node_type=NodeType.DOCUMENT, start_index=0, end_index=len(text))),
        )
        for document_id, text in documents.items()
    ]


def evaluate_spans(
    documents: dict[str, str],
    questions: Sequence[BenchmarkQuestion],
    *,
    strategy: StrategyName | str = StrategyName.FIXED_SIZE,
    params: dict[str, Any] | None = None,
    retriever: RetrieverName | str = RetrieverName.DENSE,
    corpus_model: str = DEFAULT_MODEL_ID,
    n: int = 5,
    scope: Scope | str = Scope.CORPUS,
    settings: Settings | None = None,
    cache: EmbeddingCache | None = None,
    progress: ProgressCallback | None = None,
) -> SpanEvaluation:
    """Chunk, embed, index and search ``documents``, then score each question's top ``n`` chunks.

    Raises typed errors before any work for unknown strategies, parameters, retrievers, models, scopes and
    document ids, and for references that do not match their document.
    """
    report = progress or (lambda stage, done, total: None)
    base = settings or get_settings()
    strategy_name = StrategyName(strategy_class(strategy).name)  # unknown name: ChunkingError listing the known
    validated = validate_params(strategy_name, {**defaults_from_settings(strategy_name, base), **(params or {})})
    try:
        scope_value = Scope(scope)
    except ValueError:
        raise EvaluationError(f"Unknown scope '{scope}'. Scopes: {', '.join(s.value for s in Scope)}.") from None
    engine = get_retriever(retriever)
    spec = get_spec(corpus_model)
    if not 1 <= n <= MAX_CANDIDATE_K:
        raise EvaluationError(f"n (chunks retrieved per question) must be between 1 and {MAX_CANDIDATE_K}; got {n}.")
    if not documents:
        raise EvaluationError("There are no documents to evaluate.")
    if not questions:
        raise EvaluationError("There are no questions to evaluate.")
    questions = placed_questions(questions, documents)
    cache = cache if cache is not None else EMBEDDINGS
    timings: dict[str, float] = dict.fromkeys(STAGES, 0.0)

    with tempfile.TemporaryDirectory(prefix="chunkbench-eval-") as folder:
        # A throwaway embedded store: the user's own collections (or Qdrant server) are never touched. Chroma's
        # protocol has no score floor: every question gets its n chunks.
        settings_tmp = base.model_copy(
            update={
                "data_dir": Path(folder), "qdrant_url": "", "models_dir": base.resolved_models_dir, "score_floor": None,
            }
        )  # fmt: skip
        store = VectorStore(settings_tmp)
        try:
            plan = IndexingPlan(EVAL_TENANT, _strategy(strategy_name, validated, base, spec), spec, keep_parents=False)
            run = index_documents(base, store, plan, _inputs(documents), cache=cache, progress=report)
            timings.update(run.timings)

            started = time.perf_counter()
            query_vectors = (
                cache.embed(spec, [q.question for q in questions], "query", base) if engine.needs_query_vector else None
            )
            timings["embed"] += time.perf_counter() - started

            started = time.perf_counter()
            hits = _retrieve(
                settings_tmp, store, RetrieverName(retriever), spec, strategy_name, questions, query_vectors, n,
                scope_value, report,
            )  # fmt: skip
            timings["retrieve"] = time.perf_counter() - started
        finally:
            store.close()

    chunks = run.chunks
    by_document = {indexed.document.document_id: indexed.searchable for indexed in run.documents}
    started = time.perf_counter()
    per_question = score_questions(documents, questions, by_document, hits, n, report)
    timings["score"] = time.perf_counter() - started
    return SpanEvaluation(
        config={
            "strategy": strategy_name.value,
            "params": validated.model_dump(),
            "retriever": RetrieverName(retriever).value,
            "corpus_model": spec.id,
            "n": n,
            "scope": scope_value.value,
        },
        documents=len(documents),
        questions=len(questions),
        chunks=len(chunks),
        mean_chunk_tokens=float(np.mean([c.token_count for c in chunks])) if chunks else 0.0,
        per_question=per_question,
        timings={stage: round(seconds, 3) for stage, seconds in timings.items()},
    )


def _retrieve(
    settings: Settings,
    store: VectorStore,
    retriever: RetrieverName,
    spec: EmbeddingModelSpec,
    strategy: StrategyName,
    questions: Sequence[BenchmarkQuestion],
    query_vectors: np.ndarray | None,
    n: int,
    scope: Scope,
    report: ProgressCallback,
) -> list[list[ChunkRef]]:
    """Each question's top ``n`` hits through the query pipeline, retrieval only (no floor, no answer)."""
    hits: list[list[ChunkRef]] = []
    for position, question in enumerate(questions):
        plan = pipeline.make_plan(
            settings,
            question=question.question,
            scope=pipeline.Scope.document(EVAL_TENANT, question.document_id)
            if scope is Scope.DOCUMENT
            else pipeline.Scope.corpus(EVAL_TENANT),
            strategy=strategy,
            corpus=spec,
            retriever=retriever,
            top_k=n,
            neighbor_prev=0,
            neighbor_next=0,
            parent_context=False,
            answer="none",
            query_vector=None if query_vectors is None else query_vectors[position],
        )
        hits.append(
            [
                ChunkRef(hit.document_id, hit.chunk_index, hit.start_index, hit.end_index, hit.token_count)
                for hit in pipeline.run(settings, store, plan).hits
            ]
        )
        if position % 16 == 15 or position == len(questions) - 1:
            report("retrieve", position + 1, len(questions))
    return hits
