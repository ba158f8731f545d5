"""API models of benchmarks and Experiments (docs/benchmarks.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from chunkbench.benchmarking.model import CellTokens, MetricValue
from chunkbench.limits import MAX_NEIGHBORS, MAX_QUESTION_CHARS, MAX_TOP_K
from chunkbench.models import RetrieverName, StrategyName
from chunkbench.retrieval.schemas import RerankField, RetrieverField

# The metrics a Decision can rank on, and whether a higher value is better.
METRIC_DIRECTIONS: dict[str, bool] = {
    "recall": True,
    "precision": True,
    "precision_omega": True,
    "iou": True,
    "recall_at_k": True,
    "hit_at_k": True,
    "mrr": True,
    "ndcg_at_k": True,
    "tok_at_k": False,
    "exact_match": True,
    "token_f1": True,
    "answer_similarity": True,
    "judge_context_relevance": True,
    "judge_answer_similarity": True,
    "judge_faithfulness": True,
    "judge_hallucination": False,
}
MetricField = Literal[
    "recall", "precision", "precision_omega", "iou", "recall_at_k", "hit_at_k", "mrr", "ndcg_at_k", "tok_at_k",
    "exact_match", "token_f1", "answer_similarity", "judge_context_relevance", "judge_answer_similarity",
    "judge_faithfulness", "judge_hallucination",
]  # fmt: skip


class ReferenceIn(BaseModel):
    """Evidence for a question: a span with offsets in the document's text, or a snippet we locate."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1)
    start_index: int | None = Field(None, ge=0)
    end_index: int | None = Field(None, ge=0)
    document: str | None = None

    @model_validator(mode="after")
    def _both_offsets_or_none(self) -> ReferenceIn:
        if (self.start_index is None) != (self.end_index is None):
            raise ValueError("give both start_index and end_index, or neither (the snippet is then located)")
        if self.start_index is not None and self.end_index is not None and self.end_index <= self.start_index:
            raise ValueError("end_index must be greater than start_index")
        return self


class QuestionIn(BaseModel):
    """A benchmark question (docs/benchmarks.md) with optional evidence."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    expected_answer: str | None = None
    category: str | None = None
    difficulty: str | None = None
    document_id: str | None = Field(
        None, description="The question's document: an id, source key, filename or filename stem"
    )
    references: list[ReferenceIn] = Field(default_factory=list)

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value


class PruneIn(BaseModel):
    """Successive halving for large grids (``pruning.py``): score every configuration on a seeded share of the
    questions, stop those ruled out with family-wise confidence, continue the rest on ``eta`` times more."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    first_share: float = Field(0.25, gt=0, lt=1, description="Share of the questions of the first rung (at least 10)")
    eta: int = Field(3, ge=2, le=4, description="How much the question subset grows each rung")
    confidence: float = Field(
        0.99, ge=0.8, lt=1, description="Family-wise confidence of every 'ruled out' of the run, all rungs together"
    )
    margin: float = Field(0.0, ge=0, description="Stop only configurations worse than the leader by more than this")
    min_configurations: int = Field(
        30, ge=3, description="Pruning refuses grids smaller than this (a 400): small grids are cheap to run whole"
    )
    correction: Literal["holm", "bonferroni"] = Field(
        "holm", description="How each rung's comparisons share its error: Holm's step-down or plain Bonferroni"
    )
    seed: int | None = Field(None, description="Seed of the question subsets; default: the benchmark's seed")


def _no_rerank() -> list[RerankField]:
    """The default rerank axis (a lambda's list would be inferred as list[str], not the Literal)."""
    return ["none"]


class BenchmarkIn(BaseModel):
    """What to benchmark: one document or a corpus, its questions, and the configuration grid to compare."""

    model_config = ConfigDict(extra="forbid")

    document_id: str | None = Field(None, description="One document (or give corpus)")
    corpus: str | None = Field(None, description="A corpus by name or id: retrieval searches all its documents")
    name: str | None = Field(None, max_length=200)
    questions: list[QuestionIn] | None = Field(None, description="Inline questions (or give question_set)")
    question_set: str | None = Field(None, description="A question file by name (GET /admin/questions lists them)")
    strategies: list[StrategyName] | None = Field(
        None, description="Default: every strategy the document has been processed with"
    )
    retrievers: list[RetrieverField] = Field(default_factory=lambda: [RetrieverName.DENSE], min_length=1)
    top_k: list[int] = Field(default_factory=lambda: [5], min_length=1, description="One configuration per value")
    neighbor_prev: int = Field(
        0, ge=0, le=MAX_NEIGHBORS, description="Neighbor Expansion before each hit (fixed_size only)"
    )
    neighbor_next: int = Field(
        0, ge=0, le=MAX_NEIGHBORS, description="Neighbor Expansion after each hit (fixed_size only)"
    )
    rerank: list[RerankField] = Field(default_factory=_no_rerank, min_length=1)
    corpus_model_id: str | None = Field(None, description="The one Corpus model (or give corpus_models)")
    corpus_models: list[str] | None = Field(
        None,
        min_length=1,
        description="The grid's Corpus-model axis; default: corpus_model_id, else the documents' last Corpus model",
    )
    judge: bool | None = Field(None, description="LLM-as-judge; default: on when an LLM is configured")
    answers: bool = Field(
        True, description="Answer every cell; false: retrieval only (faster; no answer metrics, no judge)"
    )
    judge_repeats: int = Field(1, ge=1, le=10)
    primary_metric: MetricField | None = Field(
        None, description="What the Decision ranks on; default: recall with evidence, else answer similarity"
    )
    concurrency: int | None = Field(
        None,
        ge=1,
        le=64,
        description="Cells in flight at once; default CHUNKBENCH_BENCHMARK_CONCURRENCY with an LLM, else 1",
    )
    seed: int = 0
    budget: int | None = Field(
        None, ge=1, description="Context tokens of the budget-matched comparison; default: the smallest median tok@k"
    )
    scope: Literal["corpus", "document"] = Field(
        "corpus",
        description="Where each question's chunks are searched: every document (corpus) or its own (document)",
    )
    prune: PruneIn | None = Field(None, description="Successive halving for grids of 30+ configurations; default off")
    dry_run: bool = False

    @field_validator("top_k")
    @classmethod
    def _top_k_range(cls, value: list[int]) -> list[int]:
        if any(not 1 <= k <= MAX_TOP_K for k in value):
            raise ValueError(f"every top_k must be between 1 and {MAX_TOP_K}")
        return list(dict.fromkeys(value))

    @field_validator("corpus_models")
    @classmethod
    def _unique_models(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else list(dict.fromkeys(value))

    @model_validator(mode="after")
    def _one_question_source(self) -> BenchmarkIn:
        if (self.document_id is None) == (self.corpus is None):
            raise ValueError("give either 'document_id' (one document) or 'corpus' (a corpus name or id), not both")
        if not self.answers and self.judge:
            raise ValueError("the judge grades answers: give 'answers' true, or 'judge' false")
        if self.corpus_model_id is not None and self.corpus_models is not None:
            raise ValueError("give either 'corpus_model_id' (one model) or 'corpus_models' (the axis), not both")
        if (self.questions is None) == (self.question_set is None):
            raise ValueError("give either 'questions' (inline) or 'question_set' (a file name), not both or neither")
        if self.questions is not None and not self.questions:
            raise ValueError("'questions' is empty")
        return self


class CostEstimateOut(BaseModel):
    """What a benchmark would run and cost before it runs (docs/benchmarks.md); USD None = price unknown."""

    configurations: int
    questions: int
    cells: int
    llm_calls: int
    items: list[dict[str, Any]] = Field(description="embedding, answers, judge: model, calls, tokens, USD")
    total_usd: float | None
    known_usd: float
    prices_as_of: str
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class ExperimentSummary(BaseModel):
    """A row of the Experiments list (what the Decision Board filters on)."""

    id: str
    name: str | None
    status: str
    document_id: str | None = Field(description="A one-document Experiment's document; None for a corpus one")
    document_name: str | None = None
    corpus_id: str | None = Field(None, description="A corpus Experiment's corpus (None once the corpus is deleted)")
    corpus_name: str | None = None
    documents: int = Field(1, description="How many documents retrieval searched")
    corpus_models: list[str] = Field(default_factory=list, description="The grid's Corpus models")
    strategies: list[str]
    retrievers: list[str]
    corpus_model_id: str | None
    boundary_model_id: str | None
    neighbor_prev: int
    neighbor_next: int
    questions: int
    cells_done: int
    cells_total: int
    primary_metric: str | None
    best: str | None
    decision_status: str | None
    created_at: datetime
    finished_at: datetime | None


class CompareOut(BaseModel):
    """Two Experiments side by side: per configuration key, the means of every metric in each."""

    a: ExperimentSummary
    b: ExperimentSummary
    metrics: list[str]
    rows: list[dict[str, Any]]
    warnings: list[str]


# --------------------------------------------------------------------------- an Experiment (GET /benchmarks/{id})
# The JSON of ``service.experiment_dict``, field for field: ``model.Experiment`` and ``model.CellResult`` as
# their ``to_dict`` writes them; the core's dataclasses whose JSON is just their fields serve as they are. Routes
# answer with ``response_model_exclude_unset``, so a field a stored Experiment or cell does not have (a failed
# cell's answer, a scores-view cell's retrieved chunks) stays absent, as it is in the stored JSON.


class ExperimentDocumentOut(BaseModel):
    id: str | None = Field(description="None for a corpus Experiment (see corpus)")
    filename: str | None = Field(description="None when the document was deleted since")
    tokens: int | None


class ExperimentCorpusDocumentOut(BaseModel):
    id: str
    source_key: str | None
    filename: str | None = Field(description="None when the document was deleted since")


class ExperimentCorpusOut(BaseModel):
    """A corpus Experiment's corpus and the documents retrieval searched."""

    id: str | None = Field(description="None when the corpus was deleted since")
    name: str | None
    documents: list[ExperimentCorpusDocumentOut]


class ConfigurationOut(BaseModel):
    """``model.Configuration``: one column of the benchmark."""

    key: str = Field(description="e.g. fixed_size/hybrid/k5/n1-1/rerank-llm")
    strategy: str
    retriever: str
    top_k: int
    neighbor_prev: int
    neighbor_next: int
    rerank: str
    corpus_model: str | None = Field(None, description="Set when the Experiment compares Corpus models")


class ExperimentReferenceOut(BaseModel):
    """Evidence placed in a document: the offsets and the text they select."""

    start_index: int
    end_index: int
    content: str
    document_id: str | None = Field(None, description="Set when the Experiment spans several documents")


class ExperimentQuestionOut(BaseModel):
    """A ``BenchmarkQuestion`` as an Experiment stores it (``model.question_to_json``)."""

    id: str
    question: str
    expected_answer: str | None
    category: str | None
    difficulty: str | None
    document_id: str | None = Field(None, description="Set when the Experiment spans several documents")
    references: list[ExperimentReferenceOut]


class RetrievedChunkOut(BaseModel):
    """``model.RetrievedChunk``: a hit or a Neighbor Expansion neighbour of a cell's context."""

    chunk_index: int
    start_index: int
    end_index: int
    role: str | None
    score: float | None
    tokens: int
    document_id: str | None = Field(None, description="Set when the Experiment spans several documents")
    prefix: str | None = Field(None, description="contextual_retrieval: the prefix the chunk was embedded behind")


class BenchmarkConfigOut(BaseModel):
    """``model.BenchmarkConfig``: the grid's axes, answering, grading and running."""

    strategies: list[str]
    retrievers: list[str]
    top_k: list[int]
    neighbor_prev: int
    neighbor_next: int
    rerank: list[str]
    corpus_model_id: str | None
    answer_mode: str | None
    judge: bool
    judge_repeats: int
    primary_metric: str | None
    question_set: str | None
    concurrency: int | None
    seed: int
    corpus_models: list[str] | None = Field(None, description="The Corpus models compared (two or more)")
    prune: dict[str, Any] | None = Field(None, description="The pruning options of a pruned run (``PruneIn``)")


class EvidenceChunkOut(BaseModel):
    """``model.EvidenceChunk``: a chunk that overlaps the question's evidence, and its rank."""

    chunk_index: int
    start_index: int
    end_index: int
    rank: int | None = Field(description="1-based in the cell's whole ranking; null: below its depth or not ranked")
    references: list[int] = Field(description="The question's references (0-based) this chunk overlaps")
    document_id: str | None = Field(None, description="Set when the Experiment spans several documents")


class EvidenceRanksOut(BaseModel):
    """``model.EvidenceRanks``: where a cell's evidence lies and where the ranking put it."""

    depth: int = Field(description="How deep the ranking was asked for (the reranker's candidate pool)")
    ranked: int = Field(description="How many chunks the ranking held (BM25 ranks only chunks sharing a term)")
    chunks: list[EvidenceChunkOut]


class OkCellOut(BaseModel):
    """``model.CellResult`` of a cell that ran; the scores view keeps ids, status, error, metrics, latency, tokens."""

    question_id: str
    config_key: str
    status: Literal["ok"]
    error: str | None = None
    answer: str | None = None
    answer_mode: str | None = None
    citations: list[int] = Field(default_factory=list)
    retrieved: list[RetrievedChunkOut] = Field(default_factory=list)
    expansion_tree: list[dict[str, Any]] | None = Field(None, description="fixed_size: hits with their neighbours")
    metrics: dict[str, MetricValue] = Field(default_factory=dict)
    judge: dict[str, Any] | None = Field(None, description="The judge's verdict; None when not judged")
    latency_ms: dict[str, float] | None = None
    tokens: CellTokens | None = None
    evidence: EvidenceRanksOut | None = Field(
        None, description="Where the evidence lies and at what rank it came; absent in cells recorded before it was"
    )


class FailedCellOut(BaseModel):
    """``model.CellResult`` of a cell whose question failed: the error, no answer."""

    question_id: str
    config_key: str
    status: Literal["failed"]
    error: str | None = None
    metrics: dict[str, MetricValue] = Field(default_factory=dict)
    retrieved: list[RetrievedChunkOut] = Field(default_factory=list)
    # Present (None) in the scores view.
    latency_ms: dict[str, float] | None = None
    tokens: CellTokens | None = None


CellOut = Annotated[OkCellOut | FailedCellOut, Field(discriminator="status")]


class ExperimentProgressOut(BaseModel):
    cells_done: int
    cells_total: int


class BreakdownFiguresOut(BaseModel):
    """One configuration on one group of questions."""

    mean: float | None = Field(description="The primary metric's mean over the cells that measured it")
    measured: int
    failures: int = Field(description="Failed cells and scores of 0 (on a metric where higher is better)")


class DocumentBreakdownOut(BaseModel):
    id: str
    source_key: str | None
    questions: int
    configurations: dict[str, BreakdownFiguresOut]


class CategoryBreakdownOut(BaseModel):
    category: str = Field(description="'(none)' for questions without one")
    questions: int
    configurations: dict[str, BreakdownFiguresOut]


class LanguageBreakdownOut(BaseModel):
    language: str = Field(description="The detected language code of the group's documents")
    label: str = Field(description="The language in words: Persian (fa)")
    documents: int
    questions: int
    configurations: dict[str, BreakdownFiguresOut]


class BreakdownsOut(BaseModel):
    """Per document and per language (Experiments of several documents, of several languages) and per question
    category, worst first."""

    metric: str
    documents: list[DocumentBreakdownOut] | None = None
    languages: list[LanguageBreakdownOut] | None = None
    categories: list[CategoryBreakdownOut] | None = None


class ExperimentWarningOut(BaseModel):
    """A model of the grid that does not cover the language of some of the Experiment's documents."""

    kind: str = Field(description="language_not_covered")
    role: str = Field(description="corpus or boundary")
    model_id: str
    language: str
    documents: list[str] = Field(description="The documents concerned (source keys)")
    covering_models: list[str]
    configurations: list[str] = Field(
        description="The configurations built on the model: none is named best when the documents are material"
    )
    message: str
    # The language rule's evidence (Experiments planned before it record none of these).
    document_ids: list[str] = []
    total_documents: int | None = None
    documents_share: float | None = Field(None, description="Share of the Experiment's documents, 0–1")
    text_share: float | None = Field(None, description="Share of the documents' text (characters), 0–1")
    questions_share: float | None = Field(None, description="Share of the questions about those documents, 0–1")
    material: bool | None = Field(
        None, description="Whether the Decision names none of the configurations (false: it stands, with a reason)"
    )
    standing: Literal["minority", "unsure"] | None = Field(
        None, description="Why not material: too few questions, or detections too unsure"
    )


class PrunedConfigurationOut(BaseModel):
    """A configuration pruning stopped (``pruning.RuledOut``)."""

    config_key: str
    rung: int = Field(description="The rung (1-based) after which it stopped")
    questions: int = Field(description="How many questions it was scored on")
    mean: float = Field(description="Its mean on the primary metric over those questions")
    leader: str
    leader_mean: float
    difference: list[float] = Field(description="Its difference to the leader: observed, low, high")
    confidence: float = Field(description="The corrected (per-comparison) confidence of that interval")


class PruningOut(BaseModel):
    """What pruning did (``pruning.PruningRecord``): the options, the rule, the rungs and the stopped configurations."""

    options: dict[str, Any]
    metric: str
    rule: str
    order: list[str] = Field(description="The questions in the seeded order: rung r scores the first sizes[r]")
    sizes: list[int]
    rungs: list[dict[str, Any]]
    pruned: list[PrunedConfigurationOut]


class DecisionOut(BaseModel):
    """A Decision (``Decision.to_dict`` with its verdict): the main fields typed, every other one as stored."""

    model_config = ConfigDict(extra="allow")

    metric: str
    status: str = Field(description="winner | tie_broken_by_cost | cannot_tell | insufficient_data")
    best: str | None = Field(description="The configuration to use, when the data supports naming one")
    leader: str | None
    verdict: str = Field(description="What to show first")
    reasons: list[str]
    n_questions: int
    budget_matched: dict[str, Any] | None = Field(None, description="The ranking at an equal context budget")
    frontier: list[dict[str, Any]] = Field(
        default_factory=list, description="The configurations best for some context budget, cheapest first"
    )


class ExperimentOut(BaseModel):
    """An Experiment (``model.Experiment``): plan, provenance, cells, aggregates and the Decision."""

    id: str
    name: str | None
    status: str = Field(description="running, completed, failed, interrupted or cancelled")
    error: dict[str, Any] | None
    created_at: str | None = Field(description="UTC, ISO 8601 to the second")
    started_at: str | None
    finished_at: str | None
    document: ExperimentDocumentOut
    corpus: ExperimentCorpusOut | None = Field(None, description="A corpus Experiment's corpus and documents")
    config: BenchmarkConfigOut
    provenance: dict[str, Any] = Field(description="Models, parameters, library versions and seeds")
    configurations: list[ConfigurationOut]
    questions: list[ExperimentQuestionOut]
    progress: ExperimentProgressOut
    cells: list[CellOut]
    aggregate: dict[str, Any] = Field(description="Per configuration key: metric summaries, failures, latency, cost")
    decision: dict[str, Any] | None = Field(
        description="The Decision on the primary metric, once completed; ``verdict`` is what to show first"
    )
    cost: dict[str, Any]
    warnings: list[ExperimentWarningOut] = Field(
        default_factory=list, description="Models that do not cover a document's language (results not meaningful)"
    )
    breakdowns: BreakdownsOut | None = Field(
        None, description="Where each configuration fails: documents, languages, categories"
    )
    pruning: PruningOut | None = Field(
        None, description="A pruned run: the configurations stopped, at which rung, on how many questions, and why"
    )


class ChartOut(BaseModel):
    """A chart of an Experiment (``GET /benchmarks/{id}/charts/{name}``, an SVG drawn by the reports' chart code)."""

    name: str = Field(description="``{kind}-{metric}``, e.g. bars-recall")
    kind: Literal["bars", "curve", "frontier", "heatmap"] = Field(
        description="bars: mean per configuration with its 95% interval; curve: the metric against context tokens "
        "per configuration; frontier: every configuration's metric against its median context tokens, with the "
        "configurations best for some budget joined by a step line; heatmap: the metric per question and "
        "configuration"
    )
    metric: str
    label: str = Field(description="The metric as a person reads it")
    url: str
