"""API models of processing, strategies and the chunk preview."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from chunkbench.chunking.base import default_strategies
from chunkbench.models import StrategyName
from chunkbench.schemas import JobAccepted


class ProcessIn(BaseModel):
    """Which strategies to run, with which models and parameters (docs/strategies.md)."""

    model_config = ConfigDict(extra="forbid")

    strategies: list[StrategyName] = Field(
        default_factory=default_strategies, description="Default: all but the variants", min_length=1
    )
    corpus_model_id: str | None = Field(None, description="Embeds the chunks; default: the Admin Corpus role")
    boundary_model_id: str | None = Field(None, description="Finds semantic cuts; default: the Admin Boundary role")
    params: dict[StrategyName, dict[str, Any]] = Field(
        default_factory=dict, description='Per-strategy parameters, e.g. {"fixed_size": {"chunk_size": 256}}'
    )
    allow_language_mismatch: bool = Field(
        False,
        description="Process a document in a language its Corpus or Boundary model does not cover (else a 400 naming "
        "a model that does); every run then records the warning",
    )


class LanguageWarningOut(BaseModel):
    """A model that does not cover the language of documents it embedded: its results there are not meaningful."""

    kind: Literal["language_not_covered"] = "language_not_covered"
    role: str = Field(description="corpus or boundary")
    model_id: str
    language: str = Field(description="The documents' detected language (ISO 639-1 where one exists)")
    documents: list[str] = Field(description="The documents concerned (source keys)")
    covering_models: list[str] = Field(description="Registered models that do cover the language")
    message: str
    # The documents' share of what was processed with them (1 document of 1 when processed alone).
    total_documents: int = 1
    documents_share: float = 1.0
    text_share: float | None = Field(None, description="Share of the processed text's characters, 0–1")
    standing: Literal["accepted", "minority", "unsure"] | None = Field(
        None,
        description="Why the model was kept: accepted with allow_language_mismatch, a minority of the text, or "
        "a detection too unsure (the language rule)",
    )


class SizeWarningOut(BaseModel):
    """A size parameter larger than what the Corpus model reads whole: processed as asked, embedded from the start."""

    kind: Literal["beyond_window"] = "beyond_window"
    strategy: str
    param: str = Field(description="The size parameter, e.g. chunk_size")
    value: int = Field(description="Its value in this request (given, or a default)")
    readable: int = Field(description="The largest value whose chunks the model reads whole (cl100k tokens)")
    model_id: str
    window_tokens: int | None = Field(None, description="The model's input window in its own tokens")
    message: str


class StrategyOutcome(BaseModel):
    strategy: StrategyName
    status: str  # completed | failed
    chunk_count: int = 0
    collection: str | None = None
    params: dict[str, Any] = {}
    details: dict[str, Any] = {}
    diagnostics: dict[str, Any] = {}
    error: str | None = None
    message: str | None = None
    duration_ms: int = 0


class ProcessOut(BaseModel):
    document_id: str
    status: str
    corpus_model_id: str
    boundary_model_id: str | None
    completed: list[StrategyOutcome]
    failed: list[StrategyOutcome]
    chunk_counts: dict[str, int]
    # The document's detected language; why a model replaced an untouched default (the multilingual model for a
    # language the default does not cover); what its models cannot read (accepted with allow_language_mismatch).
    language: str | None = None
    notes: list[str] = []
    warnings: list[LanguageWarningOut] = []
    # Sizes beyond what the Corpus model reads whole (told before processing too: the 202 body, the CLI).
    size_warnings: list[SizeWarningOut] = []


class ProcessAccepted(JobAccepted):
    """A processing job accepted (202), with what the plan found before any work: sizes beyond the model's window."""

    size_warnings: list[SizeWarningOut] = Field(default_factory=list)


class StrategyInfo(BaseModel):
    name: StrategyName
    description: str
    needs_boundary_model: bool
    # Capabilities (ChunkingStrategy): what the query pipeline does with this strategy's chunks.
    expands_neighbours: bool = False
    has_parents: bool = False
    params_schema: dict[str, Any]
    # A variant (chunking/variants.py): the strategy it derives from and the parameters it pins.
    variant_of: str | None = None
    pinned_params: dict[str, Any] = {}
    # Whether "all strategies" (processing's default) runs it: chunkbench's own do, variants and library ones do not.
    in_default_set: bool = True
    # A library's strategy (chunking/library_strategies.py): the distribution, its installed version (None: not
    # installed, the strategy answers 400 naming ``install``), whether it can run here.
    library: str | None = None
    library_version: str | None = None
    available: bool = True
    install: str | None = None
    # For ``corpus_model_id`` (``GET /strategies?corpus_model=…``, else the Admin Corpus role): each size parameter's
    # default on that model (the schema's default applies to the others) and the largest value it reads whole.
    corpus_model_id: str | None = None
    size_defaults: dict[str, int] = {}
    readable_sizes: dict[str, int] = {}


class StrategyRunOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    strategy_name: str
    status: str = Field(description="completed (its points are indexed) | failed | not_indexed (points removed)")
    params: dict[str, Any]
    details: dict[str, Any]
    corpus_model_id: str
    boundary_model_id: str | None
    collection: str | None
    chunk_count: int
    diagnostics: dict[str, Any]
    error_message: str | None
    duration_ms: int
    created_at: datetime


class ChunkOut(BaseModel):
    chunk_id: str
    chunk_index: int
    start_index: int
    end_index: int
    token_count: int
    character_count: int
    heading_path: list[str]
    parent_id: str | None = None
    is_parent: bool = False
    text: str
    # The prompt-injection verdict taken at processing time (None: indexed before the guard existed).
    injection_risk: float | None = None
    injection_reasons: list[str] = []
    # The chunk's length in the Corpus model's own tokens, and whether it passes the model's input window (the
    # model embeds only the first window); None when the model's window is unknown. Parents are not embedded.
    model_tokens: int | None = None
    beyond_window: bool | None = None
    # What contextual retrieval embedded before the text (the chunk is embedded, and BM25-indexed, as the prefix,
    # a blank line, then ``text``), and its length in cl100k tokens; None for a chunk embedded as its text alone.
    context_prefix: str | None = None
    prefix_tokens: int | None = None


class ChunkPreviewOut(BaseModel):
    document_id: str
    strategy: StrategyName
    corpus_model_id: str
    collection: str
    run: StrategyRunOut | None
    diagnostics: dict[str, Any]
    # The Corpus model's input window in its tokens (None: unknown) and how the chunks were counted.
    window_tokens: int | None = None
    # The document's detected language, and the models shown here that do not cover it.
    language: str | None = None
    warnings: list[LanguageWarningOut] = []
    # How the run wrote its context prefixes ("llm" or "deterministic"; None: a strategy without prefixes).
    prefix_mode: str | None = None
    # The chunks listed: every one of the document's, or those overlapping [start, end) when a range was asked for.
    total: int
    start: int | None = None
    end: int | None = None
    offset: int
    limit: int
    chunks: list[ChunkOut]


class ChunkSizesRunOut(BaseModel):
    """The token sizes of one indexed run's searchable chunks, on the bins of :class:`ChunkSizesOut`."""

    strategy: StrategyName
    corpus_model_id: str
    chunk_count: int  # searchable chunks in the index now (0: the collection was wiped or deleted)
    parent_count: int  # parents (semantic_parent_child): context only, not embedded, not counted in ``counts``
    counts: list[int]  # chunks per bin


class ChunkSizesOut(BaseModel):
    """A token-size histogram per indexed run of a document (the newest completed run of each strategy × Corpus
    model), all on the same bins: bin ``i`` holds chunks of ``[i × bin_tokens, (i + 1) × bin_tokens)`` tokens."""

    document_id: str
    bin_tokens: int
    bins: int
    tiny_threshold_tokens: int
    runs: list[ChunkSizesRunOut]


class CorpusDocumentOutcome(BaseModel):
    """What a corpus job did to one document with one strategy."""

    document_id: str
    filename: str | None = None
    status: Literal["processed", "skipped", "failed"]
    chunk_count: int = 0  # processed: chunks indexed now; skipped: those of the current run
    error: str | None = None
    message: str | None = None


class CorpusStrategyOut(BaseModel):
    strategy: StrategyName
    processed: int
    skipped: int
    failed: int
    chunks: int  # indexed by this job
    duration_ms: int
    timings: dict[str, float]  # seconds per stage: chunk, embed, index
    documents: list[CorpusDocumentOutcome]


class CorpusProcessOut(BaseModel):
    corpus_id: str
    corpus_name: str
    corpus_model_id: str
    boundary_model_id: str | None
    documents: int
    # Documents with a failed strategy; with none failed and one processed; with every strategy skipped.
    failed: int
    processed: int
    skipped: int
    chunks: int  # indexed by this job, every strategy
    duration_ms: int
    timings: dict[str, float]  # seconds per stage, every strategy
    strategies: list[CorpusStrategyOut]
    # As for one document (ProcessOut), for the corpus as a whole: one Corpus model covering every member.
    notes: list[str] = []
    warnings: list[LanguageWarningOut] = []
    size_warnings: list[SizeWarningOut] = []
