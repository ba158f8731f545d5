"""One benchmark cell: a question asked of one Configuration through the query pipeline, then graded."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select

from chunkbench.benchmarking import scoring
from chunkbench.benchmarking.model import CellChunk, CellResult, CellTokens, Configuration, MetricValue
from chunkbench.chunking.base import capabilities
from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.embedding.registry import EmbeddingModelSpec
from chunkbench.errors import BenchmarkError, ChunkbenchError, DocumentNotFoundError, LlmUnavailableError
from chunkbench.evaluation.judge import judge
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.llm.client import LlmClient
from chunkbench.retrieval import pipeline
from chunkbench.retrieval.pipeline import QueryResult, Scope
from chunkbench.storage.db import Database
from chunkbench.storage.repositories import QueryRepository
from chunkbench.storage.schema import DocumentRow
from chunkbench.storage.vectors import VectorStore
from chunkbench.text.tokens import get_tokenizer


@dataclass
class CellContext:
    """What every cell of one run shares."""

    database: Database
    settings: Settings
    store: VectorStore
    tenant_id: str
    # Every document the Experiment searches (one for a one-document Experiment).
    document_ids: tuple[str, ...]
    # The grid's Corpus models by id; a configuration without one uses the first (``corpus_model_id``).
    corpora: dict[str, EmbeddingModelSpec]
    corpus_model_id: str
    judge_client: LlmClient | None
    judge_repeats: int
    # Per (strategy, Corpus model): the chunking of every document, on one axis.
    chunkings: dict[tuple[str, str], scoring.Chunking]
    # Per Corpus model, each question's expected answer, embedded once for the run.
    expected_vectors: dict[str, dict[str, np.ndarray]]
    # "document": a question searches only its own documents (``BenchmarkConfig.scope``).
    scope: str = "corpus"
    # False: retrieval only (``BenchmarkConfig.answer_mode`` "none"), no answer is made or graded.
    answers: bool = True

    def corpus(self, configuration: Configuration) -> EmbeddingModelSpec:
        return self.corpora[configuration.corpus_model or self.corpus_model_id]

    @property
    def spans_documents(self) -> bool:
        return len(self.document_ids) > 1


def run_cell(
    context: CellContext, configuration: Configuration, question: BenchmarkQuestion, stop: threading.Event
) -> CellResult:
    """Ask one question of one configuration, grade it; a domain error becomes a failed cell."""
    if stop.is_set():
        raise BenchmarkError("The run was stopped.")
    try:
        _check_documents(context)
        plan = pipeline.make_plan(
            context.settings,
            question=question.question,
            # The Experiment's documents (or the question's own), never the tenant's others.
            scope=Scope(context.tenant_id, _searched(context, question)),
            strategy=configuration.strategy,
            corpus=context.corpus(configuration),
            retriever=configuration.retriever,
            top_k=configuration.top_k,
            rerank=configuration.rerank,
            neighbor_prev=configuration.neighbor_prev,
            neighbor_next=configuration.neighbor_next,
            answer="auto" if context.answers else "none",
            # Ranked as deep as a reranker's candidates, to say where evidence the hits missed came.
            ranking_depth=context.settings.rerank_candidate_k,
        )
        return _grade(context, configuration, question, pipeline.run(context.settings, context.store, plan))
    except LlmUnavailableError:
        raise
    except ChunkbenchError as exc:
        return CellResult.failed(question.id, configuration.key, exc.message)


def _searched(context: CellContext, question: BenchmarkQuestion) -> tuple[str, ...]:
    """The documents a question's retrieval searches: the Experiment's, or with scope "document" the question's
    own (its document and its references' documents)."""
    if context.scope != "document" or not context.spans_documents:
        return context.document_ids
    own = {question.document_id, *(reference.document for reference in question.references)} - {None}
    return tuple(d for d in context.document_ids if d in own) or context.document_ids


def _check_documents(context: CellContext) -> None:
    """A document deleted mid-run makes the cell fail, not answer from fewer documents."""
    with context.database.engine.connect() as connection:
        if not context.spans_documents:
            QueryRepository(connection, context.tenant_id).query_target(context.document_ids[0])
            return
        present = set(
            connection.scalars(
                select(DocumentRow.id).where(
                    DocumentRow.tenant_id == context.tenant_id, DocumentRow.id.in_(context.document_ids)
                )
            )
        )
    if missing := [d for d in context.document_ids if d not in present]:
        raise DocumentNotFoundError(
            f"{len(missing)} document(s) of this Experiment were deleted during the run "
            f"({', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}): its figures would mix two corpora. "
            "Start a new benchmark.",
            document_ids=missing,
        )


def _grade(
    context: CellContext, configuration: Configuration, question: BenchmarkQuestion, result: QueryResult
) -> CellResult:
    sole = context.document_ids[0]
    evidence = [(r.document or sole, *r.span) for r in question.references]
    answer = result.answer  # None for a retrieval-only benchmark
    corpus = context.corpus(configuration)
    # Stored: the hits by rank, then the Neighbor Expansion neighbours in context order.
    retrieved = tuple(
        CellChunk(
            chunk_index=chunk.chunk_index, start_index=chunk.start_index, end_index=chunk.end_index,
            role=chunk.role, score=_rounded(chunk.score), tokens=chunk.token_count,
            document_id=chunk.document_id if context.spans_documents else None, prefix=chunk.prefix,
        )
        for chunk in (*result.hits, *result.neighbours)
    )  # fmt: skip
    passages = [source.passage for source in result.sources]
    chunking = context.chunkings[(configuration.strategy.value, corpus.id)]
    metrics: dict[str, MetricValue] = scoring.retrieval_metrics(
        evidence, retrieved, chunking, top_k=configuration.top_k
    )
    ranks = scoring.evidence_ranks(
        evidence, [(chunk.document_id, chunk.chunk_index) for chunk in result.ranking], chunking,
        depth=max(result.plan.candidate_k, result.plan.ranking_depth),
    )  # fmt: skip
    # tok@k: the tokens of the context the answerer actually receives (parents included).
    context_tokens = sum(get_tokenizer().count_many(passages)) if passages else 0
    metrics["tok_at_k"] = context_tokens
    expected = question.expected_answer if answer is not None else None
    vectors = None
    if expected and answer is not None:  # expected is None without an answer
        answer_vector = roles.embed_texts(corpus, [answer.text], "query", context.settings)[0]
        vectors = np.stack([answer_vector, context.expected_vectors[corpus.id][question.id]])
    metrics.update(scoring.answer_scores(answer.text if answer is not None else "", expected, vectors))
    verdict = None
    latency = dict(result.latency_ms)
    prompt_tokens, completion_tokens = (answer.prompt_tokens, answer.completion_tokens) if answer else (0, 0)
    if context.judge_client is not None and answer is not None:
        started = time.perf_counter()
        verdict = judge(
            context.judge_client,
            question=question.question,
            expected_answer=expected or "",
            answer=answer.text,
            contexts=passages,
            repeats=context.judge_repeats,
        )
        latency["judge"] = round((time.perf_counter() - started) * 1000, 2)
        prompt_tokens += verdict.prompt_tokens
        completion_tokens += verdict.completion_tokens
    metrics.update(scoring.judge_scores(verdict))
    tree = (
        [_tree_node(node.to_dict(), with_document=context.spans_documents) for node in result.tree]
        if capabilities(configuration.strategy).expands_neighbours
        else None
    )
    return CellResult(
        question_id=question.id,
        config_key=configuration.key,
        status="ok",
        answer=answer.text if answer is not None else None,
        answer_mode=answer.mode if answer is not None else "none",
        citations=tuple(answer.citations) if answer is not None else (),
        retrieved=retrieved,
        expansion_tree=tree,
        metrics=metrics,
        judge=verdict.to_dict() if verdict is not None else None,
        latency_ms=latency,
        tokens=CellTokens(prompt=prompt_tokens, completion=completion_tokens, context=context_tokens),
        evidence=ranks,
    )


def _rounded(score: float | None) -> float | None:
    # Scores to 6 places: CPU embeddings vary in the last bits between runs; the figures must not.
    return None if score is None else round(score, 6)


def _tree_node(node: dict[str, Any], *, with_document: bool) -> dict[str, Any]:
    """An Expansion Tree node as a cell keeps it: positions, text and rounded score of the hit and its neighbours,
    a hit's rank (a hit listed under another is a reference: no text), and the document when there are several."""
    keys = ("chunk_index", "role", "start_index", "end_index", "text")
    compact: dict[str, Any] = {key: node[key] for key in keys if key in node}
    compact["score"] = _rounded(node["score"])
    if "rank" in node:
        compact["rank"] = node["rank"]
    if with_document:
        compact["document_id"] = node["document_id"]
    for side in ("neighbors_prev", "neighbors_next"):
        if side in node:
            compact[side] = [_tree_node(neighbour, with_document=with_document) for neighbour in node[side]]
    return compact
