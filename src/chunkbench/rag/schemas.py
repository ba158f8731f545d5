"""API models of the RAG service (docs/service.md: RAGRequest → RAGResponse, the query sanitised)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chunkbench.documents.discovery import SkipReason
from chunkbench.documents.ingest_results import IngestOutcome, IngestSummary
from chunkbench.limits import MAX_QUESTION_CHARS, MAX_TOP_K
from chunkbench.schemas import ErrorOut


class RAGRequest(BaseModel):
    """One question to the tenant's whole corpus. The tenant comes from the caller's credentials, never the body."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    top_k: int | None = Field(None, ge=1, le=MAX_TOP_K, description="Default: the serving configuration's top_k")
    max_tokens: int = Field(512, ge=1, le=2048, description="Bounds the answer (LLM completion or extractive)")
    session_id: str | None = Field(None, min_length=1, max_length=128, description="Cached answers stay per session")

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the query is blank")
        return value


class RAGSource(BaseModel):
    """A passage the answer was built from; its text with PII redacted."""

    number: int
    chunk_id: str
    document_id: str
    filename: str
    score: float | None
    text: str
    # The parent's text shown under this child (strategies with parents), PII redacted too.
    parent_text: str | None = None
    # Why the passage is in the context: a search hit, or a Neighbor Expansion neighbour of one.
    role: Literal["hit", "neighbor"] = "hit"
    # A passage with instructions in it (indirect prompt injection): marked or dropped in the LLM's context.
    injection_flagged: bool = False
    injection_action: Literal["none", "marked", "dropped", "passed"] = "none"


class RAGResponse(BaseModel):
    """The answer. ``query`` is the sanitised question (PII redacted), never the raw one."""

    query: str
    answer: str
    answer_mode: str = Field(description="llm | extractive | none | refused")
    sources: list[RAGSource]
    latency_ms: float
    cached: bool
    cache_hit: str | None = Field(None, description="exact | semantic when cached")
    request_id: str
    blocked: bool = Field(False, description="Refused by the prompt-injection guard (no retrieval happened)")
    pii_redacted: dict[str, int] = Field(
        default_factory=dict, description="PII entities redacted from the query, by type"
    )


class CacheStatsOut(BaseModel):
    """The caller's tenant's semantic-cache figures in this API process."""

    enabled: bool
    entries: int
    hits_exact: int
    hits_semantic: int
    misses: int
    hit_rate: float
    evictions: dict[str, int] = Field(description="lru, expired, invalidated (the corpus changed)")
    max_entries: int
    ttl_s: float
    similarity: float


class CacheClearOut(BaseModel):
    cleared: int


# The chatbot API (docs/retrieval.md): /api/index, /api/index-directory, /api/query, /api/health.


class ChatQueryIn(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    top_k: int | None = Field(None, ge=1, le=MAX_TOP_K)


class ChatSourceOut(BaseModel):
    text: str = Field(description="First 200 characters of the chunk")
    score: float | None
    source: str
    injection_flagged: bool = Field(False, description="Flagged as possible prompt injection (guard/injection.py)")


class ChatQueryOut(BaseModel):
    answer: str
    sources: list[ChatSourceOut]
    latency_ms: float


class ChatFileOut(BaseModel):
    """One file of an ``/api/index-directory`` folder: indexed, refused (failed) or skipped with its reason."""

    source_key: str
    outcome: IngestOutcome
    chunks: int | None = Field(None, description="Chunks indexed from the file (outcomes created|replaced|unchanged)")
    error: ErrorOut | None = None
    skip_reason: SkipReason | None = None


class ChatIndexOut(BaseModel):
    status: str = Field(description="success, or partial when a file was refused (skipped files are not failures)")
    chunks_created: int
    message: str
    summary: IngestSummary | None = Field(None, description="/api/index-directory: the folder's files counted")
    files: list[ChatFileOut] = Field(
        default_factory=list, description="/api/index-directory: every file under the folder, in path order"
    )


class ChatHealthOut(BaseModel):
    status: str
    documents_indexed: int = Field(description="Chunks in the serving configuration's collection")
    llm_connected: bool
    llm_configured: bool
