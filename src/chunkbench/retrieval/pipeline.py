"""The query pipeline (docs/retrieval.md): one typed plan in, one typed result out, for every face.

embed the question → search (one document, a set of documents or the tenant's whole corpus) → rerank →
Neighbor Expansion → parent context → prompt-injection guard → answer, each stage timed. ``/queries``,
``/api/query``, ``/v1/query``, the benchmark runner and ``chunkbench eval spans`` all build a
:class:`QueryPlan` and call :func:`run`; each face only renders the :class:`QueryResult` its own way.
The pipeline needs no database: whoever builds the plan has already checked what it names.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.embedding.cache import EMBEDDINGS
from chunkbench.embedding.registry import EmbeddingModelSpec
from chunkbench.errors import QueryError
from chunkbench.guard.injection import InjectionVerdict
from chunkbench.limits import MAX_CANDIDATE_K, MAX_TOP_K
from chunkbench.llm.answer import AnswerResult, generate_answer
from chunkbench.llm.client import LlmClient, get_llm_client
from chunkbench.models import RetrieverName, StrategyName
from chunkbench.retrieval.context import ChunkGuard, InjectionAction, InjectionChunkPolicy, attach_parents
from chunkbench.retrieval.expansion import ExpansionNode, apply_neighbor_expansion
from chunkbench.retrieval.rerank import RANKING_SCHEMA, CrossEncoderReranker, LlmListwiseReranker, Reranker
from chunkbench.retrieval.search import RetrievedChunk, get_retriever, retrieve
from chunkbench.storage.vectors import VectorStore

RerankKind = Literal["none", "cross_encoder", "llm"]
# auto: the LLM when one is configured, else the extractive answerer; none: retrieval only (evaluation).
AnswerPolicy = Literal["auto", "none"]


@dataclass(frozen=True)
class Scope:
    """Which of a tenant's documents a query searches: one, a set, or all of them (``document_ids`` None)."""

    tenant_id: str
    document_ids: tuple[str, ...] | None = None

    @classmethod
    def document(cls, tenant_id: str, document_id: str) -> Scope:
        return cls(tenant_id, (document_id,))

    @classmethod
    def corpus(cls, tenant_id: str) -> Scope:
        return cls(tenant_id, None)

    @property
    def single(self) -> str | None:
        """The document id when the scope is exactly one document."""
        return self.document_ids[0] if self.document_ids is not None and len(self.document_ids) == 1 else None

    @property
    def store_filter(self) -> str | tuple[str, ...] | None:
        """What the vector store filters on: one id, several, or none (the tenant's whole corpus)."""
        return self.single or self.document_ids


@dataclass(frozen=True)
class QueryPlan:
    """Everything one query does, resolved: no field is read from Settings later (see :func:`make_plan`)."""

    question: str
    scope: Scope
    strategy: StrategyName
    corpus: EmbeddingModelSpec
    retriever: RetrieverName
    top_k: int
    candidate_k: int  # hits fetched before reranking; top_k when there is no reranking
    # How deep the result's ranking goes (at least candidate_k): a benchmark asks for the reranker's candidate pool
    # to say at what rank a missed chunk came. Hits and reranking see only the first candidate_k.
    ranking_depth: int = 0
    rerank: RerankKind = "none"
    score_floor: float | None = None
    neighbor_prev: int = 0
    neighbor_next: int = 0
    parent_context: bool = True
    guard_policy: InjectionChunkPolicy = "mark"
    injection_threshold: float = 0.5
    answer: AnswerPolicy = "auto"
    max_tokens: int | None = None
    # Exhaustive search (benchmarks, evaluation: the same figures on a re-run); False: HNSW where built (serving).
    exact: bool = True
    # The question's Corpus-model vector when the caller has it already (the semantic cache, a batch embed).
    query_vector: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def tenant_id(self) -> str:
        return self.scope.tenant_id


def make_plan(
    settings: Settings,
    *,
    question: str,
    scope: Scope,
    strategy: StrategyName | str,
    corpus: EmbeddingModelSpec,
    retriever: RetrieverName | str,
    top_k: int | None = None,
    candidate_k: int | None = None,
    rerank: RerankKind = "none",
    score_floor: float | None = None,
    neighbor_prev: int | None = None,
    neighbor_next: int | None = None,
    parent_context: bool = True,
    answer: AnswerPolicy = "auto",
    max_tokens: int | None = None,
    query_vector: np.ndarray | None = None,
    exact: bool = True,
    ranking_depth: int = 0,
) -> QueryPlan:
    """A plan whose unset knobs come from ``settings`` (top_k, Neighbor Expansion, candidates, score floor, guard)."""
    top = settings.top_k if top_k is None else top_k
    candidates = max(top, candidate_k or settings.rerank_candidate_k) if rerank != "none" else top
    return QueryPlan(
        question=question,
        scope=scope,
        strategy=StrategyName(strategy),
        corpus=corpus,
        retriever=RetrieverName(retriever),
        top_k=top,
        candidate_k=candidates,
        ranking_depth=ranking_depth,
        rerank=rerank,
        score_floor=settings.score_floor if score_floor is None else score_floor,
        neighbor_prev=settings.neighbor_prev if neighbor_prev is None else neighbor_prev,
        neighbor_next=settings.neighbor_next if neighbor_next is None else neighbor_next,
        parent_context=parent_context,
        guard_policy=settings.injection_chunk_policy,
        injection_threshold=settings.injection_threshold,
        answer=answer,
        max_tokens=max_tokens,
        query_vector=query_vector,
        exact=exact,
    )


@dataclass(frozen=True)
class Source:
    """One numbered ``[Source n]`` passage of the context: a chunk, its parent when shown, its injection verdict."""

    number: int
    chunk: RetrievedChunk
    parent: RetrievedChunk | None
    parent_source: int | None  # set instead of repeating a parent already shown under an earlier source
    verdict: InjectionVerdict | None  # None when nothing is answered (retrieval only)
    action: InjectionAction

    @property
    def passage(self) -> str:
        """What the answerer reads for this source: the chunk (under its context header), then its parent's text."""
        text = self.chunk.readable_text
        return f"{text}\n\n{self.parent.text}" if self.parent is not None else text


@dataclass(frozen=True)
class QueryResult:
    """What a query found and answered, with the time of every stage."""

    plan: QueryPlan
    hits: list[RetrievedChunk]  # the ranked hits (after reranking), best first
    # The whole ranking, best first, of which the hits are the top_k: the (reranked) candidates, then the
    # retriever's order below them, down to the plan's ranking_depth.
    ranking: list[RetrievedChunk]
    context: list[RetrievedChunk]  # hits and their neighbours, in context order (document order when expanded)
    tree: list[ExpansionNode]  # one node per hit, rank order
    sources: list[Source]  # one per context chunk, numbered 1..
    answer: AnswerResult | None  # None for answer="none"
    query_vector: np.ndarray | None
    latency_ms: dict[str, float]

    @property
    def neighbours(self) -> list[RetrievedChunk]:
        return [chunk for chunk in self.context if chunk.role != "hit"]

    @property
    def context_tokens(self) -> int:
        return sum(chunk.token_count for chunk in self.context)

    def token_usage(self) -> dict[str, int]:
        prompt = self.answer.prompt_tokens if self.answer else 0
        completion = self.answer.completion_tokens if self.answer else 0
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "context_tokens": self.context_tokens,
        }


class Stopwatch:
    """Milliseconds per pipeline stage."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._started = time.perf_counter()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.ms[name] = round(self.ms.get(name, 0.0) + (time.perf_counter() - started) * 1000, 2)

    def total(self) -> dict[str, float]:
        return {**self.ms, "total": round((time.perf_counter() - self._started) * 1000, 2)}


def run(settings: Settings, store: VectorStore, plan: QueryPlan) -> QueryResult:
    """Run ``plan``: search → rerank → Neighbor Expansion → parents → guard → answer (see the module docstring)."""
    _check(plan)
    clock = Stopwatch()
    vector = plan.query_vector
    if vector is None and get_retriever(plan.retriever).needs_query_vector:
        with clock.stage("embed"):
            vector = roles.embed_query(plan.corpus, plan.question, settings)
    with clock.stage("search"):
        ranking = retrieve(
            store, settings, strategy=plan.strategy, corpus_spec=plan.corpus, retriever=plan.retriever,
            question=plan.question, query_vector=vector, tenant_id=plan.tenant_id,
            document_id=plan.scope.store_filter, limit=plan.candidate_k, score_floor=plan.score_floor, exact=plan.exact,
            depth=plan.ranking_depth,
        )  # fmt: skip
    client = get_llm_client(settings) if plan.answer == "auto" or plan.rerank == "llm" else None
    candidates, below = ranking[: plan.candidate_k], ranking[plan.candidate_k :]
    if plan.rerank != "none" and candidates:
        with clock.stage("rerank"):
            # The whole pool in the reranker's order (its top_k are what it would return), then the rest.
            ranking = reranker(plan.rerank, settings, client).rerank(plan.question, candidates, len(candidates)) + below
    hits = ranking[: plan.top_k]
    with clock.stage("expand"):
        context, tree = apply_neighbor_expansion(
            store, hits, strategy=plan.strategy.value, model_id=plan.corpus.id, tenant_id=plan.tenant_id,
            document_id=plan.scope.single, neighbor_prev=plan.neighbor_prev, neighbor_next=plan.neighbor_next,
        )  # fmt: skip
        blocks = attach_parents(
            store, context, strategy=plan.strategy.value, model_id=plan.corpus.id, tenant_id=plan.tenant_id,
            document_id=plan.scope.single, with_parents=plan.parent_context,
        )  # fmt: skip
    if plan.answer == "none":
        sources = [Source(b.source, b.chunk, b.parent, b.parent_source, None, "none") for b in blocks]
        return QueryResult(plan, hits, ranking, context, tree, sources, None, vector, clock.total())
    for_llm = client is not None
    guard = ChunkGuard.build(plan.guard_policy, plan.injection_threshold)
    sources = []
    verdicts: list[InjectionVerdict] = []  # each source's, never None here (Source.verdict may be)
    for block in blocks:
        verdict = guard.block_verdict(block)
        verdicts.append(verdict)
        sources.append(
            Source(block.source, block.chunk, block.parent, block.parent_source, verdict,
                   guard.action(verdict, for_llm=for_llm))
        )  # fmt: skip
    with clock.stage("generate"):
        answer = generate_answer(
            plan.question,
            guard.passages([(s.number, s.passage) for s in sources], verdicts, for_llm=for_llm),
            client=client,
            embed=corpus_embedder(plan.corpus, settings, plan.question, vector),
            max_tokens=plan.max_tokens,
        )
    return QueryResult(plan, hits, ranking, context, tree, sources, answer, vector, clock.total())


def _check(plan: QueryPlan) -> None:
    """Bounds every face shares (the API schemas enforce them too, for a 422 at the edge)."""
    # An answerer reads at most MAX_TOP_K hits; a retrieval-only evaluation may rank as deep as the candidates go.
    deepest = MAX_TOP_K if plan.answer != "none" else MAX_CANDIDATE_K
    if not 1 <= plan.top_k <= deepest:
        raise QueryError(f"top_k must be between 1 and {deepest}; got {plan.top_k}.")
    if not plan.top_k <= plan.candidate_k <= MAX_CANDIDATE_K:
        raise QueryError(
            f"candidate_k must be between top_k ({plan.top_k}) and {MAX_CANDIDATE_K}; got {plan.candidate_k}."
        )
    if not 0 <= plan.ranking_depth <= MAX_CANDIDATE_K:
        raise QueryError(f"The ranking depth must be between 0 and {MAX_CANDIDATE_K}; got {plan.ranking_depth}.")
    if plan.neighbor_prev < 0 or plan.neighbor_next < 0:
        raise QueryError("Neighbor Expansion levels cannot be negative.")
    if plan.scope.document_ids is not None and not plan.scope.document_ids:
        raise QueryError("The query's scope names no document: give at least one, or search the whole corpus.")


def reranker(kind: RerankKind, settings: Settings, client: LlmClient | None) -> Reranker:
    """The reranker a plan names; a missing model or LLM is a QueryError saying what to configure."""
    if kind == "cross_encoder":
        if not settings.cross_encoder_model:
            raise QueryError(
                "Cross-encoder reranking needs a model: set CHUNKBENCH_CROSS_ENCODER_MODEL to a sentence-transformers "
                "CrossEncoder folder (e.g. a downloaded cross-encoder/ms-marco-MiniLM-L-6-v2)."
            )
        return CrossEncoderReranker(settings.cross_encoder_model, settings)
    if client is None:
        raise QueryError("LLM reranking needs an LLM: set CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL.")
    return LlmListwiseReranker(
        lambda messages, *, max_tokens, response_format=None: (
            client.chat(
                messages, max_tokens=max_tokens, response_format=response_format, json_schema=RANKING_SCHEMA
            ).text
        )
    )


def corpus_embedder(
    corpus: EmbeddingModelSpec, settings: Settings, question: str, query_vector: np.ndarray | None
) -> Callable[[list[str]], np.ndarray]:
    """The Corpus model as the extractive answerer's sentence embedder: context sentences are cached
    across queries, and the question reuses the vector the search already computed."""
    known = {question.strip(): query_vector} if query_vector is not None else None
    return lambda texts: EMBEDDINGS.embed(corpus, texts, "document", settings, known)
