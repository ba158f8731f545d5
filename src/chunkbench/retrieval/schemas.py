"""API models of queries and the chatbot API."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from chunkbench.limits import MAX_CANDIDATE_K, MAX_NEIGHBORS, MAX_QUESTION_CHARS, MAX_TOP_K
from chunkbench.models import RetrieverName, StrategyName

# Open: dense, bm25, hybrid and any retriever a plugin registers (validated against the registry).
RetrieverField = RetrieverName
RerankField = Literal["none", "cross_encoder", "llm"]


class QueryIn(BaseModel):
    """One question against one processed document (docs/api.md); unset knobs come from Settings."""

    model_config = ConfigDict(extra="forbid")

    document_id: str
    strategy: StrategyName
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    top_k: int | None = Field(None, ge=1, le=MAX_TOP_K)
    neighbor_prev: int | None = Field(None, ge=0, le=MAX_NEIGHBORS, description="fixed_size only")
    neighbor_next: int | None = Field(None, ge=0, le=MAX_NEIGHBORS, description="fixed_size only")
    retriever: RetrieverField = RetrieverName.DENSE
    rerank: RerankField = "none"
    candidate_k: int | None = Field(None, ge=1, le=MAX_CANDIDATE_K, description="Candidates fetched for reranking")
    corpus_model_id: str | None = Field(None, description="Default: the model the document was processed with")
    score_floor: float | None = Field(None, description="Absolute floor; may return nothing (docs/retrieval.md)")


class SourceOut(BaseModel):
    """A numbered context passage the answer may cite as [Source n]."""

    number: int
    chunk_id: str
    chunk_index: int
    document_id: str
    document_name: str
    score: float | None
    role: str
    start_index: int
    end_index: int
    heading_path: list[str]
    text: str
    # Shown to the answerer above ``text`` (a table part's header rows); not part of the chunk's span.
    context_header: str | None = None
    parent_text: str | None = None
    # The prompt-injection verdict of the passage (guard/injection.py); a flagged passage was marked or left out
    # of the answer's context per ``injection_chunk_policy`` (``injection_action``: marked, dropped or passed).
    injection_risk: float = 0.0
    injection_reasons: list[str] = []
    injection_flagged: bool = False
    injection_action: Literal["none", "marked", "dropped", "passed"] = "none"


class QueryOut(BaseModel):
    """A query's answer and how it was reached.

    Chunk texts appear once, in ``sources`` (``[Source n]`` is ``sources[n - 1]``, the same chunk as
    ``retrieved_chunks[n - 1]``); ``retrieved_chunks`` hold the chunks' fields without text and each
    ``expansion_tree`` node refers to its hit and neighbours by ``chunk_id``/``chunk_index``.
    """

    id: str | None
    document_id: str | None
    strategy: StrategyName
    question: str
    answer: str
    answer_mode: str  # llm | extractive | none
    citations: list[int]
    sources: list[SourceOut]
    retrieved_chunks: list[dict[str, Any]]
    expansion_tree: list[dict[str, Any]]
    latency_breakdown: dict[str, float]
    token_usage: dict[str, int]
    config: dict[str, Any]
    created_at: datetime | None = None


class ServingConfig(BaseModel):
    """What the chatbot and RAG APIs answer from (docs/retrieval.md): set by Admin (default recursive, MiniLM, hybrid).

    The same query pipeline as ``/queries`` runs it, so reranking, Neighbor Expansion (strategies whose chunks
    are windows) and parent context (strategies with parents) apply here too.
    """

    model_config = ConfigDict(extra="forbid")

    strategy: StrategyName = StrategyName.RECURSIVE
    corpus_model_id: str = "all-MiniLM-L6-v2"
    retriever: RetrieverField = RetrieverName.HYBRID
    top_k: int = Field(5, ge=1, le=MAX_TOP_K)
    rerank: RerankField = "none"
    candidate_k: int | None = Field(
        None,
        ge=1,
        le=MAX_CANDIDATE_K,
        description="Candidates for reranking (default CHUNKBENCH_RERANK_CANDIDATE_K)",
    )
    neighbor_prev: int = Field(0, ge=0, le=MAX_NEIGHBORS, description="Neighbor Expansion: chunks before each hit")
    neighbor_next: int = Field(0, ge=0, le=MAX_NEIGHBORS, description="Neighbor Expansion: chunks after each hit")
    parent_context: bool = Field(True, description="Show each child's parent under it (strategies with parents)")
